/**
 * Plan node types: what request.ts produces from a query's JSON and what execute.ts runs. Every
 * node is plain readonly data (no functions, no classes) so a plan can be posted to a worker.
 * Wire names (snake_case) stop at request.ts; fields here are camelCase.
 */

/**
 * THE list of analyses: request validation, the HTTP route, metrics labels and the aggregate
 * registry (aggregate/index.ts, whose switch fails to compile when a kind has no case) derive
 * from it; the explorer's copy is pinned to it by a test.
 */
export const AGGREGATE_KINDS = [
  'count', 'count_unique', 'minimum', 'maximum', 'sum', 'average', 'median', 'percentile',
  'standard_deviation', 'select_unique',
] as const;

export type AggregateKind = (typeof AGGREGATE_KINDS)[number];

export const ANALYSES = [...AGGREGATE_KINDS, 'extraction', 'funnel', 'multi_analysis'] as const;

export type Analysis = (typeof ANALYSES)[number];

/** A scalar a filter compares against; timestamps of svc.* paths are already ms numbers. */
export type FilterScalar = number | string | boolean | null;

export type FilterNode =
  | { readonly kind: 'compare'; readonly path: string; readonly operator: CompareOperator;
      readonly value: FilterScalar }
  | { readonly kind: 'set'; readonly path: string; readonly negate: boolean;
      readonly values: readonly FilterScalar[] }
  | { readonly kind: 'exists'; readonly path: string; readonly exists: boolean }
  | { readonly kind: 'text'; readonly path: string; readonly operator: TextOperator;
      readonly negate: boolean; readonly value: FilterScalar }
  | { readonly kind: 'within'; readonly path: string; readonly lng: number; readonly lat: number;
      readonly miles: number }
  | { readonly kind: 'or'; readonly any: readonly FilterNode[] };

export type CompareOperator = 'eq' | 'ne' | 'lt' | 'lte' | 'gt' | 'gte';
/** contains (substring or list element), starts_with, regex (value is the pattern source). */
export type TextOperator = 'contains' | 'starts_with' | 'regex';

/** A relative or absolute timeframe resolved to instants: [startMs, endMs). */
export interface TimeRange {
  readonly startMs: number;
  readonly endMs: number;
}

/** The interval buckets: edges[0] = start, edges[n] = end; bucket b is [edges[b], edges[b+1]). */
export interface Buckets {
  readonly edges: readonly number[];
  /** ISO strings of the edges in the query's timezone, for the response. */
  readonly labels: readonly string[];
}

export interface AggregateSpec {
  /** multi_analysis label, or null for a single analysis. */
  readonly label: string | null;
  readonly kind: AggregateKind;
  readonly targetProperty: string | null;
  /** 0..100 for percentile, 50 for median. */
  readonly percentile: number | null;
  readonly forceExact: boolean;
}

export interface OrderBy {
  /** "result", a multi_analysis label, or a group_by property. */
  readonly property: string;
  readonly descending: boolean;
}

export interface AggregatePlan {
  readonly kind: 'aggregate';
  readonly analysis: Analysis;
  readonly collection: string;
  readonly range: TimeRange;
  readonly filters: readonly FilterNode[];
  readonly aggregates: readonly AggregateSpec[];
  /** True for multi_analysis: results are objects keyed by label. */
  readonly multi: boolean;
  readonly groupBy: readonly string[] | null;
  readonly buckets: Buckets | null;
  readonly orderBy: readonly OrderBy[];
  readonly limit: number | null;
  readonly includeMetadata: boolean;
}

export interface ExtractionPlan {
  readonly kind: 'extraction';
  readonly collection: string;
  readonly range: TimeRange;
  readonly filters: readonly FilterNode[];
  readonly propertyNames: readonly string[] | null;
  readonly latest: number | null;
  readonly includeMetadata: boolean;
}

export interface FunnelStepPlan {
  readonly collection: string;
  readonly actorProperty: string;
  readonly range: TimeRange;
  readonly filters: readonly FilterNode[];
  readonly optional: boolean;
  readonly inverted: boolean;
  readonly withActors: boolean;
  /** The step as echoed in the response's "steps". */
  readonly normalized: Readonly<Record<string, unknown>>;
}

export interface FunnelPlan {
  readonly kind: 'funnel';
  readonly steps: readonly FunnelStepPlan[];
  readonly includeMetadata: boolean;
}

export type Plan = AggregatePlan | ExtractionPlan | FunnelPlan;

/** The limits a plan's execution enforces; limits.ts values unless a test overrides them. */
export interface ExecLimits {
  readonly countUniqueExactMax: number;
  readonly percentileExactMax: number;
  readonly groupsMax: number;
  readonly extractionScanMax: number;
  readonly extractionResultMax: number;
  readonly funnelActorsMax: number;
  /** Bytes of one node's funnel step actor sets (cluster). */
  readonly funnelStateBytesMax: number;
  readonly responseBytesMax: number;
}
