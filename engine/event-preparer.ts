/**
 * The part of the write path that needs nothing of the store: an event as sent → its svc fields and
 * placeholders, add-on results, leaves and stored JSON. Runs on the thread that serves writes for
 * small calls and on ingest workers (ingest/worker.ts) for large batch bodies; both make the same
 * bytes and leaves, and the store-side checks stay with the write path.
 */
import type { WriteContext } from './api.js';
import { appendLeaves, appendedBytes, newAppended, spliceInto, type Appended } from './enrich/fragment.js';
import type { Enricher } from './enrich/pipeline.js';
import { assert } from './assert.js';
import { ID_CHARS, IdSource } from './ids.js';
import { EVENT_BYTES_MAX } from './limits.js';
import { PathJoiner, flattenEvent, type Leaves } from './schema/flatten.js';
import { prepareEvent } from './schema/prepare.js';

/** Bytes the svc fields add to an event as sent; a batch item's stored JSON may exceed the limit by this. */
const SVC_OVERHEAD_BYTES = 2_048;

/** The raw arena's size between calls; a larger batch grows it for its call only. */
const ARENA_BYTES_KEPT = 16 * 1024 * 1024;

/** One prepared event: leaves [from, to) of the call's Leaves, stored JSON arena[rawStart, rawEnd). */
export interface PreparedRow {
  /** svc.timestamp, ms. */
  readonly t: number;
  /** Uniqueness token, or null. */
  readonly k: string | null;
  readonly from: number;
  readonly to: number;
  readonly rawStart: number;
  readonly rawEnd: number;
  /**
   * Where in the arena its stand-in svc.id starts (ids.ts): the write path writes the final id,
   * made from the event's log offset, over those 24 bytes.
   */
  readonly idAt: number;
  /** Its stored JSON passes EVENT_BYTES_MAX: refused once the schema check has had its say. */
  readonly tooLarge: boolean;
}

export const TOO_LARGE_MESSAGE = `An event may be at most ${EVENT_BYTES_MAX} bytes of JSON.`;

export class EventPreparer {
  private readonly ids = new IdSource();
  private readonly paths = new PathJoiner();
  /** Add-on results of the event being prepared that go after its own properties. */
  private readonly appended = newAppended();
  /** The stored JSON of one call's events, as UTF-8, back to back; reused by every call. */
  arena = Buffer.allocUnsafeSlow(ARENA_BYTES_KEPT);
  arenaUsed = 0;

  constructor(private readonly enricher: Enricher) {}

  /** Starts a call: its events' JSON goes to the arena from its start. */
  begin(): void {
    this.arenaUsed = 0;
  }

  /** After a call whose batch grew the arena past its kept size, the memory is let go. */
  end(): void {
    if (this.arena.length > ARENA_BYTES_KEPT) this.arena = Buffer.allocUnsafeSlow(ARENA_BYTES_KEPT);
  }

  /**
   * Prepares one event; its leaves are appended to `leaves` (start marks them). Throws ApiError
   * for an event that is refused; the caller drops its leaves.
   */
  prepare(event: unknown, ctx: WriteContext, now: number, nowIso: string, leaves: Leaves): PreparedRow {
    const id = this.ids.take();
    const prepared = prepareEvent(event, now, id, ctx, nowIso);
    const appended = this.appended;
    appended.count = 0;
    if (prepared.hasAddons) this.enricher.apply(prepared.event, now, appended);
    flattenEvent(prepared.event, leaves, this.paths);
    const from = leaves.start;
    if (appended.count > 0) appendLeaves(appended, leaves, this.paths);
    const rawStart = this.arenaUsed;
    const rawEnd = this.writeRaw(JSON.stringify(prepared.event), appended);
    const tooLarge = rawEnd - rawStart > EVENT_BYTES_MAX + SVC_OVERHEAD_BYTES;
    if (tooLarge) this.arenaUsed = rawStart;
    // The stand-in is 24 random hex characters: no client text holds it by chance.
    const idAt = tooLarge ? -1 : this.arena.indexOf(id, rawStart, 'latin1');
    assert(tooLarge || (idAt >= rawStart && idAt + ID_CHARS <= rawEnd), 'the stored JSON holds its svc.id');
    return { t: prepared.tsMs, k: prepared.uniquenessToken, from, to: leaves.count, rawStart, rawEnd, idAt, tooLarge };
  }

  /** Writes an event's stored JSON (its own JSON with the appended results) at the arena's end. */
  private writeRaw(json: string, appended: Appended): number {
    const start = this.arenaUsed;
    const needed = start + json.length * 3 + appendedBytes(appended);
    if (needed > this.arena.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(needed, this.arena.length * 2));
      this.arena.copy(grown, 0, 0, start);
      this.arena = grown;
    }
    const end = start + this.arena.write(json, start, 'utf8');
    this.arenaUsed = spliceInto(this.arena, start, end, appended);
    return this.arenaUsed;
  }
}
