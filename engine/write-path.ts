/**
 * The write path: validate → svc fields and placeholders → add-ons → uniqueness check → WAL append
 * (acknowledged only after fsync; concurrent calls share one fsync) → the collection's buffer.
 * Log offsets are reserved before the WAL append, so WAL order is log order, and replay after a
 * crash re-applies exactly the rows that no flush had put in a segment.
 */
import type { AppendResult, EventToWrite, WriteContext } from './api.js';
import { BytePool } from './byte-pool.js';
import { appendLeaves, appendedBytes, newAppended, spliceInto, type Appended } from './enrich/fragment.js';
import type { Enricher } from './enrich/pipeline.js';
import { ApiError, isApiError } from './errors.js';
import { IdSource } from './ids.js';
import { BUFFER_ROWS_MAX, EVENT_BYTES_MAX, WAL_POOL_BYTES_MAX } from './limits.js';
import { validateCollectionName } from './schema/collection-name.js';
import { PathJoiner, flattenEvent, newLeaves, type Leaves } from './schema/flatten.js';
import { prepareEvent } from './schema/prepare.js';
import { formatTimestamp } from './schema/timestamp.js';
import type { CollectionStore } from './storage/collection.js';
import type { Wal } from './wal/wal.js';
import { RECORD_HEADER_BYTES, frameInPlace } from './wal/record.js';
import { decodeWalPayload, encodeWalPayload, type StagedWalEvent } from './wal-record.js';

/** Bytes the svc fields add to an event as sent; a batch item's stored JSON may exceed the limit by this. */
const SVC_OVERHEAD_BYTES = 2_048;

/** Per-call state: the receipt time (one per call, formatted once) and the stores seen. */
interface BatchState {
  readonly now: number;
  readonly nowIso: string;
  readonly stores: Map<string, CollectionStore>;
  readonly leaves: Leaves;
}

/**
 * An event that passed validation; its leaves are leaves[from, to), its JSON is the raw arena's
 * [rawStart, rawEnd); `s` is set on commit.
 */
interface Validated extends StagedWalEvent {
  readonly store: CollectionStore;
  readonly leaves: Leaves;
  readonly from: number;
  readonly to: number;
  s: number;
}

/** A committed event waiting for its WAL append. */
type Staged = Validated;

/** The raw arena's size between calls; a larger batch grows it for its call only. */
const ARENA_BYTES_KEPT = 16 * 1024 * 1024;

/** Leaves objects kept for reuse: about the number of calls in flight at once. */
const LEAVES_KEPT = 8;

const DUPLICATE: AppendResult = Object.freeze({ ok: true, offset: -1 });
const NOT_STORED: AppendResult = Object.freeze({ ok: true, offset: -1 });

export interface WritePathDeps {
  readonly clock: () => number;
  readonly wal: Wal;
  readonly enricher: Enricher;
  readonly store: (project: string, collection: string) => CollectionStore;
  readonly appended: (project: string, collection: string) => void;
  /** Called when a buffer passes BUFFER_ROWS_MAX: time to flush. */
  readonly full: () => void;
}

export class WritePath {
  private readonly ids = new IdSource();
  private readonly paths = new PathJoiner();
  /** Add-on results of the event being validated that go after its own properties. */
  private readonly appended = newAppended();
  /** The stored JSON of one call's events, as UTF-8, back to back; reused by every call. */
  private arena = Buffer.allocUnsafeSlow(ARENA_BYTES_KEPT);
  private arenaUsed = 0;
  /** Leaves of finished calls, reused. */
  private readonly freeLeaves: Leaves[] = [];
  /** WAL frames, reused once their events are in the buffers. */
  private readonly frames = new BytePool(WAL_POOL_BYTES_MAX);
  /** The last receipt time and its ISO text: single-event requests arrive many per millisecond. */
  private lastNow = NaN;
  private lastNowIso = '';
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly deps: WritePathDeps) {}

  /**
   * Appends events; each gets its own result. With `atomic`, one refused event means none is
   * stored: the refused ones carry their errors, the others `{ ok: true, offset: -1 }`.
   */
  append(project: string, events: readonly EventToWrite[], ctx: WriteContext, atomic = false): Promise<AppendResult[]> {
    const now = this.deps.clock();
    if (now !== this.lastNow) {
      this.lastNow = now;
      this.lastNowIso = formatTimestamp(now);
    }
    const leaves = this.freeLeaves.pop() ?? newLeaves();
    leaves.start = 0;
    leaves.count = 0;
    const batch: BatchState = { now, nowIso: this.lastNowIso, stores: new Map(), leaves };
    this.arenaUsed = 0;
    const results: AppendResult[] = new Array(events.length);
    const staged: Staged[] = [];
    const validated: (Validated | null)[] = new Array(events.length);
    let refused = false;
    for (let i = 0; i < events.length; i++) {
      try {
        validated[i] = this.validate(project, events[i], ctx, batch);
      } catch (error) {
        if (!isApiError(error)) throw error;
        batch.leaves.count = batch.leaves.start; // drop the refused event's leaves
        results[i] = { ok: false, error };
        refused = true;
        validated[i] = null;
      }
      if (!atomic && validated[i]) results[i] = this.commit(validated[i]!, staged, batch.now);
    }
    if (atomic) {
      for (let i = 0; i < events.length; i++) {
        if (validated[i]) results[i] = refused ? NOT_STORED : this.commit(validated[i]!, staged, batch.now);
      }
    }
    if (staged.length === 0) {
      this.releaseLeaves(leaves);
      this.shrinkArena();
      return Promise.resolve(results);
    }
    const rawRanges = new Int32Array(staged.length * 2);
    let pooled: Buffer | null = null;
    const frame = frameInPlace(encodeWalPayload(project, staged, this.arena, rawRanges, RECORD_HEADER_BYTES,
      (bytes) => (pooled = this.frames.take(bytes))));
    this.shrinkArena();
    const release = () => {
      this.frames.give(pooled!);
      this.releaseLeaves(leaves);
    };
    const done = this.deps.wal.appendFrame(frame).then(() => {
      this.applyAll(project, staged, batch.leaves, frame, rawRanges);
      release();
      return results;
    }, (error: unknown) => {
      release();
      throw error;
    });
    this.inFlight.add(done);
    const forget = () => this.inFlight.delete(done);
    done.then(forget, forget);
    return done;
  }

  /** After a call whose batch grew the arena past its kept size, the memory is let go. */
  private shrinkArena(): void {
    if (this.arena.length > ARENA_BYTES_KEPT) this.arena = Buffer.allocUnsafeSlow(ARENA_BYTES_KEPT);
  }

  /** Keeps a call's Leaves for the next call: its arrays have grown to a batch's size already. */
  private releaseLeaves(leaves: Leaves): void {
    if (this.freeLeaves.length < LEAVES_KEPT) this.freeLeaves.push(leaves);
  }

  get busy(): boolean {
    return this.inFlight.size > 0;
  }

  /** Resolves once every append started before this call has been applied or has failed. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** Checks one event and makes its stored JSON; nothing of the store changes yet. */
  private validate(project: string, item: EventToWrite, ctx: WriteContext, batch: BatchState): Validated {
    const now = batch.now;
    batch.leaves.start = batch.leaves.count; // a refusal below rolls back to here
    let store = batch.stores.get(item.collection);
    if (store === undefined) {
      validateCollectionName(item.collection);
      store = this.deps.store(project, item.collection);
      batch.stores.set(item.collection, store);
    }
    const prepared = prepareEvent(item.event, now, this.ids.take(), ctx, batch.nowIso);
    const appended = this.appended;
    appended.count = 0;
    if (prepared.hasAddons) this.deps.enricher.apply(prepared.event, now, appended);
    const leaves = batch.leaves;
    flattenEvent(prepared.event, leaves, this.paths);
    if (appended.count > 0) appendLeaves(appended, leaves, this.paths);
    store.schema.check(leaves);
    const rawStart = this.arenaUsed;
    const rawEnd = this.writeRaw(JSON.stringify(prepared.event), appended);
    if (rawEnd - rawStart > EVENT_BYTES_MAX + SVC_OVERHEAD_BYTES) {
      this.arenaUsed = rawStart;
      throw new ApiError('InvalidEventError', `An event may be at most ${EVENT_BYTES_MAX} bytes of JSON.`);
    }
    return {
      store, leaves, from: leaves.start, to: leaves.count,
      c: item.collection, s: -1, t: prepared.tsMs, a: prepared.createdAtMs, k: prepared.uniquenessToken,
      rawStart, rawEnd,
    };
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

  /**
   * Makes a validated event part of its collection: schema, token, log offset. A token seen
   * within the window drops the event silently (the result looks stored, with the offset -1).
   */
  private commit(event: Validated, staged: Staged[], now: number): AppendResult {
    const store = event.store;
    if (event.k !== null) {
      if (store.tokens.has(event.k, now)) return DUPLICATE;
      store.tokens.add(event.k, now, false);
    }
    const leaves = event.leaves;
    leaves.start = event.from;
    const end = leaves.count;
    leaves.count = event.to;
    store.schema.observe(leaves);
    leaves.count = end;
    event.s = store.nextSeq++;
    staged.push(event);
    return { ok: true, offset: event.s };
  }

  /** Adds durable events to their buffers, copying their JSON bytes out of the WAL payload. */
  private applyAll(
    project: string, staged: readonly Staged[], leaves: Leaves, payload: Uint8Array, rawRanges: Int32Array,
  ): void {
    const touched = new Set<CollectionStore>();
    for (let i = 0; i < staged.length; i++) {
      const event = staged[i];
      const store = event.store;
      const raw = payload.subarray(rawRanges[2 * i], rawRanges[2 * i + 1]);
      store.apply(event.s, event.t, event.a, raw, leaves, event.from, event.to);
      if (event.k !== null) store.tokens.add(event.k, event.a, true);
      touched.add(store);
    }
    let full = false;
    for (const store of touched) {
      this.deps.appended(project, store.name);
      full ||= store.buffer.rows >= BUFFER_ROWS_MAX;
    }
    if (full) this.deps.full();
  }

  /** Re-applies WAL payloads after a crash or restart, skipping rows already in segments. */
  replay(payloads: readonly Uint8Array[]): void {
    const leaves = newLeaves();
    for (const bytes of payloads) {
      leaves.count = 0;
      const payload = decodeWalPayload(bytes);
      for (const event of payload.e) {
        const store = this.deps.store(payload.p, event.c);
        if (event.s >= store.nextSeq) store.nextSeq = event.s + 1;
        if (event.s < store.flushedSeq) continue;
        leaves.count = 0;
        flattenEvent(JSON.parse(event.j), leaves);
        store.schema.observe(leaves);
        store.apply(event.s, event.t, event.a, event.j, leaves, leaves.start, leaves.count);
        if (event.k !== null) store.tokens.add(event.k, event.a, true);
      }
    }
  }
}
