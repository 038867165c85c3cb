/**
 * Laws every aggregate obeys: finalize(merge(partial(a), partial(b))) equals
 * finalize(partial(a ++ b)) per cell; empty input finalizes to the spec's empty value; nulls and
 * missing values are not values. Also across the exact → sketch switch.
 */
import t from 'tap';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import type { AggregateKind, ExecLimits } from '../../../../../engine/query/plan/plan.js';
import { makeChunk, randomEvents } from '../../../../helpers/query/test-support.js';
import { createAggregator, type Aggregator, type UpdateInput } from '../../../../../engine/query/aggregate/index.js';

const KINDS: AggregateKind[] = ['count', 'count_unique', 'minimum', 'maximum', 'sum', 'average',
  'median', 'percentile', 'standard_deviation', 'select_unique'];
const EMPTY: Record<string, unknown> = { count: 0, count_unique: 0, sum: 0, select_unique: [] };
const CELLS = 4;

function limits(exact: number): ExecLimits {
  return {
    countUniqueExactMax: exact, percentileExactMax: exact, groupsMax: 1e6, extractionScanMax: 1e6,
    extractionResultMax: 1e5, funnelActorsMax: 1e6, funnelStateBytesMax: 1e8, responseBytesMax: 1.5e8,
  };
}

const views = new ColumnViews();
const events = randomEvents(5, 3000, 0, 1000);
const chunkA = makeChunk(events.slice(0, 1700));
const chunkB = makeChunk(events.slice(1700));

function feed(aggregator: Aggregator, chunk: ReturnType<typeof makeChunk>, target: string): void {
  const idx = Int32Array.from({ length: chunk.rows }, (_, i) => i);
  const cells = Int32Array.from({ length: chunk.rows }, (_, i) => (i * 7) % CELLS);
  const column = chunk.columns.get(target);
  const input: UpdateInput = {
    column, idx, n: chunk.rows, cells, cellCount: CELLS, dense: true,
    tagMask: column ? views.tagMask(column) : 0,
  };
  aggregator.update(input);
}

function near(a: unknown, b: unknown, tolerance: number): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    return Math.abs(a - b) <= tolerance * Math.max(1, Math.abs(b));
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

for (const exact of [1_000_000, 50]) {
  for (const kind of KINDS) {
    t.test(`${kind} merges like one pass (exact limit ${exact})`, async (t) => {
      const target = kind === 'count_unique' || kind === 'select_unique' ? 'user' : 'price';
      const spec = { label: null, kind, targetProperty: target, percentile: 90, forceExact: false };
      const whole = createAggregator(spec, limits(exact), views);
      feed(whole, chunkA, target);
      feed(whole, chunkB, target);
      const left = createAggregator(spec, limits(exact), views);
      const right = createAggregator(spec, limits(exact), views);
      feed(left, chunkA, target);
      feed(right, chunkB, target);
      left.merge(right);
      // Sketches (above the exact limit) are order-insensitive but approximate.
      const tolerance = exact < 1000 && (kind === 'median' || kind === 'percentile') ? 0.02 : 1e-9;
      for (let cell = 0; cell < CELLS; cell++) {
        t.ok(near(left.finalize(cell), whole.finalize(cell), tolerance),
          `cell ${cell}: ${JSON.stringify(left.finalize(cell))} vs ${JSON.stringify(whole.finalize(cell))}`);
      }
      const empty = createAggregator(spec, limits(exact), views);
      t.same(empty.finalize(0), kind in EMPTY ? EMPTY[kind] : null, 'empty input');
      t.doesNotThrow(() => empty.check(), 'no values is not an error');
    });
  }
}

t.test('nulls and missing values are not values', async (t) => {
  const chunk = makeChunk([
    { ts: 1, props: { v: null } }, { ts: 2, props: {} }, { ts: 3, props: { v: 4 } }, { ts: 4, props: { v: 4 } },
  ]);
  for (const [kind, want] of [['count_unique', 1], ['average', 4], ['select_unique', [4]], ['count', 4]] as const) {
    const aggregator = createAggregator(
      { label: null, kind, targetProperty: 'v', percentile: null, forceExact: false }, limits(100), views);
    const column = chunk.columns.get('v')!;
    aggregator.update({
      column, idx: Int32Array.of(0, 1, 2, 3), n: 4, cells: null, cellCount: 1, dense: true,
      tagMask: views.tagMask(column),
    });
    t.same(aggregator.finalize(0), want, kind);
  }
});

t.test('grouped average and count over a dense numeric column (the laned per-cell sums)', async (t) => {
  // 1,001 rows (not a multiple of four), skewed over 5 cells; every row numeric and selected.
  const rows = 1001;
  const values = Array.from({ length: rows }, (_, i) => ((i * 37) % 101) / 4);
  const chunk = makeChunk(values.map((price, i) => ({ ts: i, props: { price } })));
  const cells = Int32Array.from({ length: rows }, (_, i) => (i % 3 === 0 ? 0 : i % 5));
  const idx = Int32Array.from({ length: rows }, (_, i) => i);
  const column = chunk.columns.get('price')!;
  t.equal(views.tagMask(column), 1 << 2, 'all numbers');
  const average = createAggregator({ label: null, kind: 'average', targetProperty: 'price', percentile: null, forceExact: false }, limits(1e6), views);
  const count = createAggregator({ label: null, kind: 'count', targetProperty: null, percentile: null, forceExact: false }, limits(1e6), views);
  for (const aggregator of [average, count]) {
    aggregator.update({ column, idx, n: rows, cells, cellCount: 5, dense: true, tagMask: views.tagMask(column) });
  }
  for (let cell = 0; cell < 5; cell++) {
    const mine = values.filter((_, i) => cells[i] === cell);
    const mean = mine.reduce((a, b) => a + b, 0) / mine.length;
    t.ok(Math.abs((average.finalize(cell) as number) - mean) < 1e-9, `average of cell ${cell}`);
    t.equal(count.finalize(cell), mine.length, `count of cell ${cell}`);
  }
});
