/**
 * The event service: appends (single events, batches, Kafka produce calls) through the write path,
 * with the batch bodies that pay for it prepared on ingest workers; and the hooks that let the
 * Kafka listener keep state derived from its WAL records' tags.
 */
import { guarded, type Guards } from '../base/guards.js';
import { INGEST_WORKER_BODY_BYTES_MIN, TAG_BYTES_MAX } from '../base/limits.js';
import { Listeners } from '../base/listeners.js';
import type { Enricher } from '../enrich/pipeline.js';
import { parseBatchBody } from '../ingest/batch.js';
import type { IngestPool } from '../ingest/pool.js';
import type { CollectionStore } from '../storage/collection.js';
import type { StoreSet } from '../storage/store-set.js';
import type {
  AppendOptions, AppendResult, BatchAppendResult, EventService, EventToWrite, ReplayedTag, StampResult, WriteContext,
} from './types.js';
import type { Wal } from '../wal/wal.js';
import { WritePath } from '../write/write-path.js';
import { SingleAppends } from './single-appends.js';

export interface EventsDeps {
  readonly clock: () => number;
  readonly wal: Wal;
  readonly enricher: Enricher;
  readonly stores: StoreSet;
  /** A collection deleted and not yet gone from its store: treated as absent. */
  readonly hidden: (store: CollectionStore) => boolean;
  readonly guards: Guards;
  /** Parses and prepares large batch bodies off this thread; null prepares every batch here. */
  readonly ingest: IngestPool | null;
  /** Null when the write buffers have room, else resolves after the flush that makes some. */
  readonly room: () => Promise<void> | null;
  /** A buffer passed BUFFER_ROWS_MAX: time to flush. */
  readonly full: () => void;
  /** Rows entered the buffers (the memory budget may call for a flush). */
  readonly added: (rows: number) => void;
}

export class Events implements EventService {
  readonly writes: WritePath;
  private readonly appended = new Listeners<[projectId: string, collection: string]>();
  private readonly tagged = new Listeners<[projectId: string, tag: string, firstOffset: number]>();
  private readonly walRemoveHooks = new Set<() => Promise<void>>();
  private replayed: readonly ReplayedTag[] = [];
  private readonly singles = new SingleAppends((projectId, events, contexts) => this.appendNow(projectId, events, contexts));

  constructor(private readonly deps: EventsDeps) {
    this.writes = new WritePath({
      clock: deps.clock, wal: deps.wal, enricher: deps.enricher,
      store: (project, collection) => deps.stores.open(project, collection),
      existing: (project, collection) => {
        const store = deps.stores.get(project, collection);
        return store === undefined || deps.hidden(store) ? undefined : store;
      },
      appended: (project, collection) => this.appended.emit(project, collection),
      full: deps.full,
      added: deps.added,
      tagged: (project, tag, firstOffset) => this.tagged.emit(project, tag, firstOffset),
    });
  }

  /** Replays the WAL records found at open into the buffers (recovery, before any write). */
  replay(records: readonly Uint8Array[]): void {
    this.replayed = this.writes.replay(records);
  }

  append(projectId: string, events: readonly EventToWrite[], ctx: WriteContext, options?: AppendOptions): Promise<AppendResult[]> {
    // One event, no options: a tracking client's request, written with the others of this turn.
    if (events.length === 1 && options === undefined) {
      return guarded(() => this.check(projectId, null), () => this.singles.add(projectId, events[0]!, ctx));
    }
    return this.appendNow(projectId, events, ctx, options);
  }

  private appendNow(
    projectId: string, events: readonly EventToWrite[], ctx: WriteContext | readonly WriteContext[], options?: AppendOptions,
  ): Promise<AppendResult[]> {
    const tag = options?.tag ?? null;
    return guarded(() => this.check(projectId, tag), () => {
      const room = this.deps.room();
      if (room !== null) return room.then(() => this.appendNow(projectId, events, ctx, options));
      return this.writes.append(projectId, events, ctx, options?.atomic ?? false, tag, options?.stamped ?? false);
    });
  }

  stamp(projectId: string, events: readonly EventToWrite[], ctx: WriteContext): StampResult[] {
    this.check(projectId, null);
    return this.writes.stamp(projectId, events, ctx);
  }

  appendBatch(projectId: string, body: Uint8Array, ctx: WriteContext): Promise<BatchAppendResult> {
    return guarded(() => this.check(projectId, null), () => {
      const room = this.deps.room();
      if (room !== null) return room.then(() => this.appendBatch(projectId, body, ctx));
      const ingest = this.deps.ingest;
      // With every worker busy, this thread prepares the batch itself rather than queue it: it has
      // the spare time then, since a worker's batch costs it about half of what it costs the worker.
      if (ingest === null || body.length < INGEST_WORKER_BODY_BYTES_MIN || !ingest.idle) return this.appendHere(projectId, body, ctx);
      const time = this.writes.receiptTime();
      const done = ingest.run(body, ctx, time.now, time.nowIso).then((packed) => this.writes.appendPrepared(projectId, packed, time)
        .then((results) => ({ collections: packed.collections, results })));
      this.writes.track(done);
      return done;
    });
  }

  /** A batch parsed and prepared on this thread. */
  private appendHere(projectId: string, body: Uint8Array, ctx: WriteContext): Promise<BatchAppendResult> {
    const fast = this.writes.appendBody(projectId, body, ctx);
    if (fast !== null) return fast.done.then((results) => ({ collections: fast.collections, results }));
    const { events, collections } = parseBatchBody(body);
    return this.writes.append(projectId, events, ctx).then((results) => ({ collections, results }));
  }

  private check(projectId: string, tag: string | null): void {
    this.deps.guards.open();
    this.deps.guards.project(projectId);
    if (tag !== null && Buffer.byteLength(tag) > TAG_BYTES_MAX) throw new Error(`appendEvents: a tag is at most ${TAG_BYTES_MAX} bytes`);
  }

  onAppend(listener: (projectId: string, collection: string) => void): () => void {
    return this.appended.add(listener);
  }

  replayedTags(): readonly ReplayedTag[] {
    return this.replayed;
  }

  onTagged(listener: (projectId: string, tag: string, firstOffset: number) => void): () => void {
    return this.tagged.add(listener);
  }

  beforeWalRemove(hook: () => Promise<void>): () => void {
    this.walRemoveHooks.add(hook);
    return () => this.walRemoveHooks.delete(hook);
  }

  /** Runs every beforeWalRemove hook, in turn (a flush, before it deletes WAL files). */
  async runWalRemoveHooks(): Promise<void> {
    for (const hook of [...this.walRemoveHooks]) await hook();
  }
}
