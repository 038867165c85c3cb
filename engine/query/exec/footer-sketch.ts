/**
 * count_unique from the segments' HyperLogLog sketches: for an unfiltered, ungrouped count_unique
 * whose footers alone already show clearly more distinct values than the exact limit, the answer
 * is an estimate anyway, so merge the footer sketches of segments wholly inside the timeframe and
 * sketch only the rows of boundary segments and the write buffer. Otherwise returns null and the
 * scan counts exactly. Hashes match storage/segment/sketches.ts by using its sketchColumn.
 */
import { HLL_PRECISION } from '../../base/limits.js';
import { HyperLogLog } from '../../sketch/hyperloglog.js';
import type { Column, ColumnChunk, ScanSource, SegmentRef } from '../../storage/chunk.js';
import { sketchColumn } from '../../storage/segment/sketches.js';
import { TIME_PATHS } from '../plan/filter.js';
import type { AggregatePlan } from '../plan/plan.js';
import { selectRange, type ExecEnv, type ScanBuffers } from './scan.js';

/** How far above the exact limit the footers' estimate must be: HLL's error is ~0.8%. */
const CLEARLY_ABOVE = 1.05;

/**
 * Whether countUniqueFromSketches may answer `plan` (from the plan alone): only then does a
 * worker's share of a fanned-out query need the whole source's buffered rows (service.ts).
 */
export function mayCountFromSketches(plan: AggregatePlan): boolean {
  const spec = plan.aggregates[0];
  return plan.aggregates.length === 1 && spec.kind === 'count_unique' && !spec.forceExact &&
    plan.filters.length === 0 && plan.groupBy === null && plan.buckets === null && !TIME_PATHS.has(spec.targetProperty!);
}

export function countUniqueFromSketches(
  plan: AggregatePlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers,
): number | null {
  const spec = plan.aggregates[0];
  const cache = env.cache;
  if (!mayCountFromSketches(plan) || cache === null || (source.deletes?.length ?? 0) > 0) return null;
  const target = spec.targetProperty!;
  const { startMs, endMs } = plan.range;
  // An upper bound on the distinct values first: when it is within the exact limit (a column
  // with few values per segment, or few rows), merging sketches cannot show "clearly above".
  let upperBound = source.memory?.rows ?? 0;
  for (const ref of source.segments) {
    const stats = ref.footer.columns[target];
    if (stats === undefined || ref.footer.tsMax < startMs || ref.footer.tsMin >= endMs) continue;
    upperBound += cache.footer(ref).values[target]?.values.length ?? stats.present;
    if (upperBound > env.limits.countUniqueExactMax * CLEARLY_ABOVE) break;
  }
  if (upperBound <= env.limits.countUniqueExactMax * CLEARLY_ABOVE) return null;
  const union = new HyperLogLog(HLL_PRECISION);
  const boundaryRefs: SegmentRef[] = [];
  let insideRows = 0;
  for (const ref of source.segments) {
    const footer = ref.footer;
    if (footer.tsMax < startMs || footer.tsMin >= endMs) continue;
    if (footer.tsMin < startMs || footer.tsMax >= endMs) {
      boundaryRefs.push(ref);
      continue;
    }
    insideRows += footer.rows;
    const bytes = cache.footer(ref).sketches[target];
    if (bytes === undefined) continue;
    const sketch = HyperLogLog.deserialize(bytes);
    if (sketch.precision !== union.precision) return null;
    union.merge(sketch);
  }
  if (union.estimate() <= env.limits.countUniqueExactMax * CLEARLY_ABOVE) return null;
  const boundary: ColumnChunk[] = boundaryRefs.map((ref) => cache.load(ref, [target]));
  if (source.memory !== null && source.memory.rows > 0) boundary.push(source.memory);
  for (const chunk of boundary) {
    buffers.ensure(chunk.rows);
    const n = selectRange(chunk.ts, chunk.rows, plan.range, buffers.idx);
    buffers.eventsScanned += n;
    const column = chunk.columns.get(target);
    if (column !== undefined) union.merge(sketchColumn(subset(column, buffers.idx, n), n));
  }
  buffers.eventsScanned += insideRows;
  return Math.round(union.estimate());
}

/** The rows idx[0 .. n) of a column as a column of n rows (dictionary shared). */
function subset(column: Column, idx: Int32Array, n: number): Column {
  const pick = <T extends Float64Array | Int32Array | Uint8Array>(source: ArrayLike<number>, make: (n: number) => T): T => {
    const out = make(n);
    for (let k = 0; k < n; k++) out[k] = source[idx[k]];
    return out;
  };
  return {
    path: column.path,
    tags: pick(column.tags, (size) => new Uint8Array(size)),
    num: column.num && pick(column.num, (size) => new Float64Array(size)),
    str: column.str && pick(column.str, (size) => new Int32Array(size)),
    dict: column.dict,
    lists: column.lists && Array.from({ length: n }, (_, k) => column.lists![idx[k]]),
  };
}
