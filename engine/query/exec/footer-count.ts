/**
 * A plain count (no filter, group_by or interval) over segments each wholly inside the timeframe
 * is the sum of their footers' rows (execute.ts footerAnswer), which the coordinator holds: run
 * here, on the coordinator, by the same code a worker runs, it neither waits for a worker's turn
 * (behind a long query, or a segment being warmed right after a load) nor posts the footers of
 * fresh segments first. Anything else goes to the workers: a segment the timeframe cuts (its
 * times would be read), pending row deletes, buffered rows outside the timeframe.
 */
import { ColumnViews } from '../eval/columns.js';
import type { Plan } from '../plan/plan.js';
import { runTask, type QueryTask } from './task.js';

/** A count (or counts) with no filter, group_by or interval: what countFromFooters may answer. */
export function isPlainCount(plan: Plan): boolean {
  return plan.kind === 'aggregate' && plan.filters.length === 0 && plan.groupBy === null && plan.buckets === null &&
    plan.aggregates.every((spec) => spec.kind === 'count');
}

/** The body of `task` when its footers answer it whole (see above), else null. */
export function countFromFooters(task: QueryTask): Record<string, unknown> | null {
  const plan = task.plan;
  if (plan.kind !== 'aggregate' || !isPlainCount(plan) || task.sources.length !== 1) return null;
  const source = task.sources[0];
  if ((source.deletes ?? []).some((entry) => entry.kind === 'rows')) return null;
  const { startMs, endMs } = plan.range;
  for (const { footer } of source.segments) {
    if (footer.tsMax < startMs || footer.tsMin >= endMs) continue;
    if (footer.tsMin < startMs || footer.tsMax >= endMs) return null;
  }
  const views = new ColumnViews();
  const memory = source.memory;
  if (memory !== null && memory.rows > 0) {
    const [tsMin, tsMax] = views.tsRange(memory);
    if (tsMin < startMs || tsMax >= endMs) return null;
  }
  // No segment reader: a segment the footers did not answer would be an error, never a read.
  return runTask(task, { views, cache: null });
}
