import t from 'tap';
import { HyperLogLog } from '../../../../../engine/sketch/hyperloglog.js';
import { DISTINCT_VALUES_MAX } from '../../../../../engine/base/limits.js';
import { computeDistinct, computeSketches, hashValue, sketchColumn } from '../../../../../engine/storage/segment/sketches.js';
import { TAG_STR } from '../../../../../engine/storage/chunk.js';
import { buildChunk, valueAt, type TestRow } from '../../../../helpers/test-chunk.js';

const VALUES = [1, '1', true, 1, null, 'a', [1, 2], [1, 2], [2, 1], false, 0, -0, 'é'];

t.test('a column sketch counts what hashValue hashes, nulls and missing excluded', async (t) => {
  const rows: TestRow[] = VALUES.map((value, index) => ({ ts: index, props: { p: value } }));
  rows.push({ ts: 99, props: {} });
  const chunk = buildChunk(rows);
  const column = chunk.columns.get('p')!;
  const expected = new HyperLogLog();
  for (let row = 0; row < chunk.rows; row++) {
    const value = valueAt(column, row);
    const hash = value === undefined ? null : hashValue(value);
    if (hash !== null) expected.add(hash);
  }
  t.same(sketchColumn(column, chunk.rows).registers, expected.registers);
  // 1, "1", true, "a", [1,2], [2,1], false, 0 (= -0), "é"
  t.equal(Math.round(expected.estimate()), 9);
});

t.test('merging two segments\' sketches equals the sketch of both chunks (merge law)', async (t) => {
  const make = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, index) => ({
      ts: index,
      props: { user: `u${from + index}`, n: (from + index) % 700 },
    }));
  const left = computeSketches(buildChunk(make(0, 3000)));
  const right = computeSketches(buildChunk(make(2000, 5000)));
  const both = computeSketches(buildChunk(make(0, 5000)));
  for (const path of ['user', 'n']) {
    const merged = HyperLogLog.deserialize(left[path]);
    merged.merge(HyperLogLog.deserialize(right[path]));
    t.same(merged.registers, HyperLogLog.deserialize(both[path]).registers, path);
  }
});

t.test('computeDistinct lists few distinct scalars per column, none for lists or many values', async (t) => {
  const rows: TestRow[] = [
    { ts: 0, props: { mixed: 'a', few: 1, list: [1], many: 0 } },
    { ts: 1, props: { mixed: -0, few: 1, list: 'x', many: 1 } },
    { ts: 2, props: { mixed: 'a', few: null, many: 2 } },
    { ts: 3, props: { mixed: true, few: 2 } },
    { ts: 4, props: { mixed: 0, many: 3 } },
  ];
  for (let i = 0; i <= DISTINCT_VALUES_MAX; i++) rows.push({ ts: 10 + i, props: { many: 100 + i } });
  const distinct = computeDistinct(buildChunk(rows));
  // -0 and 0 are one value; null and missing are not values; a list row lists nothing.
  t.same(distinct.mixed, { values: ['a', 0, true], rows: [2, 2, 1] });
  t.same(distinct.few, { values: [1, 2], rows: [2, 1] });
  t.equal(distinct.list, undefined);
  t.equal(distinct.many, undefined);
  t.ok(Object.is(distinct.mixed.values[1], 0));
});

t.test('computeDistinct of strings: 256 distinct are listed, 257 are not, a dictionary that repeats a string counts it once', async (t) => {
  const strings = (count: number) => Array.from({ length: 2 * count }, (_, i) => ({ ts: i, props: { s: `v${i % count}` } }));
  const listed = computeDistinct(buildChunk(strings(DISTINCT_VALUES_MAX))).s;
  t.equal(listed.values.length, DISTINCT_VALUES_MAX);
  t.ok(listed.rows.every((rows) => rows === 2));
  t.equal(computeDistinct(buildChunk(strings(DISTINCT_VALUES_MAX + 1))).s, undefined);
  // 300 codes, each row its own, for 200 distinct strings (a write buffer's column of ids, buffer.ts).
  const rows = 300;
  const dict = Array.from({ length: rows }, (_, i) => `id${i % 200}`);
  const column = {
    path: 'id', tags: new Uint8Array(rows).fill(TAG_STR), num: null, str: Int32Array.from({ length: rows }, (_, i) => i),
    dict, lists: null, repeats: true,
  };
  const chunk = { rows, ts: new Float64Array(rows), createdAt: new Float64Array(rows), seq: new Float64Array(rows), columns: new Map([['id', column]]) };
  const counts = computeDistinct(chunk).id;
  t.equal(counts.values.length, 200);
  t.same(counts.rows, Array.from({ length: 200 }, (_, i) => (i < 100 ? 2 : 1)));
});

t.test('a column sketched from its distinct values equals the sketch of its rows', async (t) => {
  const scalars = [1, '1', true, false, 0, -0, 'é', 'a', null, 2.5, -7];
  const rows: TestRow[] = Array.from({ length: 600 }, (_, index) => ({
    ts: index,
    props: {
      mixed: scalars[(index * 7) % scalars.length],
      runs: Math.floor(index / 50),
      text: `v${index % 40}`,
      flag: index % 3 === 0,
      list: index % 5 === 0 ? [index % 2] : 'x',
      ids: `id${index}`,
      ...(index % 4 === 0 && { sparse: index % 8 }),
    },
  }));
  const chunk = buildChunk(rows);
  const distinct = computeDistinct(chunk);
  t.ok(['mixed', 'runs', 'text', 'flag', 'sparse'].every((path) => path in distinct), 'the low-cardinality columns are listed');
  t.notOk('list' in distinct || 'ids' in distinct, 'lists and many values are not');
  const fromValues = computeSketches(chunk, distinct);
  for (const [path, column] of chunk.columns) {
    t.same(HyperLogLog.deserialize(fromValues[path]).registers, sketchColumn(column, chunk.rows).registers, path);
  }
});

t.test('a column sketch adds each used dictionary entry and each list object once: the registers of a pass adding every row', async (t) => {
  const shared = Object.freeze([4.85, 45.75]);
  const rows: TestRow[] = Array.from({ length: 2_000 }, (_, index) => ({
    ts: index,
    props: {
      // One list object for most rows (an add-on's result), equal lists that are other objects, others.
      coordinates: index % 3 === 0 ? shared : index % 3 === 1 ? [4.85, 45.75] : [index % 17, 1],
      city: `c${(index * 13) % 97}`,
      mixed: index % 4 === 0 ? [`c${index % 5}`] : index % 4 === 1 ? `c${index % 5}` : index % 7,
    },
  }));
  const chunk = buildChunk(rows);
  for (const [path, column] of chunk.columns) {
    const expected = new HyperLogLog();
    for (let row = 0; row < chunk.rows; row++) {
      const value = valueAt(column, row);
      const hash = value === undefined ? null : hashValue(value);
      if (hash !== null) expected.add(hash);
    }
    t.same(sketchColumn(column, chunk.rows).registers, expected.registers, path);
  }
  // A dictionary entry no row uses (rows dropped since it was made) is not counted.
  const column = { path: 'p', tags: new Uint8Array([TAG_STR, TAG_STR]), num: null, str: new Int32Array([1, 1]), dict: ['unused', 'used'], lists: null };
  t.equal(Math.round(sketchColumn(column, 2).estimate()), 1, 'only the entry the rows use');
});
