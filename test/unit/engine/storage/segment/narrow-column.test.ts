/**
 * Columns read from a segment stay narrow: dictionary codes keep their stored width (Int8, Int16
 * or Int32), booleans without numbers beside them are bytes, not Float64, and a column whose every
 * row has one type shares a read-only run of tags instead of a byte a row. Analyses over such
 * columns answer as over the same events held in memory, the cache does not count the shared
 * tags, copying writers leave the shared run alone, and a rewrite from them reads back the same.
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
  t.equal(columnBytes(column('n')), column('n').num!.byteLength, 'shared tags cost the cache nothing');
  t.ok(columnBytes(column('half')) >= ROWS + column('half').num!.byteLength, 'own tags are counted');
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
