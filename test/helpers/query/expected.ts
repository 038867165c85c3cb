/**
 * The reference's whole answer to a query (test support): the events the plan selects, grouped
 * and bucketed as the API shapes them, each cell computed by analyze(); and deep equality with a
 * relative tolerance on numbers, to compare an engine's answer with it.
 */
import { compareValues } from '../../../engine/query/eval/compare.js';
import type { AggregatePlan } from '../../../engine/query/plan/plan.js';
import { parseRequest } from '../../../engine/query/plan/request.js';
import { analyze, matches, valueAt } from './reference.js';
import type { TestEvent } from './test-support.js';

/** The reference answer of `kind` over `events`, relative timeframes resolved at `nowMs`. */
export function expectedAnswer(
  events: readonly TestEvent[], kind: string, target: string | null, params: Record<string, unknown>, nowMs: number,
): unknown {
  const plan = parseRequest(kind, params, { nowMs }) as AggregatePlan;
  const selected = events.filter((event) => event.ts >= plan.range.startMs &&
    event.ts < plan.range.endMs && plan.filters.every((node) => matches(event, node)));
  const value = (subset: TestEvent[]) => {
    const v = analyze(kind, subset, target, 90);
    return Array.isArray(v) ? [...v].sort(compareValues) : v;
  };
  const groupRows = (subset: TestEvent[]) => {
    const paths = plan.groupBy!;
    const groups = new Map<string, { tuple: unknown[]; events: TestEvent[] }>();
    for (const event of subset) {
      const tuple = paths.map((p) => valueAt(event, p) ?? null);
      const key = JSON.stringify(tuple);
      if (!groups.has(key)) groups.set(key, { tuple, events: [] });
      groups.get(key)!.events.push(event);
    }
    return [...groups.values()].sort((a, b) => {
      for (let p = 0; p < paths.length; p++) {
        const order = compareValues(a.tuple[p], b.tuple[p]);
        if (order) return order;
      }
      return 0;
    }).map(({ tuple, events: members }) => {
      const row: Record<string, unknown> = {};
      paths.forEach((p, i) => (row[p] = tuple[i]));
      row.result = value(members);
      return row;
    });
  };
  const cell = (subset: TestEvent[]) => (plan.groupBy ? groupRows(subset) : value(subset));
  if (!plan.buckets) return { result: cell(selected) };
  const { edges, labels } = plan.buckets;
  return {
    result: edges.slice(0, -1).map((edge, b) => {
      const subset = selected.filter((event) => event.ts >= edge && event.ts < edges[b + 1]);
      let v = cell(subset);
      if (!plan.groupBy && subset.length === 0) {
        v = kind === 'count' || kind === 'count_unique' ? 0 : kind === 'select_unique' ? [] : null;
      }
      return { timeframe: { start: labels[b], end: labels[b + 1] }, value: v };
    }),
  };
}

/** Deep equality with a relative tolerance on numbers (sums added in another order). */
export function close(actual: unknown, wanted: unknown, where = '$'): string | null {
  if (typeof wanted === 'number' && typeof actual === 'number') {
    return Math.abs(actual - wanted) <= 1e-9 * Math.max(1, Math.abs(wanted)) ? null : `${where}: ${actual} != ${wanted}`;
  }
  if (Array.isArray(wanted)) {
    if (!Array.isArray(actual) || actual.length !== wanted.length) {
      return `${where}: ${JSON.stringify(actual)?.slice(0, 300)} != ${JSON.stringify(wanted).slice(0, 300)}`;
    }
    for (let i = 0; i < wanted.length; i++) {
      const problem = close(actual[i], wanted[i], `${where}[${i}]`);
      if (problem) return problem;
    }
    return null;
  }
  if (typeof wanted === 'object' && wanted !== null) {
    if (typeof actual !== 'object' || actual === null) return `${where}: not an object`;
    for (const key of new Set([...Object.keys(wanted), ...Object.keys(actual)])) {
      const problem = close((actual as Record<string, unknown>)[key], (wanted as Record<string, unknown>)[key], `${where}.${key}`);
      if (problem) return problem;
    }
    return null;
  }
  return Object.is(actual, wanted) ? null : `${where}: ${JSON.stringify(actual)} != ${JSON.stringify(wanted)}`;
}
