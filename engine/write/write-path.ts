/**
 * The write path: validate → svc fields and placeholders → add-ons → uniqueness check → WAL append
 * (acknowledged only after fsync; concurrent calls share one fsync) → the collection's buffer.
 * Log offsets are reserved before the WAL append, so WAL order is log order, and replay after a
 * crash re-applies exactly the rows that no flush had put in a segment.
 */
import type { EventToWrite, WriteContext } from '../ingest/event-preparer.js';
import type { AppendResult, ReplayedTag, StampResult } from './results.js';
import { BytePool } from './byte-pool.js';
import type { Enricher } from '../enrich/pipeline.js';
import { ApiError, isApiError } from '../base/errors.js';
import { EventPreparer, TOO_LARGE_MESSAGE, type PreparedRow } from '../ingest/event-preparer.js';
import { RANGE_FIELDS, preparedOf, type PackedBatch, type PreparedBatch } from '../ingest/batch.js';
import { FastBatchReader } from '../ingest/fast-batch.js';
import { BUFFER_ROWS_MAX, WAL_POOL_BYTES_MAX } from '../base/limits.js';
import { validateCollectionName } from '../schema/collection-name.js';
import { newLeaves, type Leaves } from '../schema/flatten.js';
import { LeafEncoder, leavesOfView, viewLeaves, type LeafView } from '../schema/leaf-codec.js';
import { formatTimestamp, parseTimestamp } from '../schema/timestamp.js';
import { SchemaDictionary } from '../schema/dictionary.js';
import { newViewCache, type ViewCache } from '../storage/buffer.js';
import type { CollectionStore } from '../storage/collection.js';
import type { Wal } from '../wal/wal.js';
import { RECORD_HEADER_BYTES, frameInPlace } from '../wal/record.js';
import { decodeWalPayload, encodeWalPayload, type WalEvent } from './wal-payload.js';

/** Per-call state: the receipt time (one per call, formatted once) and the stores seen. */
interface BatchState {
  readonly now: number;
  readonly nowIso: string;
  readonly stores: Map<string, CollectionStore>;
  readonly leaves: Leaves;
  /**
   * A prepared batch's leaves read in place: its events are checked against each store's schema
   * once for the batch (SchemaDictionary.fits) and applied with no JS value per leaf. `leaves`
   * holds them too only once a store's schema needs the per-event checks (materialized).
   */
  view: LeafView | null;
  materialized: boolean;
  /** Per store: whether the view's paths fit its schema all at once. */
  readonly fits: Map<CollectionStore, boolean>;
}

/** An event that passed validation; its leaves are leaves[from, to); `seq` is set on commit. */
interface Validated extends WalEvent {
  readonly store: CollectionStore;
  readonly leaves: Leaves;
  seq: number;
}

/** A committed event waiting for its WAL append. */
type Staged = Validated;

/** Leaves objects kept for reuse: about the number of calls in flight at once. */
const LEAVES_KEPT = 8;

const EMPTY = new Uint8Array(0);
const DUPLICATE: AppendResult = Object.freeze({ ok: true, offset: -1 });
const NOT_STORED: AppendResult = Object.freeze({ ok: true, offset: -1 });

export interface WritePathDeps {
  readonly clock: () => number;
  readonly wal: Wal;
  readonly enricher: Enricher;
  readonly store: (project: string, collection: string) => CollectionStore;
  /** The collection's store if it has one; never creates it (stamp). */
  readonly existing: (project: string, collection: string) => CollectionStore | undefined;
  readonly appended: (project: string, collection: string) => void;
  /** Called when a buffer passes BUFFER_ROWS_MAX: time to flush. */
  readonly full: () => void;
  /** Called after `rows` rows entered the buffers: the memory budget may call for a flush. */
  readonly added: (rows: number) => void;
  /** Called when a tagged call's events are durable and applied, before the call resolves. */
  readonly tagged?: (project: string, tag: string, firstOffset: number) => void;
}

/**
 * The write context of stamped events (AppendOptions.stamped): their placeholders were replaced
 * where they were stamped, so each placeholder stands for itself and a value that is now one stays.
 */
const STAMPED_CONTEXT: WriteContext = Object.freeze({ ip: '${svc.ip}', userAgent: '${svc.user_agent}' });

/** The receipt time of a call, and its ISO text. */
export interface ReceiptTime {
  readonly now: number;
  readonly nowIso: string;
}

export class WritePath {
  private readonly preparer: EventPreparer;
  /** Encodes the leaves of calls prepared on this thread for their WAL record. */
  private readonly encoder = new LeafEncoder();
  /** Reads batch bodies into leaves without event objects, for appendBody. */
  private readonly reader: FastBatchReader;
  /** Leaves of finished calls, reused. */
  private readonly freeLeaves: Leaves[] = [];
  /** WAL frames, reused once their events are in the buffers. */
  private readonly frames = new BytePool(WAL_POOL_BYTES_MAX);
  /** The last receipt time and its ISO text: single-event requests arrive many per millisecond. */
  private lastNow = NaN;
  private lastNowIso = '';
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Rows written to the WAL and not yet in the buffers: the flusher counts them as buffered. */
  rowsInFlight = 0;
  /** Events accepted (stored or dropped as duplicates) and refused since start: the metrics' counters. */
  accepted = 0;
  refused = 0;
  /** Events valid but not stored because the WAL could not write them (a full disk, an I/O error). */
  failed = 0;

  constructor(private readonly deps: WritePathDeps) {
    this.preparer = new EventPreparer(deps.enricher);
    this.reader = new FastBatchReader(deps.enricher);
  }

  /** The receipt time of a call starting now. */
  receiptTime(): ReceiptTime {
    const now = this.deps.clock();
    if (now !== this.lastNow) {
      this.lastNow = now;
      this.lastNowIso = formatTimestamp(now);
    }
    return { now, nowIso: this.lastNowIso };
  }

  /**
   * Appends events; each gets its own result. With `atomic`, one refused event means none is
   * stored: the refused ones carry their errors, the others `{ ok: true, offset: -1 }`. `ctx` is
   * every event's context, or one per event (the single-event requests services/single-appends.ts
   * gathers into one call).
   */
  append(
    project: string, events: readonly EventToWrite[], ctx: WriteContext | readonly WriteContext[], atomic = false,
    tag: string | null = null, stamped = false,
  ): Promise<AppendResult[]> {
    const failure = this.deps.wal.failure;
    if (failure !== null) return Promise.reject(failure); // a full disk: refuse before any work
    const batch = this.batchState(this.receiptTime());
    const preparer = this.preparer;
    const staged: Staged[] = [];
    const contexts = isContextList(ctx) ? ctx : null;
    return this.unwinding(staged, () => {
      const results = this.validateAll(events.length, atomic, staged, (i) => {
        batch.leaves.start = batch.leaves.count; // a refusal rolls back to here
        const store = this.storeFor(project, events[i].collection, batch);
        if (!stamped) {
          const context = contexts === null ? ctx as WriteContext : contexts[i]!;
          const row = preparer.prepare(events[i].event, context, batch.now, batch.nowIso, batch.leaves);
          return this.checked(store, events[i].collection, row, batch);
        }
        // Received where it was stamped: its svc.created_at is its receipt time, here too.
        const createdIso = stampedTime(events[i].event);
        const created = parseTimestamp(createdIso);
        const row = preparer.prepare(events[i].event, STAMPED_CONTEXT, created, createdIso, batch.leaves);
        return this.checked(store, events[i].collection, row, batch, created);
      }, batch);
      // The scratch encoding is copied into the WAL frame (write → encodeWalPayload) before any other call encodes.
      const encoded = staged.length === 0 ? EMPTY : this.encoder.encode(batch.leaves, batch.leaves.count, true);
      return this.write(project, staged, results, batch, encoded, tag);
    });
  }

  /**
   * Checks events as append() does, short of what only the storing node can check (uniqueness
   * tokens, and the schema as it will be when they arrive), and stamps the valid ones: svc fields
   * with this call's receipt time, placeholders replaced from `ctx`. Each valid event's result
   * holds its JSON as stamped, which append(..., stamped) stores as it is on every node.
   * Stores nothing and creates no collection.
   */
  stamp(project: string, events: readonly EventToWrite[], ctx: WriteContext): StampResult[] {
    const batch = this.batchState(this.receiptTime());
    const leaves = batch.leaves;
    const schemas = new Map<string, SchemaDictionary>();
    const out = { json: '' };
    const results: StampResult[] = new Array(events.length);
    try {
      for (let i = 0; i < events.length; i++) {
        leaves.start = 0;
        leaves.count = 0;
        const { collection, event } = events[i];
        try {
          let schema = schemas.get(collection);
          if (schema === undefined) {
            validateCollectionName(collection);
            schema = this.deps.existing(project, collection)?.schema ?? new SchemaDictionary();
            schemas.set(collection, schema);
          }
          const row = this.preparer.prepare(event, ctx, batch.now, batch.nowIso, leaves, out);
          leaves.start = row.from;
          schema.check(leaves);
          if (row.tooLarge) throw new ApiError('InvalidEventError', TOO_LARGE_MESSAGE);
          results[i] = { ok: true, json: out.json };
        } catch (error) {
          if (!isApiError(error)) throw error;
          results[i] = { ok: false, error };
        }
      }
    } finally {
      this.releaseLeaves(leaves);
    }
    return results;
  }

  /**
   * Appends a batch an ingest worker prepared (ingest/batch.ts) at `time`: the store-side checks
   * and everything after them, as append() does for events it prepares itself.
   */
  appendPrepared(project: string, packed: PackedBatch, time: ReceiptTime): Promise<AppendResult[]> {
    const failure = this.deps.wal.failure;
    if (failure !== null) return Promise.reject(failure);
    const batch = this.batchState(time);
    batch.view = viewLeaves(packed.leaves);
    return this.appendRows(project, packed, batch, () => packed.leaves);
  }

  /**
   * Appends a batch body on this thread when the fast reader takes it (ingest/fast-batch.ts): its
   * events become leaves with no event objects. Null when it does not: the caller parses it.
   */
  appendBody(project: string, body: Uint8Array, ctx: WriteContext): { collections: [string, number][]; done: Promise<AppendResult[]> } | null {
    const failure = this.deps.wal.failure;
    if (failure !== null) return { collections: [], done: Promise.reject(failure) };
    const batch = this.batchState(this.receiptTime());
    const fast = this.reader.read(body, ctx, batch.now, batch.leaves);
    if (fast === null) {
      this.releaseLeaves(batch.leaves);
      return null;
    }
    const encoded = this.encoder.encode(batch.leaves, batch.leaves.count);
    batch.view = viewLeaves(encoded);
    // Not materialized: the reader's leaves give each add-on result as one (LeafEncoder's input).
    const done = this.appendRows(project, preparedOf(fast), batch, () => encoded);
    return { collections: fast.collections, done };
  }

  /**
   * The store-side checks of prepared events and everything after them; `encoded` gives their
   * leaves as the WAL record holds them (refused events' leaves stay in it, unreferenced).
   */
  private appendRows(project: string, packed: PreparedBatch, batch: BatchState, encoded: () => Uint8Array): Promise<AppendResult[]> {
    const collectionOf: string[] = [];
    for (const [collection, count] of packed.collections) for (let i = 0; i < count; i++) collectionOf.push(collection);
    const { ranges } = packed;
    const staged: Staged[] = [];
    return this.unwinding(staged, () => {
      const results = this.validateAll(collectionOf.length, false, staged, (i) => {
        const store = this.storeFor(project, collectionOf[i], batch);
        const refusal = packed.errorOf[i];
        if (refusal !== -1) throw new ApiError(packed.errors[refusal].code, packed.errors[refusal].message);
        const at = RANGE_FIELDS * i;
        const row: PreparedRow = {
          timestamp: packed.timestamps[i], token: packed.tokens[i], from: ranges[at], to: ranges[at + 1], tooLarge: packed.tooLarge[i] === 1,
        };
        return this.checked(store, collectionOf[i], row, batch);
      }, batch);
      if (batch.view !== null) this.observeView(batch.view, staged, batch);
      return this.write(project, staged, results, batch, staged.length === 0 ? EMPTY : encoded());
    });
  }

  /**
   * Runs `work`, which stages events and starts their WAL write. Should it throw before the write
   * is under way (an embedded caller's event whose getter throws, a closed WAL), the tokens the
   * staged events took are given back: nothing was stored, and a retry must be stored, not taken
   * for a duplicate.
   */
  private unwinding<T>(staged: readonly Staged[], work: () => T): T {
    try {
      return work();
    } catch (error) {
      forgetTokens(staged);
      throw error;
    }
  }

  /** The schema observations checked() left for the batch: of the staged events, store by store. */
  private observeView(view: LeafView, staged: readonly Staged[], batch: BatchState): void {
    for (const [store, fits] of batch.fits) {
      if (!fits) continue;
      const from: number[] = [];
      const to: number[] = [];
      for (const event of staged) {
        if (event.store !== store) continue;
        from.push(event.from);
        to.push(event.to);
      }
      store.schema.observeView(view, from, to, from.length);
    }
  }

  /** Whether the batch's events are checked against `store`'s schema once for all (see BatchState.view). */
  private fitsAtOnce(store: CollectionStore, batch: BatchState): boolean {
    if (batch.view === null) return false;
    let fits = batch.fits.get(store);
    if (fits === undefined) {
      fits = store.schema.fits(batch.view.paths);
      batch.fits.set(store, fits);
      if (!fits && !batch.materialized) {
        leavesOfView(batch.view, batch.leaves);
        batch.materialized = true;
      }
    }
    return fits;
  }

  private batchState(time: ReceiptTime): BatchState {
    const leaves = this.freeLeaves.pop() ?? newLeaves();
    leaves.start = 0;
    leaves.count = 0;
    return { now: time.now, nowIso: time.nowIso, stores: new Map(), leaves, view: null, materialized: false, fits: new Map() };
  }

  /**
   * Validates events 0..count-1 with `validate` and commits them (all or none with `atomic`);
   * committed events go to `staged`.
   */
  private validateAll(
    count: number, atomic: boolean, staged: Staged[], validate: (i: number) => Validated, batch: BatchState,
  ): AppendResult[] {
    const results: AppendResult[] = new Array(count);
    const validated: (Validated | null)[] = new Array(count);
    let refused = false;
    for (let i = 0; i < count; i++) {
      try {
        validated[i] = validate(i);
      } catch (error) {
        if (!isApiError(error)) throw error;
        batch.leaves.count = batch.leaves.start; // drop the refused event's leaves
        results[i] = { ok: false, error };
        refused = true;
        validated[i] = null;
      }
      if (!atomic && validated[i]) results[i] = this.commit(validated[i]!, staged, batch);
    }
    if (refused && atomic) this.refused += count;
    else for (let i = 0; i < count; i++) validated[i] ? this.accepted++ : this.refused++;
    if (atomic) {
      for (let i = 0; i < count; i++) {
        if (validated[i]) results[i] = refused ? NOT_STORED : this.commit(validated[i]!, staged, batch);
      }
    }
    return results;
  }

  /**
   * Writes the staged events' WAL record (`encoded` holds their leaves, `tag` goes with them);
   * resolves once they are applied.
   */
  private write(
    project: string, staged: Staged[], results: AppendResult[], batch: BatchState, encoded: Uint8Array,
    tag: string | null = null,
  ): Promise<AppendResult[]> {
    const leaves = batch.leaves;
    if (staged.length === 0) {
      this.releaseLeaves(leaves);
      return Promise.resolve(results);
    }
    let pooled: Buffer | null = null;
    const frame = frameInPlace(encodeWalPayload(project, staged, encoded, RECORD_HEADER_BYTES,
      (bytes) => (pooled = this.frames.take(bytes)), tag));
    const release = () => {
      this.frames.give(pooled!);
      this.releaseLeaves(leaves);
    };
    const written = this.deps.wal.appendFrame(frame);
    // Counted once the append is under way (a throw above leaves nothing counted to hold writes back).
    this.rowsInFlight += staged.length;
    const done = written.then(() => {
      this.rowsInFlight -= staged.length;
      this.applyAll(project, staged, batch);
      if (tag !== null) this.deps.tagged?.(project, tag, staged[0]!.seq);
      release();
      return results;
    }, (error: unknown) => {
      // Not stored: their uniqueness tokens must not turn a client's retry into a silent duplicate.
      forgetTokens(staged);
      this.rowsInFlight -= staged.length;
      this.accepted -= staged.length;
      this.failed += staged.length;
      release();
      throw error;
    });
    this.track(done);
    return done;
  }

  /** Counts `work` as in flight until it settles: settled() waits for it. */
  track(work: Promise<unknown>): void {
    this.lastWriteMs = performance.now();
    this.inFlight.add(work);
    const forget = () => this.inFlight.delete(work);
    work.then(forget, forget);
  }

  /** Keeps a call's Leaves for the next call: its arrays have grown to a batch's size already. */
  private releaseLeaves(leaves: Leaves): void {
    if (this.freeLeaves.length < LEAVES_KEPT) this.freeLeaves.push(leaves);
  }

  get busy(): boolean {
    return this.inFlight.size > 0;
  }

  /** When the last append was started (performance.now()); -Infinity before the first. */
  lastWriteMs = -Infinity;

  /** Resolves once every append started before this call has been applied or has failed. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** The store of a call's collection; the name is checked once per call. */
  private storeFor(project: string, collection: string, batch: BatchState): CollectionStore {
    let store = batch.stores.get(collection);
    if (store === undefined) {
      validateCollectionName(collection);
      store = this.deps.store(project, collection);
      batch.stores.set(collection, store);
    }
    return store;
  }

  /** The store-side checks of a prepared event: its leaves against the schema, then its size. */
  private checked(store: CollectionStore, collection: string, row: PreparedRow, batch: BatchState, created = batch.now): Validated {
    const leaves = batch.leaves;
    if (!this.fitsAtOnce(store, batch)) {
      leaves.start = row.from;
      leaves.count = row.to;
      store.schema.check(leaves);
    }
    if (row.tooLarge) throw new ApiError('InvalidEventError', TOO_LARGE_MESSAGE);
    return { store, leaves, from: row.from, to: row.to, collection, seq: -1, timestamp: row.timestamp, createdAt: created, token: row.token };
  }

  /**
   * Makes a validated event part of its collection: schema, token, log offset. A token seen
   * within the window drops the event silently (the result looks stored, with the offset -1).
   */
  private commit(event: Validated, staged: Staged[], batch: BatchState): AppendResult {
    const store = event.store;
    const now = event.createdAt; // the receipt time: batch.now, or a stamped event's own
    if (event.token !== null) {
      if (store.tokens.has(event.token, now)) return DUPLICATE;
      store.tokens.add(event.token, now, false);
    }
    if (!this.fitsAtOnce(store, batch)) { // else observeView, after the batch
      const leaves = event.leaves;
      leaves.start = event.from;
      const end = leaves.count;
      leaves.count = event.to;
      store.schema.observe(leaves);
      leaves.count = end;
    }
    event.seq = store.nextSeq++;
    staged.push(event);
    return { ok: true, offset: event.seq };
  }

  /** Adds durable events to their buffers: their leaves become columns. */
  private applyAll(project: string, staged: readonly Staged[], batch: BatchState): void {
    const { leaves, view } = batch;
    const touched = new Set<CollectionStore>();
    let caches: Map<CollectionStore, ViewCache> | null = null;
    for (let i = 0; i < staged.length; i++) {
      const event = staged[i];
      const store = event.store;
      if (view !== null) {
        caches ??= new Map();
        let cache = caches.get(store);
        if (cache === undefined) caches.set(store, cache = newViewCache(view));
        store.applyView(event.seq, event.timestamp, event.createdAt, view, event.from, event.to, cache);
      } else store.apply(event.seq, event.timestamp, event.createdAt, leaves, event.from, event.to);
      if (event.token !== null) store.tokens.add(event.token, event.createdAt, true);
      touched.add(store);
    }
    let full = false;
    for (const store of touched) {
      this.deps.appended(project, store.name);
      full ||= store.buffer.rows >= BUFFER_ROWS_MAX;
    }
    if (full) this.deps.full();
    else this.deps.added(staged.length);
  }

  /**
   * Re-applies WAL payloads after a crash or restart, skipping rows already in segments. Returns
   * the tags of the records that carry one, with the log offset of each record's first event;
   * also of records whose rows a flush had already put in segments (their WAL file was not yet
   * deleted), since the tag says what was stored, not what is left to apply.
   */
  replay(payloads: readonly Uint8Array[]): ReplayedTag[] {
    const leaves = newLeaves();
    const tags: ReplayedTag[] = [];
    for (const bytes of payloads) {
      const payload = decodeWalPayload(bytes, leaves);
      if (payload.tag !== null && payload.events.length > 0) {
        tags.push({ projectId: payload.project, tag: payload.tag, firstOffset: payload.events[0]!.seq });
      }
      const end = leaves.count;
      for (const event of payload.events) {
        const store = this.deps.store(payload.project, event.collection);
        if (event.seq >= store.nextSeq) store.nextSeq = event.seq + 1;
        if (event.seq < store.flushedSeq) continue;
        leaves.start = event.from;
        leaves.count = event.to;
        store.schema.observe(leaves);
        leaves.count = end;
        store.apply(event.seq, event.timestamp, event.createdAt, leaves, event.from, event.to);
        if (event.token !== null) store.tokens.add(event.token, event.createdAt, true);
      }
    }
    return tags;
  }
}

/** Gives back the uniqueness tokens `staged` events took: they were not stored. */
function forgetTokens(staged: readonly Staged[]): void {
  for (const event of staged) if (event.token !== null) event.store.tokens.forget(event.token, event.createdAt);
}

function isContextList(ctx: WriteContext | readonly WriteContext[]): ctx is readonly WriteContext[] {
  return Array.isArray(ctx);
}

/** svc.created_at of a stamped event (WritePath.stamp): the time it was received where it was stamped. */
function stampedTime(event: unknown): string {
  const svc = (event as { svc?: { created_at?: unknown } } | null)?.svc;
  const created = typeof svc === 'object' && svc !== null ? svc.created_at : undefined;
  if (typeof created !== 'string' || Number.isNaN(parseTimestamp(created))) {
    throw new ApiError('InvalidEventError', 'A stamped event carries its receipt time in svc.created_at.');
  }
  return created;
}
