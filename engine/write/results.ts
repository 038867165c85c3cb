/** What an append answers, per event and per batch, and what it may carry (a tag). */
import type { ApiError } from '../base/errors.js';

/**
 * Result of one event of an append, in submission order: its log offset, or -1 when it was not
 * stored though valid (a duplicate uniqueness token, or another event refused in an atomic append).
 */
export type AppendResult =
  | { readonly ok: true; readonly offset: number }
  | { readonly ok: false; readonly error: ApiError };

export interface BatchAppendResult {
  /** Collection names in body order, each with its number of events. */
  readonly collections: readonly (readonly [string, number])[];
  /** One per event, in body order. */
  readonly results: readonly AppendResult[];
}

export interface AppendOptions {
  /** One refused event means none of the call's events is stored (a Kafka produce batch). */
  readonly atomic?: boolean;
  /**
   * Opaque text (at most 1024 utf8 bytes) written in the call's WAL record, atomically with its
   * events, and handed back by replayedTags() if the record is replayed after a restart. The
   * Kafka listener puts an idempotent batch's producer fields here. No record (and so no tag)
   * is written when none of the events is stored.
   */
  readonly tag?: string;
  /**
   * The events were stamped by EventService.stamp (on this node or another): each keeps the
   * receipt time in its svc.created_at (and its svc.timestamp) rather than getting this call's, its
   * placeholders were replaced already, and its uniqueness token is checked at that time. So
   * every node that appends the same stamped events stores the same rows. An event without a
   * valid svc.created_at is refused (InvalidEventError).
   */
  readonly stamped?: boolean;
}

/**
 * One event of EventService.stamp, in submission order: its JSON as stamped, to be appended later
 * (on any node) with `stamped: true`; or why append would refuse it.
 */
export type StampResult =
  | { readonly ok: true; readonly json: string }
  | { readonly ok: false; readonly error: ApiError };

/** A tag (AppendOptions.tag) found in a WAL record replayed when the engine opened. */
export interface ReplayedTag {
  readonly projectId: string;
  readonly tag: string;
  /** The log offset of the record's first event (the call's first stored event). */
  readonly firstOffset: number;
}
