/**
 * A lean reader of the Arrow IPC files segments are (layout.ts): it parses the file footer and
 * message headers (flatbuffers) itself and reads, with one pread each, only the buffers of the
 * fields a query asks for, decompressing just those. apache-arrow's reader builds a Vector per
 * dictionary and decodes the schema through generic machinery: that was most of a cold scan's
 * time per segment (about 1 ms a segment before one value was read). A file's footer and batch
 * header are parsed once per thread (`layouts`): reading another column of a segment, or its
 * times, opens a file whose layout is known.
 *
 * It knows the types the segment layout uses (Int, FloatingPoint, Timestamp, Bool, Utf8, Binary,
 * FixedSizeBinary, List, Null, dictionary-encoded fields) and ZSTD, LZ4_FRAME or uncompressed
 * bodies; for anything else it returns null and the caller falls back to apache-arrow.
 * The layout (footer, schema, batch headers) is parsed in ipc-layout.ts.
 */
import fs from 'node:fs';
import { zstdDecompress, zstdDecompressColumn } from './arrow.js';
import { PACKED_BITS_MAX, unpackCodes } from './bitpack.js';
import { blockHolds, candidateBlocks, parseBlocks } from './dict-blocks.js';
import { decompressFrame } from './lz4-frame.js';
import { CODES_BITPACKED, META_BITS, META_BLOCKS, META_CODES, META_ROLE } from './layout.js';
import {
  TYPE_BINARY, TYPE_FIXED_SIZE_BINARY, TYPE_FIXED_SIZE_LIST, TYPE_FLOAT, TYPE_BOOL, TYPE_INT, TYPE_LIST, TYPE_NULL, TYPE_TIMESTAMP, TYPE_UTF8,
  dictionaryHeader, fileIdentity, keepLayout, keptLayout, parseLayout,
  type BatchHeader, type FieldInfo, type Layout, type ReadAt, type TypeInfo,
} from './ipc-layout.js';

/** What apache-arrow's Data offers that the segment decoders read: a field's values, unpacked. */
export interface FieldData {
  readonly length: number;
  readonly offset: number;
  readonly nullCount: number;
  readonly nullBitmap: Uint8Array | undefined;
  readonly values: ArrayBufferView;
  readonly valueOffsets: Int32Array | undefined;
  readonly children: FieldData[];
  readonly dictionary?: { readonly data: readonly FieldData[] } | undefined;
  /** FixedSizeBinary: bytes a value (`values` holds length × byteWidth bytes). */
  readonly byteWidth?: number;
}

/** An open segment file: its schema and the place of every buffer, nothing read yet. */
export class IpcFile {
  readonly fields: readonly FieldInfo[];
  readonly metadata: ReadonlyMap<string, string>;
  readonly rows: number;
  private readonly batch: BatchHeader;

  private constructor(private readonly fd: number, private readonly layout: Layout) {
    this.fields = layout.fields;
    this.metadata = layout.metadata;
    this.batch = layout.batch;
    this.rows = layout.batch.length;
  }

  /** Opens `file`, or returns null when its types or layout are outside what this reader knows. */
  static open(file: string): IpcFile | null {
    const fd = fs.openSync(file, 'r');
    try {
      const stat = fs.fstatSync(fd);
      const identity = fileIdentity(stat);
      let known = keptLayout(file, identity);
      if (known === undefined) {
        known = { layout: parseLayout(fileReader(fd), stat.size) };
        keepLayout(file, identity, known.layout);
      }
      if (known.layout === null) {
        fs.closeSync(fd);
        return null;
      }
      return new IpcFile(fd, known.layout);
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  close(): void {
    fs.closeSync(this.fd);
  }

  /**
   * The values of field `index` (children and dictionary included), read and decompressed.
   * `kept`: its values are kept as read (a segment column's scaled integers), as codes are.
   */
  read(index: number, kept = false): FieldData {
    const field = this.fields[index];
    if (field.metadata.get(META_CODES) === CODES_BITPACKED) return this.readPacked(index);
    let dictionary: FieldData | undefined;
    if (field.dictionary !== null) dictionary = this.readDictionary(field.dictionary.id, field);
    const cursor = { node: this.layout.firstNode[index], buffer: this.layout.firstBuffer[index] };
    const data = this.readField(this.batch, field, cursor, field.dictionary?.index ?? null, kept);
    return dictionary === undefined ? data : { ...data, dictionary: { data: [dictionary] } };
  }

  /** Entries in the dictionary of field `index` (from its batch header; nothing decompressed), or null without one. */
  dictionaryLength(index: number): number | null {
    const field = this.fields[index];
    return field.dictionary === null ? null : this.dictionaryHeader(field.dictionary.id, field).length;
  }

  /**
   * Whether the blocked dictionary (dict-blocks.ts) of field `index` holds one of `keys` (UTF-8
   * without zero bytes), decoding only the frames whose range may hold them: null when the
   * field's dictionary is not blocked or not as its metadata says (the caller reads it whole).
   */
  dictionaryHoldsAny(index: number, keys: readonly Uint8Array[]): boolean | null {
    const field = this.fields[index];
    const meta = field.metadata.get(META_BLOCKS);
    if (meta === undefined || field.dictionary === null || field.type.kind !== TYPE_FIXED_SIZE_BINARY) return null;
    const header = this.dictionaryHeader(field.dictionary.id, field);
    const width = field.type.precision;
    const count = header.length;
    const blocks = parseBlocks(meta, width, count);
    // Buffer 0 of the dictionary batch is the validity, 1 the values: 8 bytes of length, then the frames.
    const offset = header.buffers[2];
    const length = header.buffers[3];
    if (blocks === null || header.codec !== 'zstd' || keys.some((key) => key.includes(0))) return null;
    if (blocks.sizes.reduce((sum, size) => sum + size, 0) !== length - 8) return null;
    const prefix = readAt(this.fd, header.bodyOffset + offset, 8);
    if (new DataView(prefix.buffer).getInt32(4, true) === -1) return null; // stored raw
    const starts = [8];
    for (const size of blocks.sizes) starts.push(starts[starts.length - 1] + size);
    const decoded = new Map<number, Uint8Array>();
    const padded = new Uint8Array(width);
    for (const key of keys) {
      if (key.byteLength > width) continue;
      padded.fill(0);
      padded.set(key);
      for (const block of candidateBlocks(blocks, padded, width)) {
        let entries = decoded.get(block);
        if (entries === undefined) {
          const frame = readInto(scratchOf(blocks.sizes[block]), this.fd, header.bodyOffset + offset + starts[block], blocks.sizes[block]);
          entries = zstdDecompress(frame);
          decoded.set(block, entries);
        }
        const n = Math.min(blocks.entries, count - block * blocks.entries);
        if (entries.byteLength < n * width) throw new Error(`Arrow file: dictionary frame ${block} of ${field.name} is short`);
        if (blockHolds(entries, width, n, padded)) return true;
      }
    }
    return false;
  }

  /**
   * A main field whose codes are bit-packed in the `:codes` field after it (layout.ts), read as a
   * dictionary field is: its dictionary, and the codes unpacked into the field's index type, valid
   * where the codes field is.
   */
  private readPacked(index: number): FieldData {
    const main = this.fields[index];
    const codes = this.fields[index + 1] as FieldInfo | undefined;
    const bits = codes?.type.precision ?? 0;
    if (
      main.dictionary === null || codes === undefined || codes.type.kind !== TYPE_FIXED_SIZE_LIST ||
      codes.metadata.get(META_ROLE) !== 'codes' || codes.metadata.get(META_BITS) !== String(bits) ||
      bits < 1 || bits > PACKED_BITS_MAX || bits > main.dictionary.index.bitWidth - 1
    ) throw new Error(`Arrow file: field ${main.name} has no bit-packed codes after it`);
    const dictionary = this.readDictionary(main.dictionary.id, main);
    const batch = this.batch;
    const node = 2 * this.layout.firstNode[index + 1];
    const rows = batch.nodes[node];
    const nullCount = batch.nodes[node + 1];
    if (rows !== this.rows || batch.nodes[node + 2] !== rows * bits) throw new Error(`Arrow file: the codes of ${main.name} are not ${bits} bits a row`);
    const buffer = this.layout.firstBuffer[index + 1];
    const validity = this.buffer(batch, buffer, false);
    const out = main.dictionary.index.bitWidth === 8 ? new Int8Array(rows)
      : main.dictionary.index.bitWidth === 16 ? new Int16Array(rows) : new Int32Array(rows);
    unpackCodes(this.packedBuffer(batch, buffer + 2, rows * bits), bits, out);
    const bitmap = nullCount === 0 || validity.byteLength === 0 ? undefined : validity;
    return { ...fieldData(rows, nullCount, bitmap, out, undefined, []), dictionary: { data: [dictionary] } };
  }

  /**
   * Buffer `index` of a batch holding at least `bits` bits, as whole 4-byte words: a view of the
   * thread's scratch buffer (valid until the next read) when stored raw, as packed codes are.
   */
  private packedBuffer(batch: BatchHeader, index: number, bits: number): Uint8Array {
    const offset = batch.buffers[2 * index];
    const length = batch.buffers[2 * index + 1];
    const words = 4 * Math.ceil(bits / 32);
    let bytes: Uint8Array;
    if (batch.codec === 'none') bytes = readInto(scratchOf(length), this.fd, batch.bodyOffset + offset, length);
    else {
      if (length < 8) throw new Error('Arrow file: packed codes buffer too short');
      const raw = readInto(scratchOf(length), this.fd, batch.bodyOffset + offset, length);
      const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      const stored = view.getInt32(4, true) === -1 && view.getUint32(0, true) === 0xffffffff;
      bytes = stored ? raw.subarray(8) : zstdDecompress(Buffer.from(raw.buffer, raw.byteOffset + 8, raw.byteLength - 8));
    }
    if (bytes.byteLength * 8 < bits) throw new Error('Arrow file: packed codes buffer too short');
    if (bytes.byteLength >= words && bytes.byteOffset % 4 === 0) return bytes.subarray(0, words);
    const copy = new Uint8Array(words);
    copy.set(bytes.subarray(0, Math.min(words, bytes.byteLength)));
    return copy;
  }

  private readDictionary(id: number, field: FieldInfo): FieldData {
    const header = this.dictionaryHeader(id, field);
    return this.readField(header, { ...field, dictionary: null }, { node: 0, buffer: 0 }, null, true);
  }

  private dictionaryHeader(id: number, field: FieldInfo): BatchHeader {
    return dictionaryHeader(this.layout, fileReader(this.fd), id, field.name);
  }

  /**
   * `index`: the field's dictionary index type (its values are then codes); `keptValues`: the
   * field is a dictionary's values, or values a segment column keeps as read (scaled integers).
   * Codes, dictionary values and scaled integers are what a segment column keeps as read
   * (decode-column.ts), so only they are decoded by the native binding; buffers that are
   * converted (Float64 numbers, times, booleans, validity, lists) use the WebAssembly decoder,
   * whose output V8 frees as soon as it is garbage (arrow.ts zstdDecompressColumn).
   */
  private readField(
    batch: BatchHeader, field: FieldInfo, cursor: { node: number; buffer: number }, index: TypeInfo | null,
    keptValues = false,
  ): FieldData {
    const at = 2 * cursor.node++;
    const node = { length: batch.nodes[at], nullCount: batch.nodes[at + 1] };
    const type = index ?? field.type;
    const kept = index !== null || keptValues;
    const take = (native = false) => this.buffer(batch, cursor.buffer++, native && kept);
    if (type.kind === TYPE_NULL && index === null) {
      return fieldData(node.length, node.nullCount, undefined, new Uint8Array(0), undefined, []);
    }
    const validity = take();
    const bitmap = node.nullCount === 0 || validity.byteLength === 0 ? undefined : validity;
    if (type.kind === TYPE_UTF8 || type.kind === TYPE_BINARY) {
      const offsets = int32s(take(true), node.length + 1);
      return fieldData(node.length, node.nullCount, bitmap, take(true), offsets, []);
    }
    if (type.kind === TYPE_LIST) {
      const offsets = int32s(take(), node.length + 1);
      const child = this.readField(batch, field.children[0], cursor, null);
      return fieldData(node.length, node.nullCount, bitmap, new Uint8Array(0), offsets, [child]);
    }
    if (type.kind === TYPE_FIXED_SIZE_BINARY) {
      const values = take(true);
      if (values.byteLength < node.length * type.precision) throw new Error('Arrow file: values buffer too short');
      return { ...fieldData(node.length, node.nullCount, bitmap, values, undefined, []), byteWidth: type.precision };
    }
    return fieldData(node.length, node.nullCount, bitmap, typedValues(type, take(true), node.length), undefined, []);
  }

  /**
   * Buffer `index` of a batch, decompressed (a fresh, 8-aligned copy, or a view of one); by the
   * native zstd binding when `native` (see readField).
   */
  private buffer(batch: BatchHeader, index: number, native: boolean): Uint8Array {
    const offset = batch.buffers[2 * index];
    const length = batch.buffers[2 * index + 1];
    if (length === 0) return new Uint8Array(0);
    if (batch.codec === 'none') return readAt(this.fd, batch.bodyOffset + offset, length);
    // Compressed bytes are decompressed at once, so they are read into this thread's scratch
    // buffer: a scan reads five or six a segment, and a fresh array for each was zero-filled,
    // faulted in page by page and left to the collector.
    const raw = readInto(scratchOf(length), this.fd, batch.bodyOffset + offset, length);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const uncompressed = view.getUint32(0, true) + view.getInt32(4, true) * 4294967296;
    // Only -1 is read: apache-arrow 21's writer puts the compressed length where the format has the
    // uncompressed one, and both frame formats carry their own.
    if (uncompressed === -1) return raw.slice(8);
    const frame = Buffer.from(raw.buffer, raw.byteOffset + 8, raw.byteLength - 8);
    const out = batch.codec === 'zstd' ? (native ? zstdDecompressColumn(frame) : zstdDecompress(frame)) : decompressFrame(frame);
    return out.byteOffset % 8 === 0 ? out : new Uint8Array(out);
  }
}

function fieldData(length: number, nullCount: number, nullBitmap: Uint8Array | undefined, values: ArrayBufferView,
  valueOffsets: Int32Array | undefined, children: FieldData[]): FieldData {
  return { length, offset: 0, nullCount, nullBitmap, values, valueOffsets, children, dictionary: undefined };
}

/** Reads at a position of the open file `fd`, synchronously. */
function fileReader(fd: number): ReadAt {
  return (position, length) => readAt(fd, position, length);
}

function readAt(fd: number, position: number, length: number): Uint8Array {
  return readInto(new Uint8Array(length), fd, position, length);
}

/** This thread's buffer for compressed bytes (IpcFile.buffer): grown, never shrunk. */
let scratch = new Uint8Array(0);

/** The first `length` bytes of the scratch buffer, grown to hold them: valid until the next call. */
function scratchOf(length: number): Uint8Array {
  if (scratch.byteLength < length) scratch = new Uint8Array(Math.max(length, 2 * scratch.byteLength));
  return scratch.subarray(0, length);
}

/** Reads `length` bytes at `position` of `fd` into `bytes` (exactly that long), synchronously. */
function readInto(bytes: Uint8Array, fd: number, position: number, length: number): Uint8Array {
  let read = 0;
  while (read < length) {
    const count = fs.readSync(fd, bytes, read, length - read, position + read);
    if (count === 0) throw new Error('Arrow file: truncated');
    read += count;
  }
  return bytes;
}

function int32s(bytes: Uint8Array, count: number): Int32Array {
  if (bytes.byteLength < count * 4) throw new Error('Arrow file: offsets buffer too short');
  return new Int32Array(bytes.buffer, bytes.byteOffset, count);
}

function typedValues(type: TypeInfo, bytes: Uint8Array, length: number): ArrayBufferView {
  const { buffer, byteOffset } = bytes;
  const need = (width: number) => {
    if (bytes.byteLength < width * length) throw new Error('Arrow file: values buffer too short');
  };
  switch (type.kind) {
    case TYPE_BOOL:
      return bytes;
    case TYPE_INT:
      need(type.bitWidth / 8);
      if (type.bitWidth === 8) return type.signed ? new Int8Array(buffer, byteOffset, length) : new Uint8Array(buffer, byteOffset, length);
      if (type.bitWidth === 16) return type.signed ? new Int16Array(buffer, byteOffset, length) : new Uint16Array(buffer, byteOffset, length);
      if (type.bitWidth === 32) return type.signed ? new Int32Array(buffer, byteOffset, length) : new Uint32Array(buffer, byteOffset, length);
      return type.signed ? new BigInt64Array(buffer, byteOffset, length) : new BigUint64Array(buffer, byteOffset, length);
    case TYPE_FLOAT:
      need(type.precision === 2 ? 8 : 4);
      return type.precision === 2 ? new Float64Array(buffer, byteOffset, length) : new Float32Array(buffer, byteOffset, length);
    case TYPE_TIMESTAMP:
      need(8);
      return new BigInt64Array(buffer, byteOffset, length);
    default:
      throw new Error(`Arrow file: unexpected type ${type.kind}`);
  }
}

