/**
 * Bit-packed dictionary codes (bitpack.ts, layout.ts version 3): every width round-trips, a
 * segment packs a column's codes exactly when that is no larger than their ZSTD frame, stores
 * them raw, and reads the same through IpcFile and apache-arrow, on seeded random columns with
 * nulls, missing rows and mixed types.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { presetCompression, zstdCompress } from '../../../../../engine/storage/segment/arrow.js';
import { bitsFor, packCodes, packedBytes, unpackCodes } from '../../../../../engine/storage/segment/bitpack.js';
import { parseLayout } from '../../../../../engine/storage/segment/ipc-layout.js';
import { readSegment, readSegmentArrow } from '../../../../../engine/storage/segment/reader.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';
import { mulberry32 } from '../../../../helpers/random.js';
import { buildChunk, viewChunk, type TestRow, type TestValue } from '../../../../helpers/test-chunk.js';

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bitpack-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('codes of every width from 1 to 31 bits unpack as they were packed, at any row count', async (t) => {
  const random = mulberry32(7);
  for (let bits = 1; bits <= 31; bits++) {
    for (const rows of [1, 31, 32, 33, 64, 1_000 + bits]) {
      const codes = bits <= 7 ? new Int8Array(rows) : bits <= 15 ? new Int16Array(rows) : new Int32Array(rows);
      for (let row = 0; row < rows; row++) codes[row] = row % 5 === 0 ? 2 ** bits - 1 : Math.floor(random() * 2 ** bits);
      const packed = packCodes(codes, bits);
      t.equal(packed.byteLength, packedBytes(rows, bits));
      t.equal(packed.byteLength % 8, 0, 'whole 8-byte words');
      const out = new (codes.constructor as Int32ArrayConstructor)(rows);
      unpackCodes(packed, bits, out);
      if (!out.every((code, row) => code === codes[row])) t.fail(`${bits} bits, ${rows} rows`);
    }
  }
  t.same([bitsFor(1), bitsFor(2), bitsFor(3), bitsFor(128), bitsFor(129), bitsFor(1_000), bitsFor(2 ** 20 + 1)], [1, 1, 2, 7, 8, 10, 21]);
});

/** Per string field of a segment: whether its codes are bit-packed, and how they are stored. */
function storedCodes(file: string): Map<string, { packed: boolean; raw: boolean | null; bits: number | null }> {
  const bytes = fs.readFileSync(file);
  const layout = parseLayout((position, length) => bytes.subarray(position, position + length), bytes.byteLength)!;
  const result = new Map<string, { packed: boolean; raw: boolean | null; bits: number | null }>();
  layout.fields.forEach((field, index) => {
    if (field.dictionary === null || field.metadata.get('tally.role') !== 'main') return;
    const packed = field.metadata.get('tally.codes') === 'bitpacked';
    if (!packed) return void result.set(field.name, { packed, raw: null, bits: null });
    const codes = layout.fields[index + 1];
    // The codes field's buffers: list validity, bits validity, bits.
    const buffer = layout.firstBuffer[index + 1] + 2;
    const at = layout.batch.bodyOffset + layout.batch.buffers[2 * buffer];
    const prefix = bytes.readBigInt64LE(at);
    result.set(field.name, { packed, raw: prefix === -1n, bits: Number(codes.metadata.get('tally.bits')) });
  });
  return result;
}

t.test('a segment bit-packs the codes of a column exactly when that is no larger than their ZSTD frame', async (t) => {
  const rows = 20_000;
  const random = mulberry32(11);
  const data: TestRow[] = Array.from({ length: rows }, (_, row) => ({
    ts: Date.UTC(2026, 0, 1) + row,
    props: {
      // 1,000 paths, skewed as bench/scale's: ZSTD finds less than bit-packing saves.
      path: `/p/${Math.floor(1_000 * random() ** 3)}`,
      // one value in 64 rows: long runs ZSTD shrinks to nearly nothing.
      runs: `r${Math.floor(row / 4_096)}`,
      // ids, about one a row: 15 bits packed against ZSTD's byte-wise coding of random codes.
      id: `u${Math.floor(random() * rows)}`,
      // five values, mostly the first: ZSTD's entropy coder beats 3 bits a row.
      device: ['desktop', 'mobile', 'tablet', 'tv', 'console'][Math.floor(5 * random() ** 4)],
    },
  }));
  const file = path.join(tempDir(), 'segment.arrow');
  const chunk = buildChunk(data);
  writeSegment(file, chunk, { path: 'string', runs: 'string', id: 'string', device: 'string' });
  const stored = storedCodes(file);
  for (const name of ['path', 'runs', 'id', 'device']) {
    // The rule, recomputed from the column as written: packed iff no larger than the frame.
    const column = readSegment(file, [name]).columns.get(name)!;
    const codes = column.str!;
    const entries = column.dict!.length;
    const bytes = new Uint8Array(codes.buffer, codes.byteOffset, codes.byteLength);
    const packs = packedBytes(rows, bitsFor(entries)) <= zstdCompress(bytes).byteLength;
    t.equal(stored.get(name)!.packed, packs, `${name}: packed as the rule says`);
    if (packs) t.same(stored.get(name), { packed: true, raw: true, bits: bitsFor(entries) }, `${name}: stored raw`);
  }
  t.same([stored.get('path')!.packed, stored.get('runs')!.packed, stored.get('id')!.packed, stored.get('device')!.packed],
    [true, false, true, false], 'this data meets both cases');
  t.same(viewChunk(readSegment(file)), viewChunk(chunk));
  t.same(viewChunk(readSegmentArrow(file)), viewChunk(chunk));
});

t.test('seeded random columns (nulls, missing rows, mixed types, lists) read the same by both readers as written', async (t) => {
  for (let seed = 1; seed <= 12; seed++) {
    const random = mulberry32(seed);
    const rows = 1 + Math.floor(random() * 3_000);
    const sizes = [1, 2, 3, 127, 128, 129, 300, 40_000].map((size) => Math.min(size, 1 + Math.floor(random() * 2 * size)));
    const data: TestRow[] = Array.from({ length: rows }, (_, row) => {
      const props: Record<string, TestValue> = {};
      sizes.forEach((size, column) => {
        const draw = random();
        if (draw < 0.1) return; // missing
        if (draw < 0.15) props[`c${column}`] = null;
        else if (draw < 0.2) props[`c${column}`] = draw * 100;
        else if (draw < 0.22) props[`c${column}`] = [`x${column}`, null];
        else if (draw < 0.24) props[`c${column}`] = draw < 0.23;
        else props[`c${column}`] = `v${Math.floor(random() * size)}`;
      });
      return { ts: Date.UTC(2026, 0, 1) + row * 13, props };
    });
    const schema = Object.fromEntries(sizes.map((_, column) => [`c${column}`, 'string' as const]));
    const file = path.join(tempDir(), `segment-${seed}.arrow`);
    const chunk = buildChunk(data);
    writeSegment(file, chunk, schema);
    t.same(viewChunk(readSegment(file)), viewChunk(chunk), `seed ${seed}: IpcFile`);
    t.same(viewChunk(readSegmentArrow(file)), viewChunk(chunk), `seed ${seed}: apache-arrow`);
    t.same(viewChunk(readSegment(file, ['c2', 'c6'])), viewChunk(readSegmentArrow(file, ['c2', 'c6'])), `seed ${seed}: projected`);
  }
});

t.test('a preset frame is given once, for exactly its bytes: memory reused later is compressed as it is', async (t) => {
  const codec = compressionRegistry.get(CompressionType.ZSTD)!;
  const bytes = new Uint8Array(4_096).fill(7);
  presetCompression(bytes, null);
  t.equal(codec.encode!(bytes.subarray(0, 100)).byteLength < 100, true, 'other bytes of the same memory: compressed');
  t.equal(codec.encode!(bytes), bytes, 'the preset bytes: stored raw');
  const again = codec.encode!(bytes);
  t.not(again, bytes, 'taken once');
  t.ok(again.byteLength < bytes.byteLength, 'then compressed as any buffer');
});
