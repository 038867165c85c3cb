/**
 * PartitionedPairSet: one small set up to 16,384 distinct keys, partitions past it. Whatever the
 * way keys arrive (one by one, merged in any mix of small and partitioned sets, after a trip
 * between threads), it holds exactly the distinct keys, compared with a JS Set of the same keys.
 */
import t from 'tap';
import { PartitionedPairSet } from '../../../../../engine/query/eval/hash-table.js';
import { StateReader, StateWriter } from '../../../../../engine/query/eval/state-io.js';
import { random } from '../../../../helpers/query/test-support.js';

/** `count` keys drawn from `distinct` possible ones (so with repeats), including (0, 0) and negatives. */
function keys(count: number, distinct: number, seed: number): [number, number][] {
  const next = random(seed);
  return Array.from({ length: count }, () => {
    const k = Math.floor(next() * distinct);
    return k === 0 ? [0, 0] : [Math.imul(k, 0x9e3779b1) | 0, (k * 7919) - (distinct >> 1)];
  });
}

function setOf(...lists: [number, number][][]): Set<string> {
  return new Set(lists.flat().map(([hi, lo]) => `${hi},${lo}`));
}

function contents(set: PartitionedPairSet): string[] {
  const out: string[] = [];
  set.forEach((hi, lo) => out.push(`${hi},${lo}`));
  return out.sort();
}

function filled(list: [number, number][]): PartitionedPairSet {
  const set = new PartitionedPairSet();
  for (const [hi, lo] of list) set.add(hi, lo);
  return set;
}

/** A copy that went through the partial-state codec (state-io.ts), as partial states go between threads. */
function travelled(set: PartitionedPairSet): PartitionedPairSet {
  const writer = new StateWriter();
  set.encode(writer);
  const reader = new StateReader(writer.finish());
  const copy = PartitionedPairSet.decode(reader);
  if (reader.remaining !== 0) throw new Error('bytes left over');
  return copy;
}

t.test('holds the distinct keys whether few or many, added one by one', async (t) => {
  for (const [count, distinct] of [[0, 1], [1, 1], [200, 50], [40_000, 16_000], [40_000, 17_000], [600_000, 16_000], [300_000, 120_000]]) {
    const list = keys(count, distinct, count + distinct);
    const expected = setOf(list);
    const set = filled(list);
    t.equal(set.size, expected.size, `${count} keys of ${distinct}: size`);
    t.same(contents(set), [...expected].sort(), `${count} keys of ${distinct}: the keys`);
    t.equal(set.partitioned, expected.size > 16_384, `${count} keys of ${distinct}: partitioned past 16,384 distinct keys`);
    const copy = travelled(set);
    t.same(contents(copy), [...expected].sort(), `${count} keys of ${distinct}: the same after a trip between threads`);
    copy.add(123_456, -7);
    t.equal(copy.size, expected.size + (expected.has('123456,-7') ? 0 : 1), `${count} keys of ${distinct}: takes keys after the trip`);
  }
});

t.test('addAll merges small and partitioned sets in every combination', async (t) => {
  const sizes: Record<string, [number, number]> = { small: [3_000, 2_000], partitioned: [60_000, 30_000] };
  for (const [left, [leftCount, leftDistinct]] of Object.entries(sizes)) {
    for (const [right, [rightCount, rightDistinct]] of Object.entries(sizes)) {
      // Overlapping key ranges: some keys are in both.
      const a = keys(leftCount, leftDistinct, 1);
      const b = keys(rightCount, rightDistinct, 2);
      const expected = [...setOf(a, b)].sort();
      const target = filled(a);
      target.addAll(travelled(filled(b)));
      t.same(contents(target), expected, `${left} + ${right}: the union`);
      t.equal(target.size, expected.length, `${left} + ${right}: its size`);
      t.equal(target.partitioned, left === 'partitioned' || right === 'partitioned' || expected.length > 16_384,
        `${left} + ${right}: partitioned when either was or the union is past 16,384 keys`);
    }
  }
  // Two small sets whose union outgrows the small set.
  const a = keys(16_000, 30_000, 3);
  const b = keys(16_000, 30_000, 4).map(([hi, lo]) => [hi ^ 0x55, lo] as [number, number]);
  const union = filled(a);
  union.addAll(filled(b));
  t.same(contents(union), [...setOf(a, b)].sort(), 'small + small past the bound: the union');
  t.ok(setOf(a, b).size > 16_384 && union.partitioned, 'small + small past the bound: partitioned');
  t.notOk(filled(a).partitioned, 'each alone: one small set');
});

t.test('storedSize is a lower bound that flushing makes exact', async (t) => {
  const set = new PartitionedPairSet();
  for (let k = 0; k < 100; k++) set.add(k, k);
  t.ok(set.storedSize <= 100, 'buffered keys may not be counted yet');
  t.equal(set.size, 100);
  t.equal(set.storedSize, 100, 'counted once flushed');
});

t.test('addKeys adds runs of keys as add() does one by one, across buffer flushes and partitioning', async (t) => {
  // Runs of 1 to 600,000 keys (past the 524,288-key buffer), mixed with single adds.
  const runs = [3, 20_000, 600_000, 1, 50_000].map((count, index) => keys(count, 20_000 * (index + 1), 40 + index));
  const byRuns = new PartitionedPairSet();
  const oneByOne = new PartitionedPairSet();
  for (const run of runs) {
    byRuns.add(5, 5);
    byRuns.addKeys(Int32Array.from(run, ([hi]) => hi), Int32Array.from(run, ([, lo]) => lo), run.length);
    for (const [hi, lo] of [[5, 5] as [number, number], ...run]) oneByOne.add(hi, lo);
  }
  const expected = setOf([[5, 5]], ...runs);
  const added = contents(byRuns);
  t.equal(added.length, expected.size);
  t.ok(added.every((key) => expected.has(key)), 'exactly the keys added');
  t.same(added, contents(oneByOne));
  const small = new PartitionedPairSet();
  small.addKeys(new Int32Array([1, 2, 3, 1]), new Int32Array([9, 9, 9, 9]), 3);
  t.equal(small.size, 3, 'only the first `count` keys');
  t.notOk(small.partitioned);
});
