import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32c } from '@node-rs/crc32';
import { pack, unpack } from 'msgpackr';
import t from 'tap';
import type { SchemaType } from '../../../../../engine/storage/chunk.js';
import { zstdCompress, zstdDecompress } from '../../../../../engine/storage/segment/arrow.js';
import { warmSidecarDecoding } from '../../../../../engine/storage/segment/footer.js';
import { HyperLogLog } from '../../../../../engine/sketch/hyperloglog.js';
import { readFooter, readSegment, verifySegment } from '../../../../../engine/storage/segment/reader.js';
import { buildChunk, viewChunk, type TestRow, type TestValue } from '../../../../helpers/test-chunk.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';

const T0 = Date.UTC(2024, 2, 5, 14, 30);

function tempFile(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tally-reader-')), 'segment.arrow');
}

function roundTrip(rows: readonly TestRow[], schema: Record<string, SchemaType>) {
  const file = tempFile();
  const chunk = buildChunk(rows);
  writeSegment(file, chunk, schema);
  return { file, chunk, read: readSegment(file) };
}

/** Every kind of value at one path, so each declared type sees every other kind as an extra. */
const EVERY_KIND: readonly TestValue[] = [
  1.5, undefined, 'héllo 😀 世界', null, true, false, 0, -0, -1e300, 'x', undefined,
  [1, null, 2.5], ['a', null, 'ü'], [true, null, false], [], [null], [null, null], '',
  Number.MAX_SAFE_INTEGER, 1700000000123,
];

t.test('round-trips every kind of value under every declared type', async (t) => {
  const types: SchemaType[] = ['num', 'string', 'bool', 'list', 'null', 'datetime', 'geo'];
  for (const type of types) {
    const rows = EVERY_KIND.map((value, index) => ({ ts: T0 + index, props: { p: value } }));
    const { chunk, read } = roundTrip(rows, { p: type });
    t.same(viewChunk(read), viewChunk(chunk), `declared ${type}`);
  }
});

t.test('keeps explicit null, missing and each type apart across many paths', async (t) => {
  const rows: TestRow[] = [];
  for (let index = 0; index < 500; index++) {
    const props: Record<string, TestValue> = {};
    if (index % 3 !== 0) props['a.b'] = index % 7 === 0 ? null : `v${index % 11}`;
    if (index % 2 === 0) props.n = index % 5 === 0 ? String(index) : index / 3;
    if (index % 4 === 1) props.flag = index % 8 === 1;
    props.geo = index % 9 === 0 ? null : [index / 10, -index / 20];
    props.only_null = null;
    rows.push({ ts: T0 + index * 1000, props });
  }
  const schema = {
    'a.b': 'string', n: 'num', flag: 'bool', geo: 'geo', only_null: 'null',
  } as const;
  const { chunk, read } = roundTrip(rows, schema);
  t.same(viewChunk(read), viewChunk(chunk));
  t.equal(read.columns.get('only_null')!.num, null);
});

t.test('materializes only the requested paths, always ts, createdAt and seq', async (t) => {
  const rows = [{ ts: T0, props: { a: 1, b: 'x', c: [true] } }];
  const file = tempFile();
  const chunk = buildChunk(rows);
  writeSegment(file, chunk, { a: 'num', b: 'string', c: 'list' });
  const read = readSegment(file, ['b', 'not-there']);
  t.same([...read.columns.keys()], ['b']);
  const full = viewChunk(chunk) as { columns: Record<string, unknown> };
  t.same(viewChunk(read), { ...full, columns: { b: full.columns.b } });
  t.same([...readSegment(file, []).columns.keys()], []);
});

t.test('round-trips timestamps before 1970 and far ahead without loss', async (t) => {
  const times = [-1, -86_400_000 * 365 * 100, 0, 2 ** 40 + 7, 8.64e15];
  const { chunk, read } = roundTrip(times.map((ts) => ({ ts, props: {} })), {});
  t.same(Array.from(read.ts), times);
  t.same(viewChunk(read), viewChunk(chunk));
});

t.test('round-trips a large chunk (200k rows) and compresses it', async (t) => {
  const rows: TestRow[] = [];
  for (let index = 0; index < 200_000; index++) {
    rows.push({
      ts: T0 + index,
      props: {
        country: ['US', 'GB', 'DE', 'FR'][index % 4],
        user: `user-${index}`,
        amount: (index % 1000) / 10,
        ok: index % 3 === 0,
        items: index % 10 === 0 ? [index, index + 1] : undefined,
      },
    });
  }
  const schema = {
    country: 'string', user: 'string', amount: 'num', ok: 'bool', items: 'list',
  } as const;
  const { file, chunk, read } = roundTrip(rows, schema);
  t.same(viewChunk(read), viewChunk(chunk));
  const stored = fs.statSync(file).size;
  const jsonBytes = rows.reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row)), 0);
  t.ok(stored < jsonBytes / 4, `file ${stored} B vs the rows' JSON ${jsonBytes} B`);
  const footer = readFooter(file);
  t.match(footer.columns.user, { present: 200_000, strMin: 'user-0', strMax: 'user-99999' });
});

t.test('detects a truncated or corrupted sidecar', async (t) => {
  const { file } = roundTrip([{ ts: T0, props: { a: 'x' } }], { a: 'string' });
  const meta = file + '.meta';
  const good = fs.readFileSync(meta);
  t.ok(verifySegment(file));
  fs.writeFileSync(meta, good.subarray(0, good.length - 3));
  t.throws(() => readFooter(file), /sidecar .* is corrupt: length mismatch/);
  t.notOk(verifySegment(file));
  const flipped = Buffer.from(good);
  flipped[flipped.length - 2] ^= 0x40;
  fs.writeFileSync(meta, flipped);
  t.throws(() => readFooter(file), /checksum mismatch/);
  fs.writeFileSync(meta, Buffer.alloc(0));
  t.throws(() => readFooter(file), /shorter than its header/);
  fs.writeFileSync(meta, good);
  t.ok(verifySegment(file));
});

/** Sketches as plain byte lists: TSM1's are Buffers over the file read, the others Uint8Arrays. */
function bytesOf(sketches: Record<string, Uint8Array>): Record<string, number[]> {
  return Object.fromEntries(Object.entries(sketches).map(([path, sketch]) => [path, [...sketch]]));
}

/** Value counts with their pair tables as plain byte lists (Buffers in TSM1, as sketches). */
function plainValues(values: unknown): unknown {
  return JSON.parse(JSON.stringify(values, (_key, value: unknown) =>
    value instanceof Uint8Array ? [...value] : (value as { type?: string })?.type === 'Buffer' ? (value as { data: number[] }).data : value));
}

/** A sidecar in an older layout (footer.ts): TSM1 (msgpack) or TSZ1 (zstd of it), whole. */
function olderSidecar(magic: 'TSM1' | 'TSZ1', payload: object): Buffer {
  const packed = pack(payload);
  const stored = magic === 'TSZ1' ? zstdCompress(packed) : packed;
  const bytes = Buffer.alloc(12 + stored.length);
  bytes.write(magic, 0, 'latin1');
  bytes.writeUInt32LE(crc32c(stored), 4);
  bytes.writeUInt32LE(stored.length, 8);
  stored.copy(bytes, 12);
  return bytes;
}

t.test('a sidecar keeps its sketches and pair tables apart: they decode when first asked, and older layouts still read', async (t) => {
  const rows: TestRow[] = Array.from({ length: 500 }, (_, index) => ({
    ts: T0 + index, props: { country: `C${index % 7}`, user: `u${index}`, amount: index / 4, ok: index % 3 === 0 },
  }));
  const { file } = roundTrip(rows, { country: 'string', user: 'string', amount: 'num', ok: 'bool' });
  const meta = file + '.meta';
  const stored = fs.readFileSync(meta);
  t.equal(stored.toString('latin1', 0, 4), 'TSZ3', 'written as TSZ3');
  // The head alone: footer, value counts, and what the sketches hold, beside them; then the pair
  // tables, then the sketches, each a frame of its own.
  const headLength = stored.readUInt32LE(12);
  const pairsLength = stored.readUInt32LE(16);
  const head = unpack(zstdDecompress(stored.subarray(20, 20 + headLength))) as Record<string, unknown>;
  t.same(Object.keys(head).sort(), ['footer', 'sketchBytes', 'values', 'version']);
  const pairs = unpack(stored.subarray(20 + headLength, 20 + headLength + pairsLength)) as Record<string, Record<string, Uint8Array>>;
  // 62 cells allowed (500 rows / 8): ok by country (14 cells), not countries or oks by 500 users.
  t.same(Object.keys(pairs), ['ok']);
  t.same(Object.keys(pairs.ok), ['country']);
  const sketchesAt = 20 + headLength + pairsLength;
  const sketches = unpack(zstdDecompress(stored.subarray(sketchesAt))) as Record<string, Uint8Array>;
  t.same(Object.keys(sketches).sort(), ['amount', 'country', 'ok', 'user']);
  t.equal(head.sketchBytes, Object.values(sketches).reduce((sum, sketch) => sum + sketch.byteLength + 64, 0));

  const read = readFooter(file);
  t.equal(read.sketchBytes, head.sketchBytes, 'sketchBytes known before the sketches are decoded');
  t.notOk(Object.keys(read).includes('sketchBytes'), 'and not one of the footer\'s own fields');
  t.notOk(Object.keys(read).includes('pairs'), 'nor the pair tables');
  t.same(bytesOf(read.pairs.ok), bytesOf(pairs.ok), 'the pair tables, read from the file when asked');
  t.not(read.pairs, read.pairs, 'each time: the footer keeps none');
  t.same(read.sketches, sketches, 'the sketches, decoded when asked');
  t.equal(read.sketches, read.sketches, 'once');
  const { sketches: _sketches, values, ...footer } = read;
  t.same(values, head.values);
  t.same(footer, head.footer);

  // The same footer from each older layout, with its sketches and values, and no pair tables.
  const tsz2Head = zstdCompress(pack(head));
  const tsz2Tail = stored.subarray(sketchesAt);
  const tsz2 = Buffer.alloc(16 + tsz2Head.length + tsz2Tail.length);
  tsz2.write('TSZ2', 0, 'latin1');
  tsz2.writeUInt32LE(tsz2.length - 12, 8);
  tsz2.writeUInt32LE(tsz2Head.length, 12);
  tsz2Head.copy(tsz2, 16);
  tsz2Tail.copy(tsz2, 16 + tsz2Head.length);
  tsz2.writeUInt32LE(crc32c(tsz2.subarray(12)), 4);
  const older = { TSZ2: tsz2, ...Object.fromEntries((['TSM1', 'TSZ1'] as const).map((magic) =>
    [magic, olderSidecar(magic, { version: 1, footer: head.footer, sketches, values: head.values })])) };
  for (const [magic, bytes] of Object.entries(older)) {
    fs.writeFileSync(meta, bytes);
    const read = readFooter(file);
    t.same(bytesOf(read.sketches), bytesOf(sketches), `${magic}: sketches`);
    t.same(plainValues(read.values), plainValues(head.values), `${magic}: values`);
    t.equal(read.sketchBytes, head.sketchBytes, `${magic}: sketchBytes`);
    t.same(read.pairs, {}, `${magic}: no pair tables`);
    t.ok(verifySegment(file), `${magic}: the segment verifies`);
  }
  // TSM1 before value counts existed.
  fs.writeFileSync(meta, olderSidecar('TSM1', { version: 1, footer: head.footer, sketches }));
  t.same(readFooter(file).values, {}, 'no values in the oldest sidecars');

  // Sketches, or pair tables, that do not decode, checksummed as if written so: the footer and
  // its value counts still read, since nothing decodes either until it is asked for.
  for (const [what, from, to] of [['sketches', sketchesAt + 4, stored.length], ['pairs', 20 + headLength, sketchesAt]] as const) {
    const bad = Buffer.from(stored);
    bad.fill(0x5a, from, to);
    bad.writeUInt32LE(crc32c(bad.subarray(12)), 4);
    fs.writeFileSync(meta, bad);
    const lazy = readFooter(file);
    t.same(lazy.values, head.values, `value counts read without the ${what}`);
    t.throws(() => lazy[what], `the ${what} fail when first asked for`);
  }

  // A head whose sketch size is not a count, checksummed as if written so.
  const badHead = zstdCompress(pack({ ...head, sketchBytes: 'lots' }));
  const withBadHead = Buffer.alloc(20 + badHead.length + (stored.length - 20 - headLength));
  stored.copy(withBadHead, 0, 0, 20);
  withBadHead.writeUInt32LE(withBadHead.length - 12, 8);
  withBadHead.writeUInt32LE(badHead.length, 12);
  badHead.copy(withBadHead, 20);
  stored.copy(withBadHead, 20 + badHead.length, 20 + headLength);
  withBadHead.writeUInt32LE(crc32c(withBadHead.subarray(12)), 4);
  fs.writeFileSync(meta, withBadHead);
  t.throws(() => readFooter(file), /sidecar .* is corrupt: bad sketch size/);

  // A head or pair tables' length past the end, checksummed as if written so.
  for (const at of [12, 16]) {
    const damaged = Buffer.from(stored);
    damaged.writeUInt32LE(stored.length, at);
    damaged.writeUInt32LE(crc32c(damaged.subarray(12)), 4);
    fs.writeFileSync(meta, damaged);
    t.throws(() => readFooter(file), /sidecar .* is corrupt: head past the end/);
    t.notOk(verifySegment(file));
  }
  fs.writeFileSync(meta, stored);
  t.ok(verifySegment(file));
  // A sidecar removed after its footer was read (the segment retired by a merge): no pair tables.
  const retired = readFooter(file);
  fs.rmSync(meta);
  t.same(retired.pairs, {}, 'a removed sidecar has no pair tables to give');
  fs.writeFileSync(meta, stored);
});

t.test('the sidecar warm-up decodes a sidecar shaped like a segment\'s', async (t) => {
  const footer = warmSidecarDecoding();
  t.equal(Object.keys(footer.columns).length, 8);
  t.same(Object.keys(footer.values).sort(), ['column0', 'column1', 'column2', 'column3', 'column4', 'column5']);
  t.same(footer.values.column2, { values: [true, false], rows: [1, 8] }, 'booleans');
  t.equal(footer.values.column4.values[3], 0.75, 'numbers');
  t.equal(footer.values.column3.values[1], 'value 1', 'strings');
  // Its sketches are real ones, sparse and dense, that estimate what was added.
  const sizes = Object.values(footer.sketches).map((sketch) => sketch.byteLength);
  t.ok(Math.min(...sizes) < 1_000 && Math.max(...sizes) > 10_000, `sparse and dense sketches (${sizes.join(', ')} bytes)`);
  const estimate = HyperLogLog.deserialize(footer.sketches.column7).estimate();
  t.ok(Math.abs(estimate - 140_000) < 140_000 * 0.03, `column7 estimates ~140,000 (${Math.round(estimate)})`);
});

t.test('verifySegment is false when a file is missing or the Arrow file is torn', async (t) => {
  const { file } = roundTrip([{ ts: T0, props: { a: 1 } }], { a: 'num' });
  const arrow = fs.readFileSync(file);
  fs.writeFileSync(file, arrow.subarray(0, arrow.length - 10));
  t.notOk(verifySegment(file));
  fs.rmSync(file);
  t.notOk(verifySegment(file));
  fs.writeFileSync(file, arrow);
  t.ok(verifySegment(file));
  fs.rmSync(file + '.meta');
  t.notOk(verifySegment(file));
  t.throws(() => readFooter(file), { code: 'ENOENT' });
});

t.test('round-trips lists that rows share as one object, beside equal lists that are other objects', async (t) => {
  const coordinates = Object.freeze([4.85, 45.75]);
  const tags = Object.freeze(['a', null, 'ü 😀']);
  const flags = Object.freeze([true, null, false]);
  const rows: TestRow[] = Array.from({ length: 3_000 }, (_, index) => ({
    ts: T0 + index,
    props: {
      coordinates: index % 3 === 0 ? coordinates : index % 3 === 1 ? [4.85, 45.75] : [index, null],
      tags: index % 4 === 0 ? tags : index % 4 === 1 ? ['a', null, 'ü 😀'] : index % 4 === 2 ? [] : [`t${index % 9}`],
      flags: index % 2 === 0 ? flags : [false],
      ...(index % 5 === 0 && { sometimes: ['x', 'y'] }),
    },
  }));
  const { chunk, read } = roundTrip(rows, { coordinates: 'list', tags: 'list', flags: 'list', sometimes: 'list' });
  t.same(viewChunk(read), viewChunk(chunk));
});
