/**
 * RecordBatch v2 (magic 2), the only record format we read or write. Grammar (big-endian):
 *
 *   RecordBatch => baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8 (2),
 *                  crc uint32 (CRC-32C of attributes..end), attributes int16,
 *                  lastOffsetDelta int32,
 *                  baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
 *                  baseSequence int32, recordsCount int32,
 *                  records (compressed as one block if codec ≠ 0)
 *   Record      => length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
 *                  keyLength varint, key, valueLength varint, value, headersCount varint,
 *                  [headerKeyLength varint, headerKey, headerValueLength varint, headerValue]
 *
 * Record varints are zig-zag. Decoding validates framing, magic, CRC and record lengths and throws
 * CorruptBatchError; it never judges record contents (that is the broker's job).
 */
import { crc32c } from '@node-rs/crc32';
import { Compression, decompress, gzip } from './compression.js';
import { KafkaDecodeError, Reader } from './reader.js';
import { Writer } from './writer.js';

export class CorruptBatchError extends Error {
  override name = 'CorruptBatchError';
}

export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer | null;
}

export interface KafkaRecord {
  readonly attributes: number;
  readonly timestampDelta: number;
  readonly offsetDelta: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
}

export interface RecordBatch {
  readonly baseOffset: number;
  readonly partitionLeaderEpoch: number;
  readonly magic: number;
  readonly crc: number;
  readonly attributes: number;
  readonly lastOffsetDelta: number;
  readonly baseTimestamp: number;
  readonly maxTimestamp: number;
  readonly producerId: number;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly records: readonly KafkaRecord[];
}

const HEADER_BYTES = 61;
const CRC_FROM = 21;

/** Splits a Produce `records` field into whole batches (8-byte offset + 4-byte length framing). */
export function splitBatches(records: Buffer): Buffer[] {
  const batches: Buffer[] = [];
  let at = 0;
  // Bounded by the buffer: each turn advances by at least the 12-byte prefix.
  while (at < records.length) {
    if (records.length - at < 12) throw new CorruptBatchError('truncated batch header');
    const length = records.readInt32BE(at + 8);
    if (length < HEADER_BYTES - 12 || at + 12 + length > records.length) {
      throw new CorruptBatchError(`batch length ${length} out of range`);
    }
    batches.push(records.subarray(at, at + 12 + length));
    at += 12 + length;
  }
  return batches;
}

/** Decodes one whole batch; `outputBytesMax` bounds its decompressed records. */
export function decodeRecordBatch(batch: Buffer, outputBytesMax: number): RecordBatch {
  if (batch.length < HEADER_BYTES) throw new CorruptBatchError('batch shorter than its header');
  const magic = batch.readInt8(16);
  if (magic !== 2) throw new CorruptBatchError(`magic ${magic}, only 2 is supported`);
  const crc = batch.readUInt32BE(17);
  if (crc32c(batch.subarray(CRC_FROM)) >>> 0 !== crc) throw new CorruptBatchError('CRC mismatch');
  const r = new Reader(batch);
  const head = {
    baseOffset: r.int64(),
    batchLength: r.int32(),
    partitionLeaderEpoch: r.int32(),
    magic: r.int8(),
    crc: r.uint32(),
    attributes: r.int16(),
    lastOffsetDelta: r.int32(),
    baseTimestamp: r.int64(),
    maxTimestamp: r.int64(),
    producerId: r.int64(),
    producerEpoch: r.int16(),
    baseSequence: r.int32(),
  };
  const count = r.int32();
  const codec = head.attributes & 0x07;
  const body = codec === Compression.none
    ? batch.subarray(HEADER_BYTES)
    : decompress(codec, batch.subarray(HEADER_BYTES), outputBytesMax);
  const { batchLength: _, ...rest } = head;
  return { ...rest, records: decodeRecords(body, count) };
}

function decodeRecords(body: Buffer, count: number): KafkaRecord[] {
  // Each record takes at least 7 bytes, so a larger count is corrupt; this bounds the loop.
  if (count < 0 || count * 7 > body.length) throw new CorruptBatchError(`record count ${count}`);
  const reader = new Reader(body);
  const records: KafkaRecord[] = [];
  try {
    for (let i = 0; i < count; i++) records.push(decodeRecord(reader));
  } catch (error) {
    if (error instanceof KafkaDecodeError) throw new CorruptBatchError(error.message);
    throw error;
  }
  if (reader.remaining !== 0) {
    throw new CorruptBatchError(`${reader.remaining} bytes after records`);
  }
  return records;
}

function decodeRecord(reader: Reader): KafkaRecord {
  const length = reader.varint();
  const end = reader.offset + length;
  if (length < 0 || end > reader.buffer.length) throw new CorruptBatchError('record length');
  const attributes = reader.int8();
  const timestampDelta = reader.varint();
  const offsetDelta = reader.varint();
  const key = varBytes(reader);
  const value = varBytes(reader);
  const headerCount = reader.varint();
  if (headerCount < 0 || headerCount > end - reader.offset) throw new CorruptBatchError('headers');
  const headers: RecordHeader[] = [];
  for (let i = 0; i < headerCount; i++) {
    const hkey = varBytes(reader);
    if (hkey === null) throw new CorruptBatchError('null header key');
    headers.push({ key: hkey.toString('utf8'), value: varBytes(reader) });
  }
  if (reader.offset !== end) throw new CorruptBatchError('record length does not match its fields');
  return { attributes, timestampDelta, offsetDelta, key, value, headers };
}

function varBytes(reader: Reader): Buffer | null {
  const length = reader.varint();
  return length < 0 ? null : reader.raw(length);
}

export interface RecordToEncode {
  readonly offsetDelta: number;
  readonly timestampDelta: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: readonly RecordHeader[];
}

export interface BatchToEncode {
  readonly baseOffset: number;
  readonly baseTimestamp: number;
  readonly maxTimestamp: number;
  readonly records: readonly RecordToEncode[];
  readonly compression?: typeof Compression.none | typeof Compression.gzip;
  readonly producerId?: number;
  readonly producerEpoch?: number;
  readonly baseSequence?: number;
  readonly partitionLeaderEpoch?: number;
}

/** Encodes one batch (plain or gzip) with a correct CRC-32C. */
export function encodeRecordBatch(batch: BatchToEncode): Buffer {
  const records = encodeRecords(batch.records);
  const compression = batch.compression ?? Compression.none;
  const body = compression === Compression.gzip ? gzip(records) : records;
  const last = batch.records.at(-1)?.offsetDelta ?? 0;
  const w = new Writer(HEADER_BYTES + body.length);
  w.int64(batch.baseOffset).int32(HEADER_BYTES - 12 + body.length);
  w.int32(batch.partitionLeaderEpoch ?? 0).int8(2).uint32(0);
  w.int16(compression).int32(last).int64(batch.baseTimestamp).int64(batch.maxTimestamp);
  w.int64(batch.producerId ?? -1).int16(batch.producerEpoch ?? -1).int32(batch.baseSequence ?? -1);
  w.int32(batch.records.length).raw(body);
  const out = w.toBuffer();
  out.writeUInt32BE(crc32c(out.subarray(CRC_FROM)) >>> 0, 17);
  return out;
}

function encodeRecords(records: readonly RecordToEncode[]): Buffer {
  const w = new Writer(64 * records.length + 64);
  for (const record of records) {
    const headers = record.headers ?? [];
    const headerBytes = headers.map((h) => [Buffer.from(h.key, 'utf8'), h.value] as const);
    let length = 1 + varintBytes(record.timestampDelta) + varintBytes(record.offsetDelta);
    length += sizedBytes(record.key) + sizedBytes(record.value) + varintBytes(headers.length);
    for (const [k, v] of headerBytes) length += sizedBytes(k) + sizedBytes(v);
    w.varint(length).int8(0).varint(record.timestampDelta).varint(record.offsetDelta);
    writeVarBytes(w, record.key);
    writeVarBytes(w, record.value);
    w.varint(headers.length);
    for (const [k, v] of headerBytes) {
      writeVarBytes(w, k);
      writeVarBytes(w, v);
    }
  }
  return w.view();
}

function writeVarBytes(w: Writer, b: Buffer | null): void {
  if (b === null) w.varint(-1);
  else w.varint(b.length).raw(b);
}

function sizedBytes(b: Buffer | null): number {
  return b === null ? 1 : varintBytes(b.length) + b.length;
}

/** Bytes of a zig-zag varint. */
function varintBytes(v: number): number {
  let zz = v >= 0 ? v * 2 : -v * 2 - 1;
  let bytes = 1;
  while (zz >= 0x80) {
    zz = Math.floor(zz / 0x80);
    bytes++;
  }
  return bytes;
}
