/**
 * The part of the write path that needs nothing of the store: an event as sent → its svc fields and
 * placeholders, add-on results and leaves. Runs on the thread that serves writes for small calls and
 * on ingest workers (ingest/worker.ts) for large batch bodies; both make the same leaves, and the
 * store-side checks stay with the write path. Nothing here writes the event's JSON: the WAL keeps
 * its leaves (write/wal-payload.ts) and the columns are the only stored copy.
 */
import { appendLeaves, bytesUnder, isFragment, newAppended } from '../schema/fragment.js';
import type { Enricher } from '../enrich/pipeline.js';
import { EVENT_BYTES_MAX, SVC_OVERHEAD_BYTES } from '../base/limits.js';
import { PathJoiner, flattenEvent, leafBytes, type Leaves } from '../schema/flatten.js';
import { prepareEvent } from '../schema/prepare.js';

/** Where a write came from: fills the ${svc.ip} and ${svc.user_agent} placeholders. */
export interface WriteContext {
  readonly ip: string;
  readonly userAgent: string;
}

export interface EventToWrite {
  readonly collection: string;
  /** The parsed JSON value the client sent; validated by the engine (need not be an object). */
  readonly event: unknown;
}

/**
 * svc.id while an event is prepared: its id is a function of its log offset (storage/event-ids.ts), given when
 * the write path commits it, and leaves leave svc.id out, so nothing reads this.
 */
const ID_STAND_IN = '000000000000000000000000';

/** One prepared event: leaves [from, to) of the call's Leaves. */
export interface PreparedRow {
  /** svc.timestamp, ms. */
  readonly timestamp: number;
  /** Uniqueness token, or null. */
  readonly token: string | null;
  readonly from: number;
  readonly to: number;
  /** Its size passes EVENT_BYTES_MAX: refused once the schema check has had its say. */
  readonly tooLarge: boolean;
}

export const TOO_LARGE_MESSAGE = `An event may be at most ${EVENT_BYTES_MAX} bytes of JSON.`;

export class EventPreparer {
  private readonly paths = new PathJoiner();
  /** Add-on results of the event being prepared that go after its own properties. */
  private readonly appended = newAppended();

  constructor(private readonly enricher: Enricher) {}

  /**
   * Prepares one event; its leaves are appended to `leaves` (start marks them). Throws ApiError
   * for an event that is refused; the caller drops its leaves. With `stamped`, its `json` is set to
   * the event as stamped (svc fields and placeholders, without svc.id), before any add-on runs:
   * what a cluster node produces to the event log (WritePath.stamp).
   */
  prepare(event: unknown, ctx: WriteContext, now: number, nowIso: string, leaves: Leaves, stamped?: { json: string }): PreparedRow {
    const prepared = prepareEvent(event, now, ID_STAND_IN, ctx, nowIso);
    if (stamped !== undefined) {
      const svc = prepared.event.svc as Record<string, unknown>;
      delete svc.id;
      stamped.json = JSON.stringify(prepared.event);
      svc.id = ID_STAND_IN;
    }
    const appended = this.appended;
    appended.count = 0;
    if (prepared.hasAddons) this.enricher.apply(prepared.event, now, appended);
    flattenEvent(prepared.event, leaves, this.paths);
    const from = leaves.start;
    if (appended.count > 0) appendLeaves(appended, leaves, this.paths);
    const tooLarge = leavesBytes(leaves, from, leaves.count) > EVENT_BYTES_MAX + SVC_OVERHEAD_BYTES;
    return { timestamp: prepared.tsMs, token: prepared.uniquenessToken, from, to: leaves.count, tooLarge };
  }
}

/**
 * About the size of an event's JSON from its leaves: each leaf's path and value and the quotes,
 * colon and comma around them (a nested path counts its parents' names again, so this leans high).
 * Strings count a byte a character: a value's length is bounded apart (STRING_VALUE_CHARS_MAX).
 */
export function leavesBytes(leaves: Leaves, from: number, to: number): number {
  let bytes = 2;
  for (let i = from; i < to; i++) {
    const value = leaves.values[i];
    // An add-on result given whole (the fast reader's): its leaves under its output name.
    bytes += isFragment(value) ? bytesUnder(value, leaves.paths[i]) : leafBytes(leaves.paths[i], value);
  }
  return bytes;
}
