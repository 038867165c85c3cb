/**
 * Columns read from a segment stay narrow: dictionary codes keep their stored width (Int8, Int16
 * or Int32), numbers stored as scaled integers stay those integers (Float64 values are made only
 * for a reader that asks for `num`), booleans without numbers beside them are bytes, not Float64,
 * and a column whose every row has one type shares a read-only run of tags instead of a byte a
 * row. Analyses over such columns answer as over the same events held in memory, the cache does
 * not count the shared tags, copying writers leave the shared run alone, and a rewrite from them
 * reads back the same.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { hideProperties } from '../../../../../engine/deletes/predicate.js';
import { QueryService } from '../../../../../engine/query/exec/service.js';
import { makeChunk, type TestEvent } from '../../../../helpers/query/test-support.js';
import { columnBytes } from '../../../../../engine/storage/chunk-bytes.js';
import { isUniformTags, TAG_MISSING, TAG_NUM, TAG_STR, uniformTags, type ScanSource } from '../../../../../engine/storage/chunk.js';
import type { SegmentColumn } from '../../../../../engine/storage/segment/decode-column.js';
import { readSegment } from '../../../../../engine/storage/segment/reader.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-narrow-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const START = Date.UTC(2024, 4, 1);
const ROWS = 40_000;

/** few: 10 strings; many: 1,000; lots: one per row (past Int16's 32,768); mixed types; half present. */
function events(): TestEvent[] {
  return Array.from({ length: ROWS }, (_, i) => ({
    ts: START + i * 1000,
    props: {
      n: i % 97,
      few: `f${i % 10}`,
      many: `m${(i * 7) % 1000}`,
      lots: `l${i}`,
      mixed: i % 3 === 0 ? i : `x${i % 4}`,
      flag: i % 3 === 0,
      flagOrNumber: i % 5 === 0 ? i / 4 : i % 2 === 0,
      ...(i % 7 !== 0 && { sometimes: i % 7 === 1 }),
      ...(i % 2 === 0 && { half: i }),
    },
  }));
}

t.test('codes keep their stored width and uniform columns share their tags', async (t) => {
  const file = path.join(tempDir(), 'a.arrow');
  const list = events();
  writeSegment(file, makeChunk(list), {});
  const chunk = readSegment(file);
  const column = (name: string) => chunk.columns.get(name)!;
  t.ok(column('few').str instanceof Int8Array, 'up to 128 entries: Int8 codes');
  t.ok(column('many').str instanceof Int16Array, 'up to 32,768 entries: Int16 codes');
  t.ok(column('lots').str instanceof Int32Array, 'wider: Int32 codes');
  for (const name of ['n', 'few', 'many', 'lots']) t.ok(isUniformTags(column(name).tags), `${name}: shared tags`);
  t.ok(column('flag').num instanceof Uint8Array, 'booleans alone: a byte a row');
  t.ok(column('sometimes').num instanceof Uint8Array, 'booleans and missing rows: a byte a row');
  t.ok(column('flagOrNumber').num instanceof Float64Array, 'booleans beside numbers: Float64');
  t.equal(column('flagOrNumber').num![5], 1.25);
  t.same([...column('flag').num!.subarray(0, 4)], [1, 0, 0, 1]);
  for (const name of ['mixed', 'half']) t.notOk(isUniformTags(column(name).tags), `${name}: tags of its own`);
  t.equal(column('n').tags[ROWS - 1], TAG_NUM);
  t.equal(column('few').tags[0], TAG_STR);
  t.equal(column('half').tags[1], TAG_MISSING);
  for (let row = 0; row < ROWS; row++) {
    const props = list[row].props;
    const few = column('few');
    const many = column('many');
    if (few.dict![few.str![row]] !== props.few || many.dict![many.str![row]] !== props.many) {
      t.fail(`row ${row} reads back another string`);
      break;
    }
  }
  t.ok(column('n').scaled!.values instanceof Int8Array, 'small integers: kept as stored, a byte a row');
  t.ok(column('half').scaled!.values instanceof Int32Array, 'with missing rows too');
  t.equal(columnBytes(column('n')), column('n').scaled!.values.byteLength, 'shared tags cost the cache nothing');
  t.ok(columnBytes(column('half')) >= ROWS + column('half').scaled!.values.byteLength, 'own tags are counted');
});

t.test('numbers stored as scaled integers stay so until a reader asks for num', async (t) => {
  const file = path.join(tempDir(), 'p.arrow');
  const prices = Array.from({ length: ROWS }, (_, i) => ((i * 7919) % 30_000 - 5_000) / 100);
  writeSegment(file, makeChunk(prices.map((price, i) => ({ ts: START + i * 1000, props: { price, q: i % 5 } }))), {});
  const chunk = readSegment(file);
  const price = chunk.columns.get('price') as SegmentColumn;
  t.same(price.scaled && { width: price.scaled.values.constructor, factor: price.scaled.factor }, { width: Int16Array, factor: 100 });
  t.equal(price.decodedBytes, 0, 'nothing made yet');
  t.equal(columnBytes(price), ROWS * 2, 'the cache counts the integers');
  const num = price.num as Float64Array;
  t.ok(num instanceof Float64Array);
  t.ok(prices.every((value, i) => Object.is(num[i], value)), 'num holds the numbers as written');
  t.equal(price.num, num, 'made once');
  t.equal(price.decodedBytes, ROWS * 8, 'and counted as made');
  t.equal(columnBytes(price), ROWS * 2);
  const copy = { ...chunk.columns.get('q')! };
  t.ok(copy.num instanceof Float64Array && copy.num[7] === 2, 'a copy made with spread gets the numbers');
  t.equal(copy.scaled!.factor, 1);
});

t.test('a segment rewritten from narrow columns (as compaction and deletes do) reads back the same', async (t) => {
  const dir = tempDir();
  writeSegment(path.join(dir, 'a.arrow'), makeChunk(events()), {});
  const first = readSegment(path.join(dir, 'a.arrow'));
  writeSegment(path.join(dir, 'b.arrow'), first, {});
  const again = readSegment(path.join(dir, 'b.arrow'));
  for (const [name, column] of first.columns) {
    const other = again.columns.get(name)!;
    t.same([...other.tags], [...column.tags], `${name}: tags`);
    t.same(other.num && [...other.num], column.num && [...column.num], `${name}: numbers and booleans`);
    t.same(other.str && Array.from(other.str, (code) => other.dict![code]), column.str && Array.from(column.str, (code) => column.dict![code]),
      `${name}: strings`);
    t.equal(other.num?.constructor, column.num?.constructor, `${name}: same number width`);
  }
});

t.test('a shared run is longer than any view of it, and grows without moving older views', async (t) => {
  const small = uniformTags(TAG_NUM, 10);
  for (const rows of [0, 1, 32_767, 32_768, 65_536, 200_000]) {
    const tags = uniformTags(TAG_NUM, rows);
    t.equal(tags.length, rows);
    t.ok(tags.buffer.byteLength > tags.byteLength, `${rows} rows: never a whole buffer (never transferred)`);
    t.ok(tags.every((tag) => tag === TAG_NUM));
    t.ok(isUniformTags(tags));
  }
  t.ok(isUniformTags(small) && small.every((tag) => tag === TAG_NUM), 'a view from before the growth still reads the tag');
  t.notOk(isUniformTags(new Uint8Array(10).fill(TAG_NUM)), 'a plain array is not shared');
});

t.test('hiding a deleted property copies the tags; the shared run is untouched', async (t) => {
  const file = path.join(tempDir(), 'd.arrow');
  writeSegment(file, makeChunk(events(), 100), {});
  const chunk = readSegment(file);
  const before = chunk.columns.get('n')!;
  const hidden = hideProperties(chunk, [{ kind: 'property', id: 1, path: 'n', seqBefore: 100 + ROWS / 2 }]);
  const after = hidden.columns.get('n')!;
  t.equal(after.tags[0], TAG_MISSING, 'rows before the delete are hidden');
  t.equal(after.tags[ROWS - 1], TAG_NUM);
  t.notOk(isUniformTags(after.tags));
  t.ok(before.tags.every((tag) => tag === TAG_NUM), 'the shared run still holds one tag');
  t.ok(uniformTags(TAG_NUM, ROWS).every((tag) => tag === TAG_NUM));
});

t.test('analyses over narrow segment columns equal those over the same events in memory', async (t) => {
  const dir = tempDir();
  const list = events();
  // One event before the timeframe makes the segment a boundary one, so its rows are scanned.
  const stored = [{ ts: START - 1000, props: { n: 1, few: 'f1', many: 'm1', lots: 'l-1', mixed: 'x1' } }, ...list];
  const file = path.join(dir, 's.arrow');
  const footer = writeSegment(file, makeChunk(stored), {});
  const onDisk = { idKey: 0, memoryVersion: 0, segments: [{ file, footer }], memory: makeChunk([], 10_000), schema: {} };
  const inMemory = { idKey: 1, memoryVersion: 0, segments: [], memory: makeChunk(stored), schema: {} };
  const service = (source: unknown) => {
    const made = new QueryService({ source: () => source as ScanSource, clock: () => START + 86_400_000, workers: 0 });
    t.teardown(() => made.close());
    return made;
  };
  const disk = service(onDisk);
  const memory = service(inMemory);
  const timeframe = { start: '2024-05-01T00:00:00Z', end: '2024-05-02T00:00:00Z' };
  const queries: [string, Record<string, unknown>][] = [
    ['count', { filters: [{ property_name: 'few', operator: 'eq', property_value: 'f3' }] }],
    ['count', { filters: [{ property_name: 'many', operator: 'in', property_value: ['m7', 'm14', 'm999'] }] }],
    ['count', { group_by: 'few' }],
    ['sum', { target_property: 'n', group_by: 'many' }],
    ['average', { target_property: 'n', group_by: ['few', 'mixed'] }],
    ['maximum', { target_property: 'half', filters: [{ property_name: 'few', operator: 'ne', property_value: 'f0' }] }],
    ['select_unique', { target_property: 'many' }],
    ['count_unique', { target_property: 'lots' }],
    ['count_unique', { target_property: 'few', interval: 'hourly' }],
    ['count', { filters: [{ property_name: 'lots', operator: 'contains', property_value: '99' }] }],
    ['count', { filters: [{ property_name: 'flag', operator: 'eq', property_value: true }] }],
    ['count', { filters: [{ property_name: 'sometimes', operator: 'ne', property_value: true }], group_by: 'flag' }],
    ['count', { filters: [{ property_name: 'flagOrNumber', operator: 'gt', property_value: 100 }] }],
    ['maximum', { target_property: 'n', filters: [{ property_name: 'sometimes', operator: 'exists', property_value: false }] }],
    ['select_unique', { target_property: 'flagOrNumber', filters: [{ property_name: 'n', operator: 'lt', property_value: 3 }] }],
    ['count_unique', { target_property: 'sometimes', group_by: 'few' }],
    ['extraction', { latest: 5, property_names: ['few', 'many', 'lots', 'mixed', 'half', 'n', 'flag', 'flagOrNumber', 'sometimes'] }],
  ];
  for (const [analysis, extra] of queries) {
    const params = { event_collection: 'e', timeframe, ...extra };
    const [a, b] = await Promise.all([disk.run('p', analysis, params), memory.run('p', analysis, params)]);
    t.same((a as { result: unknown }).result, (b as { result: unknown }).result, `${analysis} ${JSON.stringify(extra)}`);
  }
});

t.test('analyses over numbers kept as scaled integers equal those over the same events in memory', async (t) => {
  const dir = tempDir();
  const hashed = (i: number) => (i * 2654435761) >>> 0;
  // Prices at and beside the bounds the filters ask for, negative ones, and integer counts.
  const special = [50, 49.99, 50.01, 100, 99.99, 100.01, 0, -0.01, -3.5, 0.3, 0.1, 0.2, 12.34];
  const event = (i: number, ts: number): TestEvent => ({
    ts,
    props: {
      price: i < special.length ? special[i] : ((i * 7919) % 30_000 - 5_000) / 100,
      quantity: 1 + (i % 5),
      cents: (i * 31) % 70_000 - 1_000,
      device: `d${i % 4}`,
      // Scattered signs and magnitudes (Int32 at scale 2): their sums depend on the order of the
      // additions and on the last bit of every addend.
      big: (hashed(i) >>> 31 === 0 ? 1 : -1) * (hashed(i) % 3_000_000 + 1) / 100,
      ...(i % 11 !== 0 && { sometimes: (i % 400) / 10 }),
    },
  });
  // Segment a lies inside the timeframe (its rows are read densely), b straddles its start.
  const inside = Array.from({ length: 20_000 }, (_, i) => event(i, START + 3_600_000 + i * 100));
  const straddling = Array.from({ length: 20_000 }, (_, i) => event(i + 7, START - 1_000_000 + i * 100));
  const a = path.join(dir, 'a.arrow');
  const b = path.join(dir, 'b.arrow');
  const segments = [{ file: a, footer: writeSegment(a, makeChunk(inside), {}) }, { file: b, footer: writeSegment(b, makeChunk(straddling, 20_000), {}) }];
  const stored = readSegment(a);
  for (const name of ['price', 'quantity', 'cents', 'sometimes', 'big']) t.ok(stored.columns.get(name)!.scaled, `${name}: kept as stored`);
  const onDisk = { idKey: 0, memoryVersion: 0, segments, memory: makeChunk([], 50_000), schema: {} };
  const inMemory = { idKey: 1, memoryVersion: 0, segments: [], memory: makeChunk([...inside, ...straddling]), schema: {} };
  const service = (source: unknown) => {
    const made = new QueryService({ source: () => source as ScanSource, clock: () => START + 86_400_000, workers: 0 });
    t.teardown(() => made.close());
    return made;
  };
  const memory = service(inMemory);
  // Each query on a fresh cache (a filter such as ne makes a column's Float64 values, and the
  // readers then take those), then again with the Float64 values of every numeric column made.
  const made = service(onDisk);
  const timeframe = { start: '2024-05-01T00:00:00Z', end: '2024-05-02T00:00:00Z' };
  const filter = (operator: string, value: unknown, name = 'price') => ({ property_name: name, operator, property_value: value });
  for (const name of ['price', 'quantity', 'cents', 'sometimes', 'big']) {
    await made.run('p', 'count', { event_collection: 'e', timeframe, filters: [filter('ne', 'x', name)] });
  }
  const queries: [string, Record<string, unknown>][] = [];
  for (const bound of [50, 49.99, 49.995, 100, 0, -0, -0.01, -3.5, 0.30000000000000004, 1e300, -1e300, 3.4e4]) {
    for (const operator of ['gt', 'gte', 'lt', 'lte', 'eq', 'ne']) queries.push(['count', { filters: [filter(operator, bound)] }]);
  }
  queries.push(
    ['count', { filters: [filter('gte', 50), filter('lt', 100)] }],
    ['count', { filters: [filter('gt', 2), filter('lte', 4), filter('eq', 'd1', 'device')] }],
    ['count', { filters: [filter('gte', 3.5, 'sometimes')] }],
    ['count', { filters: [filter('in', [50, 100, -3.5, 7])] }],
    ['count', { filters: [filter('gte', 12_000, 'cents'), filter('lt', 50_000.5, 'cents')] }],
    ['sum', { target_property: 'price' }],
    ['sum', { target_property: 'quantity' }],
    ['sum', { target_property: 'cents', filters: [filter('eq', 'd2', 'device')] }],
    ['sum', { target_property: 'sometimes' }],
    ['average', { target_property: 'price' }],
    ['average', { target_property: 'quantity' }],
    ['average', { target_property: 'price', group_by: 'device' }],
    ['average', { target_property: 'quantity', group_by: 'device' }],
    ['average', { target_property: 'quantity', group_by: 'device', filters: [filter('gt', 10)] }],
    ['minimum', { target_property: 'price' }],
    ['maximum', { target_property: 'price' }],
    ['maximum', { target_property: 'price', filters: [filter('lt', 50)] }],
    ['minimum', { target_property: 'cents', filters: [filter('eq', 'd3', 'device')] }],
    ['maximum', { target_property: 'sometimes', group_by: 'device' }],
    ['minimum', { target_property: 'price', filters: [filter('gt', 1e300)] }],
    ['median', { target_property: 'price' }],
    ['median', { target_property: 'quantity', group_by: 'device' }],
    ['percentile', { target_property: 'price', percentile: 90, filters: [filter('gte', 0)] }],
    ['count_unique', { target_property: 'price' }],
    ['select_unique', { target_property: 'quantity' }],
    ['count', { group_by: 'quantity' }],
    ['multi_analysis', { analyses: { s: { analysis_type: 'sum', target_property: 'price' }, a: { analysis_type: 'average', target_property: 'price' } } }],
    ['extraction', { latest: 20, property_names: ['price', 'quantity', 'cents', 'sometimes'] }],
  );
  // Sums of `big` depend on the order of additions, which differs between a segment (four
  // lanes over a whole chunk) and the buffer: those are compared with the Float64 values alone.
  const orderSensitive: [string, Record<string, unknown>][] = [
    ['sum', { target_property: 'big' }],
    ['sum', { target_property: 'big', filters: [filter('gt', 0)] }],
    ['average', { target_property: 'big', group_by: 'device' }],
    ['average', { target_property: 'big', group_by: 'device', filters: [filter('lt', 200)] }],
    ['multi_analysis', { analyses: { s: { analysis_type: 'sum', target_property: 'big' }, a: { analysis_type: 'average', target_property: 'big' } } }],
    ['minimum', { target_property: 'big' }],
    ['median', { target_property: 'big' }],
    ['count', { filters: [filter('gte', -1234567.89, 'big'), filter('lt', 7654321.5, 'big')] }],
  ];
  for (const [analysis, extra] of [...queries, ...orderSensitive]) {
    const params = { event_collection: 'e', timeframe, ...extra };
    const stored = (await service(onDisk).run('p', analysis, params)) as { result: unknown };
    const withFloat64 = (await made.run('p', analysis, params)) as { result: unknown };
    t.strictSame(stored.result, withFloat64.result, `${analysis} ${JSON.stringify(extra)}: stored integers as Float64 values`);
    if (orderSensitive.some(([, other]) => other === extra)) continue;
    const expected = ((await memory.run('p', analysis, params)) as { result: unknown }).result;
    t.strictSame(stored.result, expected, `${analysis} ${JSON.stringify(extra)}: as in memory`);
  }
});
