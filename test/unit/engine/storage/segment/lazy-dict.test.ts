/**
 * Dictionaries read from a segment stay UTF-8 until something asks for their strings: the column
 * is a SegmentColumn, distinct counts hash the bytes (equal to hashing the strings, ASCII or not),
 * the strings are made once on first use, and the cache counts them once made.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import t from 'tap';
import { paddedKeys, utf8Keys, valueKeys, type KeyPair } from '../../../../../engine/query/eval/value-key.js';
import { CountUniqueAggregator } from '../../../../../engine/query/aggregate/count-unique.js';
import { identityOf } from '../../../../../engine/query/exec/scan.js';
import { QueryService } from '../../../../../engine/query/exec/service.js';
import { makeChunk, type TestEvent } from '../../../../helpers/query/test-support.js';
import { hashAsciiPair, hashString } from '../../../../../engine/sketch/hash.js';
import { chunkBytes } from '../../../../../engine/storage/chunk-bytes.js';
import { dictLength, numbersOf, TAG_STR, type Column, type ScanSource } from '../../../../../engine/storage/chunk.js';
import { nativeBytesDecodedThisTurn } from '../../../../../engine/storage/segment/arrow.js';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { SegmentColumn } from '../../../../../engine/storage/segment/decode-column.js';
import { readSegment } from '../../../../../engine/storage/segment/reader.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-lazy-dict-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const VALUES = ['', 'a', 'ab', 'abc', 'u123456', 'é', 'naïve café', '😀 x', '日本語', 'x'.repeat(300)];
const START = Date.UTC(2024, 4, 1);

t.test('hashAsciiPair of bytes equals hashString of the same ASCII text, with both seeds', async (t) => {
  const out = new Int32Array(2);
  for (const text of ['', 'a', 'ab', 'abc', 'abcd', 'u1234567', '/p/999', '~'.repeat(33)]) {
    const bytes = Buffer.from(`..${text}..`, 'latin1');
    for (const [one, two] of [[0, 0x5bd1e995], [-1, 7]]) {
      t.ok(hashAsciiPair(bytes, 2, 2 + text.length, one, two, out));
      t.same([out[0], out[1]], [hashString(text, one) | 0, hashString(text, two) | 0], `${JSON.stringify(text)} seeds ${one}, ${two}`);
    }
  }
  out.fill(9);
  t.notOk(hashAsciiPair(Buffer.from('..é..'), 2, 4, 0, 1, out), 'not ASCII');
  t.same([...out], [9, 9], 'and nothing written');
});

t.test('a stored dictionary is kept as UTF-8, hashed from its bytes and decoded once on demand', async (t) => {
  const file = path.join(tempDir(), 'strings.arrow');
  const events: TestEvent[] = Array.from({ length: 500 }, (_, i) => ({
    ts: START + i * 1000, props: { s: VALUES[i % VALUES.length], n: i },
  }));
  writeSegment(file, makeChunk(events), {});
  const chunk = readSegment(file);
  const column = chunk.columns.get('s');
  t.ok(column instanceof SegmentColumn, 'a segment column');
  const lazy = column as SegmentColumn;
  t.ok(lazy.utf8 !== null, 'the dictionary as stored');
  t.equal(lazy.decodedBytes, 0, 'no strings made yet');
  const before = chunkBytes(chunk);
  const size = lazy.utf8!.offsets.length - 1;
  const hi = new Int32Array(size);
  const lo = new Int32Array(size);
  utf8Keys(lazy.utf8!, hi, lo);
  t.equal(lazy.decodedBytes, 0, 'hashing the bytes makes no strings');
  const one = Array.from({ length: size }, (_, code) => lazy.stringAt(code));
  t.equal(lazy.decodedBytes, 0, 'one entry at a time makes no dictionary');
  const dict = lazy.dict!;
  t.same(one, dict, 'stringAt decodes each entry as the whole dictionary does');
  t.same([...dict].sort(), [...VALUES].sort(), 'the strings, unicode included');
  t.equal(lazy.dict, dict, 'made once');
  t.ok(lazy.decodedBytes > 0 && chunkBytes(chunk) === before + lazy.decodedBytes, 'counted once made');
  const pair: KeyPair = { hi: 0, lo: 0 };
  for (let code = 0; code < size; code++) {
    valueKeys.string(dict[code], pair);
    t.same([hi[code], lo[code]], [pair.hi, pair.lo], `key of ${JSON.stringify(dict[code].slice(0, 12))}`);
  }
  for (let row = 0; row < events.length; row++) {
    if (dict[lazy.str![row]] !== events[row].props.s) t.fail(`row ${row}`);
  }
  // Deletes and the writer copy columns with spread: the copy must carry the strings.
  const fresh = readSegment(file).columns.get('s')!;
  t.same({ ...fresh, tags: fresh.tags.slice() }.dict, dict, 'a spread copy of an untouched column has its strings');
});

t.test('the distinct keys a count makes of a stored dictionary are counted with its column, once', async (t) => {
  const file = path.join(tempDir(), 'keys.arrow');
  const events: TestEvent[] = Array.from({ length: 300 }, (_, i) => ({ ts: START + i * 1000, props: { s: `v${i % 120}` } }));
  writeSegment(file, makeChunk(events), {});
  const chunk = readSegment(file);
  const column = chunk.columns.get('s') as SegmentColumn;
  t.equal(column.padded, null, 'a short dictionary is stored with offsets');
  const before = chunkBytes(chunk);
  const views = new ColumnViews();
  const keys = views.storedKeys(column);
  t.equal(keys.hi.length, 120);
  t.equal(column.decodedBytes, 8 * 120, 'two Int32 a dictionary entry');
  t.equal(chunkBytes(chunk), before + 8 * 120, 'the cache sees them');
  t.equal(views.storedKeys(column), keys, 'kept, not made again');
  t.equal(column.decodedBytes, 8 * 120, 'and counted once');
  column.dict;
  t.ok(column.decodedBytes > 8 * 120, 'strings made later add to the keys, not replace them');
});

t.test('a padded dictionary is read in place: keys, entries and its size without unpadding it', async (t) => {
  const file = path.join(tempDir(), 'padded.arrow');
  // 600 distinct values of up to 12 bytes: sorted and stored padded (arrow-data.ts dictionaryData).
  const value = (i: number) => i % 7 === 0 ? `é${i}` : `u${(i * 7919) % 100_000}`;
  const events: TestEvent[] = Array.from({ length: 1_500 }, (_, i) => ({ ts: START + i * 1000, props: { s: value(i % 600) } }));
  writeSegment(file, makeChunk(events), {});
  const chunk = readSegment(file);
  const column = chunk.columns.get('s') as SegmentColumn;
  t.ok(column.padded !== null, 'stored padded');
  const size = column.padded!.count;
  t.equal(size, 600);
  t.equal(dictLength(column), 600, 'its size, known without unpadding');
  const before = chunkBytes(chunk);
  t.equal(before, chunkBytes(chunk), 'measuring it does not unpad it');
  t.equal(column.decodedBytes, 0, 'nothing made yet');
  const entries = Array.from({ length: size }, (_, code) => column.stringAt(code));
  t.same([...entries].sort(), Array.from({ length: 600 }, (_, i) => value(i)).sort(), 'each entry read in place, unicode included');
  const hi = new Int32Array(size);
  const lo = new Int32Array(size);
  paddedKeys(column.padded!, hi, lo);
  const pair: KeyPair = { hi: 0, lo: 0 };
  let equal = 0;
  for (let code = 0; code < size; code++) {
    valueKeys.string(entries[code], pair);
    if (hi[code] === pair.hi && lo[code] === pair.lo) equal++;
  }
  t.equal(equal, size, 'keys of the padded bytes equal the strings\' keys');
  const keys = new ColumnViews().storedKeys(column);
  t.same([keys.hi, keys.lo], [hi, lo], 'the count\'s keys are those');
  t.equal(column.decodedBytes, 8 * size, 'the keys counted, and nothing unpadded');
  t.equal(chunkBytes(chunk), before + 8 * size);
  const utf8 = column.utf8!;
  t.equal(utf8.offsets.length, size + 1, 'unpadded when first asked for');
  const hi2 = new Int32Array(size);
  const lo2 = new Int32Array(size);
  utf8Keys(utf8, hi2, lo2);
  t.same([hi2, lo2], [hi, lo], 'the unpadded entries hash the same');
  t.equal(column.decodedBytes, 8 * size + utf8.bytes.byteLength + utf8.offsets.byteLength, 'and the copy is counted');
  t.equal(column.utf8, utf8, 'once');
  t.same(column.dict, entries, 'the strings');
  for (let row = 0; row < events.length; row++) {
    if (column.dict![column.str![row]] !== events[row].props.s) t.fail(`row ${row}`);
  }
  const fresh = readSegment(file).columns.get('s')!;
  t.same({ ...fresh, tags: fresh.tags.slice() }.dict, entries, 'a spread copy of an untouched padded column has its strings');
});

t.test('a segment rewritten from a read chunk keeps its strings', async (t) => {
  const dir = tempDir();
  const events: TestEvent[] = VALUES.map((s, i) => ({ ts: START + i * 1000, props: { s } }));
  writeSegment(path.join(dir, 'a.arrow'), makeChunk(events), {});
  const read = readSegment(path.join(dir, 'a.arrow'));
  writeSegment(path.join(dir, 'b.arrow'), read, {});
  const again = readSegment(path.join(dir, 'b.arrow')).columns.get('s')!;
  t.same(Array.from(again.str!, (code) => again.dict![code]), VALUES);
});

t.test('count_unique counts a value once whether it comes from a segment or the write buffer', async (t) => {
  const dir = tempDir();
  // A row before the timeframe makes the segment a boundary one, so its rows are scanned (a
  // segment wholly inside would be answered from its sidecar's value counts).
  const old: TestEvent[] = [{ ts: START - 1000, props: { s: 'before' } }, ...VALUES.map((s, i) => ({ ts: START + i * 1000, props: { s } }))];
  // The buffer holds half the same values (as JS strings) and two new ones.
  const recent: TestEvent[] = [...VALUES.slice(0, 5), 'ü', VALUES[7], 'new'].map((s, i) => ({ ts: START + 86_400_000 + i, props: { s } }));
  const file = path.join(dir, 's0.arrow');
  const footer = writeSegment(file, makeChunk(old), {});
  const source = { idKey: 0, memoryVersion: 0, segments: [{ file, footer }], memory: makeChunk(recent, 1000), schema: {} } as unknown as ScanSource;
  const service = new QueryService({ source: () => source, clock: () => START + 10 * 86_400_000, workers: 0 });
  t.teardown(() => service.close());
  const params = { event_collection: 'e', timeframe: { start: '2024-05-01T00:00:00Z', end: '2024-05-05T00:00:00Z' }, target_property: 's' };
  const run = async (extra: Record<string, unknown>) => ((await service.run('p', 'count_unique', { ...params, ...extra })) as { result: unknown }).result;
  t.equal(await run({}), VALUES.length + 2);
  t.equal(await run({ force_exact: true }), VALUES.length + 2);
  const daily = await run({ interval: 'daily' }) as { value: number }[];
  t.same(daily.slice(0, 2).map((bucket) => bucket.value), [VALUES.length, recent.length]);
});

t.test('count_unique of every row takes a dictionary\'s keys alone only once a scan found each entry used', async (t) => {
  const dir = tempDir();
  // 400 and 300 distinct values (past the sidecar's value counts, so the rows are scanned), the
  // first segment's dictionary holding three entries no row has, as a rewritten one can.
  const events = (from: number, to: number, offset: number) => Array.from({ length: 2 * (to - from) }, (_, i): TestEvent => ({
    ts: START + offset + i * 1000, props: { s: `v${from + (i % (to - from))}` },
  }));
  const withGhosts = makeChunk(events(0, 400, 0));
  const column = withGhosts.columns.get('s')!;
  (withGhosts.columns as Map<string, Column>).set('s', { ...column, dict: [...column.dict!, 'ghost-1', 'ghost-2', 'v999'] });
  const a = path.join(dir, 'a.arrow');
  const b = path.join(dir, 'b.arrow');
  const segments = [
    { file: a, footer: writeSegment(a, withGhosts, {}) },
    { file: b, footer: writeSegment(b, makeChunk(events(200, 500, 3_600_000), 5_000), {}) },
  ];
  const source = { idKey: 0, memoryVersion: 0, segments, memory: null, schema: {} } as unknown as ScanSource;
  const service = new QueryService({ source: () => source, clock: () => START + 10 * 86_400_000, workers: 0 });
  t.teardown(() => service.close());
  const params = { event_collection: 'e', timeframe: { start: '2024-05-01T00:00:00Z', end: '2024-05-05T00:00:00Z' }, target_property: 's' };
  for (let run = 0; run < 3; run++) {
    const { result } = await service.run('p', 'count_unique', params) as { result: unknown };
    t.equal(result, 500, `run ${run + 1}: the rows' values, not the unused entries`);
  }
  const views = new ColumnViews();
  const [ghosts, whole] = [readSegment(a).columns.get('s')!, readSegment(b).columns.get('s')!];
  const aggregator = new CountUniqueAggregator('s', 1_000_000, false, views);
  for (let run = 0; run < 2; run++) {
    for (const read of [ghosts, whole]) {
      aggregator.update({ column: read, idx: identityOf(read.tags.length), n: read.tags.length, cells: null, cellCount: 1, dense: true, tagMask: 1 << TAG_STR });
    }
  }
  t.notOk(views.allCodesUsed(ghosts), 'a dictionary with unused entries is never taken whole');
  t.ok(views.allCodesUsed(whole), 'one whose entries all are, once scanned');
  t.equal(aggregator.finalize(0), 500);
});

t.test('only what a column keeps as read is decoded natively; converted buffers are not', async (t) => {
  const file = path.join(tempDir(), 'kinds.arrow');
  const events: TestEvent[] = Array.from({ length: 300_000 }, (_, i) => ({
    ts: START + i * 1000, props: { n: (i % 9_973) / 100, b: i % 3 === 0, s: `u${(i * 7919) % 5_000}` },
  }));
  writeSegment(file, makeChunk(events), {});
  await turn();
  const converted = readSegment(file, ['b']);
  converted.ts;
  t.equal(nativeBytesDecodedThisTurn(), 0, 'booleans and times are converted, so not decoded natively');
  const numbers = readSegment(file, ['n']).columns.get('n')!;
  t.ok(nativeBytesDecodedThisTurn() >= 300_000 * 2, 'scaled integers are kept as stored, so natively');
  t.equal(numbersOf(numbers)[12_345], (12_345 % 9_973) / 100);
  await turn();
  const strings = readSegment(file, ['s']).columns.get('s')!;
  t.ok(nativeBytesDecodedThisTurn() >= 300_000 * 2, 'codes (and the dictionary) natively');
  t.equal(strings.dict![strings.str![4_321]], `u${(4_321 * 7919) % 5_000}`);
  await turn();
  t.equal(nativeBytesDecodedThisTurn(), 0, 'counted per turn of the event loop');
});
