/**
 * Shapes finalized partial states into the response bodies of docs/api.md §6: a scalar, a list
 * of buckets, a list of groups (sorted by group values, nulls last, or by order_by, then limit),
 * or buckets of groups. Empty buckets hold 0 for counts, [] for select_unique, else null.
 */
import type { CountAggregator, Aggregator } from '../aggregate/index.js';
import { compareValues } from '../eval/compare.js';
import { TIME_PATHS } from '../plan/filter.js';
import type { GroupTable, GroupValue } from '../eval/group-by.js';
import type { AggregatePlan, AggregateSpec, OrderBy } from '../plan/plan.js';

export interface AggregateOutcome {
  readonly aggregators: readonly Aggregator[];
  readonly rowsPerCell: CountAggregator;
  readonly groups: GroupTable | null;
  readonly bucketCount: number;
}

type Row = Record<string, unknown>;

export function shapeAggregate(plan: AggregatePlan, outcome: AggregateOutcome): Record<string, unknown> {
  const buckets = plan.buckets;
  if (buckets === null) return { result: cellResult(plan, outcome, 0, 0) };
  const result = [];
  for (let b = 0; b < outcome.bucketCount; b++) {
    result.push({
      timeframe: { start: buckets.labels[b], end: buckets.labels[b + 1] },
      value: cellResult(plan, outcome, b, b),
    });
  }
  return { result };
}

/** The result of bucket `bucket` (0 without interval); `cell` is its cell without group_by. */
function cellResult(plan: AggregatePlan, outcome: AggregateOutcome, bucket: number, cell: number): unknown {
  const groups = outcome.groups;
  if (groups === null) {
    const empty = plan.buckets !== null && outcome.rowsPerCell.finalize(cell) === 0;
    return valueOf(plan, outcome, cell, empty);
  }
  const rows: { tuple: GroupValue[]; row: Row }[] = [];
  for (let g = 0; g < groups.size; g++) {
    const groupCell = g * outcome.bucketCount + bucket;
    if (outcome.rowsPerCell.finalize(groupCell) === 0) continue;
    const tuple = groups.tuple(g);
    const row: Row = {};
    groups.paths.forEach((path, p) => (row[path] = outputValue(path, tuple[p])));
    const value = valueOf(plan, outcome, groupCell, false);
    if (plan.multi) Object.assign(row, value);
    else row.result = value;
    rows.push({ tuple, row });
  }
  rows.sort((a, b) => compareTuples(a.tuple, b.tuple));
  let ordered = rows.map((entry) => entry.row);
  if (plan.orderBy.length > 0) ordered = orderRows(ordered, plan.orderBy);
  return plan.limit === null ? ordered : ordered.slice(0, plan.limit);
}

function valueOf(plan: AggregatePlan, outcome: AggregateOutcome, cell: number, empty: boolean): unknown {
  if (!plan.multi) return finalizeOne(plan.aggregates[0], outcome.aggregators[0], cell, empty);
  const object: Row = {};
  plan.aggregates.forEach((spec, a) => {
    object[spec.label!] = finalizeOne(spec, outcome.aggregators[a], cell, empty);
  });
  return object;
}

function finalizeOne(spec: AggregateSpec, aggregator: Aggregator, cell: number, empty: boolean): unknown {
  if (!empty) return aggregator.finalize(cell);
  if (spec.kind === 'count' || spec.kind === 'count_unique') return 0;
  return spec.kind === 'select_unique' ? [] : null;
}

function outputValue(path: string, value: GroupValue): unknown {
  if (TIME_PATHS.has(path) && typeof value === 'number') return new Date(value).toISOString();
  return value;
}

function compareTuples(a: readonly GroupValue[], b: readonly GroupValue[]): number {
  for (let p = 0; p < a.length; p++) {
    const order = compareValues(a[p], b[p]);
    if (order !== 0) return order;
  }
  return 0;
}

/** Stable sort by the order_by keys; earlier keys win. */
function orderRows(rows: Row[], orderBy: readonly OrderBy[]): Row[] {
  return rows.slice().sort((a, b) => {
    for (const key of orderBy) {
      const order = compareValues(a[key.property], b[key.property]);
      if (order !== 0) return key.descending ? -order : order;
    }
    return 0;
  });
}
