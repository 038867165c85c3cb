/**
 * Dense ids of distinct keys (key-ids.ts) and the distinct count that sets their bits
 * (count-unique.ts markIds): a key has one id in every dictionary, the bits give back exactly
 * the keys set, the table clears past its bytes; and a count_unique over real segment files
 * whose dictionaries have ids answers exactly as one over their keys, on seeded random data
 * (repeated ids across segments, numbers and nulls mixed in, rows selected or not, exact and
 * past the exact limit).
 */
import t from 'tap';
import { PARTITION_BITS, pairHash } from '../../../../../engine/query/eval/hash-table.js';
import { KeyIds } from '../../../../../engine/query/eval/key-ids.js';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { createAggregator, type Aggregator } from '../../../../../engine/query/aggregate/index.js';
import type { ExecLimits } from '../../../../../engine/query/plan/plan.js';
import { SegmentColumn } from '../../../../../engine/storage/segment/decode-column.js';
import { readSegment } from '../../../../../engine/storage/segment/reader.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';
import { mulberry32 } from '../../../../helpers/random.js';

function keysOf(values: readonly number[]): { hi: Int32Array; lo: Int32Array } {
  return { hi: Int32Array.from(values, (v) => Math.imul(v, 0x9e3779b1)), lo: Int32Array.from(values, (v) => v ^ 0x5bd1e995) };
}

t.test('a key has the same id in every dictionary, and the bits of ids give back exactly their keys', async (t) => {
  const ids = new KeyIds(64 << 20);
  const first = Array.from({ length: 5000 }, (_, i) => i);
  const second = Array.from({ length: 5000 }, (_, i) => 2500 + i);
  const a = keysOf(first);
  const b = keysOf(second);
  const idsA = ids.assign(a.hi, a.lo, first.length)!;
  const idsB = ids.assign(b.hi, b.lo, second.length)!;
  t.equal(ids.size, 7500, 'each distinct key once');
  t.same([...idsB.subarray(0, 2500)], [...idsA.subarray(2500)], 'the 2,500 keys in both have the same ids');
  t.equal(new Set([...idsA, ...idsB]).size, 7500, 'distinct keys, distinct ids');
  t.ok(Math.max(...idsA, ...idsB) < ids.idLimit, 'every id below the limit');
  // The bits of every third key of `second`.
  const bitmap = new Int32Array(Math.ceil(ids.idLimit / 32));
  const want = new Set<string>();
  for (let k = 0; k < second.length; k += 3) {
    bitmap[idsB[k] >>> 5] |= 1 << (idsB[k] & 31);
    want.add(`${b.hi[k]}/${b.lo[k]}`);
  }
  const hi = new Int32Array(ids.size);
  const lo = new Int32Array(ids.size);
  const starts = new Int32Array((1 << PARTITION_BITS) + 1);
  ids.keysOf(bitmap, hi, lo, starts);
  const got = new Set<string>();
  for (let p = 0; p < 1 << PARTITION_BITS; p++) {
    for (let k = starts[p]; k < starts[p + 1]; k++) {
      if (pairHash(hi[k], lo[k]) >>> (32 - PARTITION_BITS) !== p) t.fail(`key ${hi[k]}/${lo[k]} in partition ${p}`);
      got.add(`${hi[k]}/${lo[k]}`);
    }
  }
  t.equal(starts[1 << PARTITION_BITS], want.size);
  t.same([...got].sort(), [...want].sort());
});

t.test('past its bytes the table refuses keys, and clears (a new generation) once it has refused as many as it holds', async (t) => {
  const changes: number[] = [];
  const ids = new KeyIds(1 << 20, (bytes) => changes.push(bytes));
  const generation = ids.generation;
  t.same(changes, [], 'a table no dictionary has used takes nothing');
  const many = keysOf(Array.from({ length: 10_000 }, (_, i) => i));
  const manyIds = ids.assign(many.hi, many.lo, 10_000);
  t.ok(manyIds !== null);
  t.equal(ids.generation, generation, 'it fits');
  const others = keysOf(Array.from({ length: 9_000 }, (_, i) => 100_000 + i));
  t.equal(ids.assign(others.hi, others.lo, 9_000), null, 'the second set does not fit beside the first: refused');
  t.equal(ids.generation, generation, 'not cleared: the ids given stay valid');
  t.same(ids.assign(many.hi, many.lo, 10_000), manyIds, 'the first set keeps its ids');
  t.ok(ids.assign(others.hi, others.lo, 9_000) !== null, 'refused twice, 18,000 keys: more than the 10,000 held');
  t.equal(ids.generation, generation + 1, 'cleared');
  t.equal(ids.size, 9_000, 'only the second set');
  const huge = keysOf(Array.from({ length: 20_000 }, (_, i) => i));
  t.equal(ids.assign(huge.hi, huge.lo, 20_000), null, 'more than the table may ever take');
  t.ok(changes.reduce((sum, bytes) => sum + bytes, 0) <= 1 << 20, 'what it told of stays within its bytes');
});

function limits(exact: number): ExecLimits {
  return {
    countUniqueExactMax: exact, percentileExactMax: exact, groupsMax: 1e6, extractionScanMax: 1e6,
    extractionResultMax: 1e5, funnelActorsMax: 1e6, funnelStateBytesMax: 1e8, responseBytesMax: 1.5e8,
  };
}

t.test('a distinct count over dictionaries with ids answers as one over their keys', async (t) => {
  const rnd = mulberry32(7);
  // Users repeat across segments; a few rows hold a number, a null or nothing instead.
  const refs = writeDaySegments(t, 6, 3000, (s) => {
    const r = rnd();
    if (s === 2) return { user: `u${Math.floor(rnd() * 2000)}` }; // every row a string
    return { user: r < 0.03 ? 7 : r < 0.05 ? null : r < 0.08 ? undefined : `u${Math.floor(rnd() * 2000)}` };
  });
  const chunks = refs.map((ref) => readSegment(ref.file, ['user']));
  const withIds = new ColumnViews(new KeyIds(64 << 20));
  const plain = new ColumnViews();
  for (const chunk of chunks) {
    const column = chunk.columns.get('user');
    if (column instanceof SegmentColumn) withIds.assignIds(column);
  }
  t.ok(chunks.every((chunk) => withIds.denseIds(chunk.columns.get('user') as SegmentColumn) !== null), 'every dictionary has ids');
  t.ok(withIds.allCodesUsed(chunks[2].columns.get('user')!), 'the all-strings segment takes its codes in order');

  for (const exact of [1_000_000, 500]) {
    const run = (views: ColumnViews, parts: number): Aggregator[] => {
      const spec = { label: null, kind: 'count_unique' as const, targetProperty: 'user', percentile: null, forceExact: false };
      const aggregators = Array.from({ length: parts }, () => createAggregator(spec, limits(exact), views));
      chunks.forEach((chunk, c) => {
        const column = chunk.columns.get('user')!;
        // Odd segments: every third row only (a filter); even ones whole.
        const idx = c % 2 === 1
          ? Int32Array.from({ length: Math.ceil(chunk.rows / 3) }, (_, k) => 3 * k)
          : Int32Array.from({ length: chunk.rows }, (_, i) => i);
        aggregators[c % parts].update({
          column, idx, n: idx.length, cells: null, cellCount: 1, dense: c % 2 === 0, tagMask: views.tagMask(column),
        });
      });
      return aggregators;
    };
    const finish = (aggregator: Aggregator): unknown => {
      aggregator.check(); // past the exact limit: to sketches, as a query does
      return aggregator.finalize(0);
    };
    const want = finish(run(plain, 1)[0]);
    t.equal(finish(run(withIds, 1)[0]), want, `exact limit ${exact}: one pass`);
    const [left, right] = run(withIds, 2);
    left.merge(right);
    t.equal(finish(left), want, `exact limit ${exact}: two halves merged`);
    if (exact > 1000) t.ok((want as number) > 1500, `${String(want)} distinct values`);
  }
});
