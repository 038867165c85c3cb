/**
 * A pending delete as the stores and readers see it: rows of a time range passing filters, or a
 * property. Plain records (no code), so the column model (storage/chunk.ts) names them without
 * importing the delete machinery that uses the model.
 */
import type { FilterNode, TimeRange } from '../query/plan/plan.js';

/** Events of the collection with seq < seqBefore, svc.timestamp in range, passing filters. */
export interface RowsDelete {
  readonly kind: 'rows';
  readonly id: number;
  readonly seqBefore: number;
  readonly range: TimeRange;
  readonly filters: readonly FilterNode[];
}

/** Property `path` (and every path below it) of events with seq < seqBefore. */
export interface PropertyDelete {
  readonly kind: 'property';
  readonly id: number;
  readonly seqBefore: number;
  readonly path: string;
}

export type DeleteEntry = RowsDelete | PropertyDelete;

/**
 * A delete as data (CollectionService.planDeleteEvents/planDeleteProperty): the whole collection,
 * events of an absolute time range [startMs, endMs) passing `filters` (the API's filters as sent,
 * parsed again where applied), or a property. JSON-safe: cluster mode sends it through Kafka.
 */
export type DeletePlan =
  | { readonly kind: 'collection' }
  | { readonly kind: 'rows'; readonly startMs: number; readonly endMs: number; readonly filters: unknown }
  | { readonly kind: 'property'; readonly property: string };
