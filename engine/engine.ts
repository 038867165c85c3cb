/**
 * Composition root of the engine: wires projects, the WAL, collection stores, enrichment and the
 * query service, and implements TallyEngine. The write path lives in write-path.ts, the log view
 * for Kafka in log.ts; this file owns opening, flushing, recovery order and closing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type {
  AppendOptions, AppendResult, BatchAppendResult, EngineStats, CollectionSchema, CommittedOffset, EngineOptions, EventToWrite, KeyKind, LogRecord,
  ProjectInfo, ReplayedTag, StampResult, TallyEngine, WriteContext,
} from './types.js';
import { DeleteManager } from './deletes/manager.js';
import { applyDeletes } from './deletes/rewrite.js';
import { ExtractionJobs, type ExtractionJob } from './query/jobs.js';
import { createEnricher, sharedDatabaseFiles, type Enricher } from './enrich/pipeline.js';
import { ApiError } from './base/errors.js';
import { collectionIdKey } from './storage/event-ids.js';
import { parseBatchBody } from './ingest/batch.js';
import { IngestPool } from './ingest/pool.js';
import {
  BUFFER_ROWS_MAX, COLLECTIONS_LISTED_MAX, COMPACTION_QUERY_IDLE_MS, FLUSH_INTERVAL_MS, INGEST_WORKER_BODY_BYTES_MIN,
} from './base/limits.js';
import { ProjectStore } from './catalog/projects.js';
import { QueryService } from './query/service.js';
import { plainChunk, type ColumnChunk, type ScanSource } from './storage/chunk.js';
import { CollectionStore, type FlushPlan } from './storage/collection.js';
import { readJsonIfExists, writeFileDurable } from './storage/files.js';
import { readManifest, writeManifest } from './storage/manifest.js';
import { SegmentPool } from './storage/segment-pool.js';
import { readSegment } from './storage/segment/reader.js';
import { Wal } from './wal/wal.js';
import { jsonLogger, type Logger } from './base/logger.js';
import { SavedQueries, type SavedQuery } from './catalog/saved-queries.js';
import { AccessKeys, type AccessKey } from './catalog/access-keys.js';
import { Datasets, type DatasetView } from './catalog/datasets.js';
import type { FilterNode } from './query/plan.js';
import { LogReader } from './log/reader.js';
import { RetiredFiles } from './storage/retired-files.js';
import { collectGarbage, defaultMemoryBudget, planMemory, type MemoryPlan } from './base/memory.js';
import { WritePath } from './write/write-path.js';
import { lockDataDir, type DataDirLock } from './base/data-dir-lock.js';
import { TAG_BYTES_MAX } from './write/wal-payload.js';

type OffsetsFile = Record<string, Record<string, CommittedOffset[]>>;

export async function openEngine(options: EngineOptions): Promise<TallyEngine> {
  return Engine.open(options);
}

class Engine implements TallyEngine {
  private readonly stores = new Map<string, CollectionStore>();
  private readonly listeners = new Set<(projectId: string, collection: string) => void>();
  private readonly deleteListeners = new Set<(projectId: string, collection: string) => void>();
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private quietTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private offsets: OffsetsFile;
  private readonly writes: WritePath;
  private readonly log: LogReader;
  private readonly segmentPool: SegmentPool;
  /** Segment files replaced by compaction or a delete rewrite, kept until their readers are done. */
  private readonly retired: RetiredFiles;
  private readonly deletes: DeleteManager;
  private extractions: ExtractionJobs | null = null;
  private saved: SavedQueries | null = null;
  private accessKeys: AccessKeys | null = null;
  private datasets: Datasets | null = null;
  /** The tags of the WAL records replayed on open (replayedTags). */
  private replayed: readonly ReplayedTag[] = [];
  /** Awaited before a flush deletes WAL files (beforeWalRemove). */
  private readonly walRemoveHooks = new Set<() => Promise<void>>();
  private readonly tagListeners = new Set<(projectId: string, tag: string, firstOffset: number) => void>();

  private constructor(
    private readonly dataDir: string,
    private readonly clock: () => number,
    private readonly projects: ProjectStore,
    private readonly wal: Wal,
    private readonly queries: QueryService,
    enricher: Enricher,
    inlineSegments: boolean,
    private readonly ingest: IngestPool | null,
    private readonly memory: MemoryPlan,
    private readonly logger: Logger,
  ) {
    this.segmentPool = new SegmentPool(inlineSegments);
    this.retired = new RetiredFiles((file) => {
      fs.rmSync(file, { force: true });
      fs.rmSync(`${file}.meta`, { force: true });
    });
    this.offsets = readJsonIfExists<OffsetsFile>(path.join(dataDir, 'kafka-offsets.json')) ?? {};
    this.writes = new WritePath({
      clock, wal, enricher,
      store: (project, collection) => this.store(project, collection, true)!,
      existing: (project, collection) => {
        const store = this.store(project, collection, false);
        return store === undefined || this.deletes.hidden(store) ? undefined : store;
      },
      appended: (project, collection) => this.notify(project, collection),
      full: () => void this.flush().catch(this.reportFlushError),
      added: (rows) => this.checkBufferBudget(rows),
      tagged: (project, tag, firstOffset) => {
        for (const listener of this.tagListeners) listener(project, tag, firstOffset);
      },
    });
    this.log = new LogReader((project, collection) => this.store(project, collection, false), memory.logCacheBytes,
      (project, collection) => this.deletes.entriesOf(project, collection));
    this.deletes = new DeleteManager({
      dataDir, clock,
      store: (project, collection) => this.store(project, collection, false),
      stores: () => this.stores.values(),
      resetStore: (old, flushedSeq) => this.resetStore(old, flushedSeq),
      idle: () => this.idle(),
      commitManifest: () => this.commitManifest(),
      deleted: (project, collection) => {
        for (const listener of this.deleteListeners) listener(project, collection);
      },
      rewrite: (job) => this.segmentPool.run({ op: 'rewrite', ...job }).then(([footer]) => footer),
      forget: (file) => this.log.forget(file),
      retire: (files) => this.retired.retire(files),
    });
  }

  /** The lock on the data directory (data-dir-lock.ts), released by close(). */
  private lock: DataDirLock | null = null;

  static async open(options: EngineOptions): Promise<Engine> {
    const dataDir = path.resolve(options.dataDir);
    // Only the owner can enter the directory (the keys are in it); then the lock, before any file.
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const lock = lockDataDir(dataDir);
    try {
      const engine = await Engine.openLocked(options, dataDir);
      engine.lock = lock;
      return engine;
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  private static async openLocked(options: EngineOptions, dataDir: string): Promise<Engine> {
    const clock = options.clock ?? Date.now;
    const logger = options.logger ?? jsonLogger();
    const projects = new ProjectStore(dataDir, options.orgId ?? 'default', options.orgKey);
    if (projects.created) projects.create('default');
    else projects.save();
    const { wal, replay } = await Wal.open(path.join(dataDir, 'wal'), {
      fsync: options.fsync ?? true,
      log: (level, message, fields) => logger.write(level, message, fields),
    });
    const eagerData = options.addonData === 'at-open';
    const enricher = await createEnricher({ geoipDbPath: options.geoipDbPath, eagerData });
    // One worker per core: a query fans out over all of them; the OS shares the cores with the
    // thread that serves writes, which never runs a scan itself.
    const workers = options.queryWorkers ?? os.availableParallelism();
    const memory = planMemory(options.memoryBudgetBytes ?? defaultMemoryBudget(), workers);
    let engine: Engine;
    const queries = new QueryService({
      source: (project: string, collection: string, start: number, end: number) => engine.scanSource(project, collection, start, end),
      lease: () => engine.retired.lease(),
      clock,
      workers,
      cacheBytes: memory.chunkCacheBytes,
      footerCacheBytes: memory.footerCacheBytes,
    });
    // The thread that serves writes keeps a core's share of the work (schema, WAL, buffers).
    const ingestWorkers = options.ingestWorkers ?? Math.max(1, os.availableParallelism() - 1);
    const ingest = ingestWorkers > 0 ? new IngestPool(ingestWorkers, { geoipDbPath: options.geoipDbPath, databaseFiles: sharedDatabaseFiles(), eagerData }) : null;
    engine = new Engine(dataDir, clock, projects, wal, queries, enricher, workers === 0, ingest, memory, logger);
    engine.createdFresh = projects.created;
    engine.writeBacklogRows = options.writeBacklogRows ?? WRITE_BACKLOG_ROWS;
    engine.recover(replay);
    engine.extractions = new ExtractionJobs({
      dataDir, clock, queries, source: (project, collection, start, end) => engine.scanSource(project, collection, start, end),
      lease: () => engine.retired.lease(),
      logFailure: (job, error) => logger.write('error', 'extraction job failed', { job: job.id, project: job.project, error }),
    });
    engine.accessKeys = new AccessKeys(dataDir, clock);
    engine.datasets = new Datasets({
      dataDir, clock,
      readLog: (project, collection, from, records, bytes, filters) => engine.readLog(project, collection, from, records, bytes, filters),
      logBounds: (project, collection) => engine.logBounds(project, collection),
      onAppend: (listener) => engine.onAppend(listener),
      onDelete: (listener) => engine.onDelete(listener),
    });
    engine.saved = new SavedQueries({
      dataDir, clock,
      validate: (project, analysis, params) => queries.validate(project, analysis, params),
      run: (project, analysis, params, counted) => queries.run(project, analysis, params, counted),
    });
    const interval = options.flushIntervalMs ?? FLUSH_INTERVAL_MS;
    engine.timer = setInterval(() => void engine.flush().catch(engine.reportFlushError), interval);
    engine.timer.unref();
    engine.quietTimer = setInterval(() => engine.flushIfQuiet(), WRITE_QUIET_MS);
    engine.quietTimer.unref();
    return engine;
  }

  private createdFresh = false;

  get created(): boolean {
    return this.createdFresh;
  }

  get orgId(): string {
    return this.projects.orgId;
  }

  get orgKey(): string {
    return this.projects.orgKey;
  }

  /** Loads the manifest, removes crash leftovers, replays the WAL tail into the buffers. */
  private recover(replay: Uint8Array[]): void {
    const manifest = readManifest(this.dataDir);
    const now = this.clock();
    for (const saved of manifest.collections) {
      const store = new CollectionStore(this.dataDir, saved.project, saved.collection, saved, now);
      this.stores.set(key(saved.project, saved.collection), store);
      for (const orphan of store.orphanFiles()) fs.rmSync(orphan, { force: true });
    }
    this.replayed = this.writes.replay(replay);
    this.deletes.recover();
  }

  /** An empty store in place of `old` (a collection delete): same directory, log offsets go on. */
  private resetStore(old: CollectionStore, flushedSeq: number): CollectionStore {
    const saved = {
      project: old.project, collection: old.name, dir: old.relativeDir, flushedSeq,
      nextSeq: old.nextSeq, schema: {}, segments: [],
    };
    const fresh = new CollectionStore(this.dataDir, old.project, old.name, saved, this.clock());
    this.stores.set(key(old.project, old.name), fresh);
    return fresh;
  }

  /** Resolves once no flush (nor the compaction and rewrite inside it) is running. */
  private async idle(): Promise<void> {
    while (this.flushing !== null) await this.flushing.catch(() => undefined);
  }

  private store(project: string, collection: string, create: boolean): CollectionStore | undefined {
    const id = key(project, collection);
    let store = this.stores.get(id);
    if (store === undefined && create) {
      store = new CollectionStore(this.dataDir, project, collection, undefined, this.clock());
      this.stores.set(id, store);
    }
    return store;
  }

  /** Rows appended since the buffers' bytes were last added up. */
  private rowsSinceBudgetCheck = 0;

  /** Flushes when the write buffers together pass their share of the memory budget. */
  private checkBufferBudget(rows: number): void {
    this.rowsSinceBudgetCheck += rows;
    if (this.rowsSinceBudgetCheck < BUDGET_CHECK_ROWS) return;
    this.rowsSinceBudgetCheck = 0;
    let bytes = 0;
    for (const store of this.stores.values()) bytes += store.buffer.bytes;
    if (bytes > this.memory.bufferBytes) void this.flush().catch(this.reportFlushError);
  }

  private notify(project: string, collection: string): void {
    for (const listener of this.listeners) listener(project, collection);
  }

  /** When the last flush failure was logged: a full disk fails every flush, one line a minute says so. */
  private flushErrorLoggedAt = -Infinity;
  flushFailures = 0;

  /** The last flush failed (reportFlushError); the next one that writes its segments clears it. */
  private flushFailing = false;

  private readonly reportFlushError = (error: unknown): void => {
    this.flushFailures++;
    this.flushFailing = true;
    this.wakeWriters();
    const now = Date.now();
    if (now - this.flushErrorLoggedAt < 60_000) return;
    this.flushErrorLoggedAt = now;
    const code = (error as { code?: unknown })?.code;
    this.logger.write('error', 'flush failed: rows stay in the WAL and the buffers; retried every flush', {
      error: typeof code === 'string' ? `${code}: ${(error as Error).message}` : (error as Error)?.stack ?? String(error),
      failures: this.flushFailures,
    });
  };

  // Projects and keys.

  async createProject(name: string): Promise<ProjectInfo> {
    return this.projects.create(name);
  }

  listProjects(): ProjectInfo[] {
    return this.projects.list();
  }

  getProject(projectId: string): ProjectInfo | undefined {
    return this.projects.get(projectId);
  }

  async regenerateKey(projectId: string, kind: 'write' | 'read'): Promise<string> {
    return this.projects.regenerate(projectId, kind);
  }

  authenticate(projectId: string, key: string): KeyKind | null {
    return this.projects.authenticate(projectId, key);
  }

  isAnyMasterKey(key: string): boolean {
    return this.projects.isAnyMasterKey(key);
  }

  isOrgKey(key: string): boolean {
    return this.projects.isOrgKey(key);
  }

  // Writes.

  appendEvents(
    projectId: string, events: readonly EventToWrite[], ctx: WriteContext, options?: AppendOptions,
  ): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new ApiError('ServiceUnavailableError', 'Tally is shutting down.'));
    if (!this.projects.get(projectId)) {
      return Promise.reject(new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`));
    }
    const tag = options?.tag ?? null;
    if (tag !== null && Buffer.byteLength(tag) > TAG_BYTES_MAX) {
      return Promise.reject(new Error(`appendEvents: a tag is at most ${TAG_BYTES_MAX} bytes`));
    }
    const room = this.roomForWrites();
    if (room !== null) return room.then(() => this.appendEvents(projectId, events, ctx, options));
    return this.writes.append(projectId, events, ctx, options?.atomic ?? false, tag, options?.stamped ?? false);
  }

  stampEvents(projectId: string, events: readonly EventToWrite[], ctx: WriteContext): StampResult[] {
    if (this.closed) throw new ApiError('ServiceUnavailableError', 'Tally is shutting down.');
    if (!this.projects.get(projectId)) {
      throw new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`);
    }
    return this.writes.stamp(projectId, events, ctx);
  }

  replayedTags(): readonly ReplayedTag[] {
    return this.replayed;
  }

  onTagged(listener: (projectId: string, tag: string, firstOffset: number) => void): () => void {
    this.tagListeners.add(listener);
    return () => this.tagListeners.delete(listener);
  }

  beforeWalRemove(hook: () => Promise<void>): () => void {
    this.walRemoveHooks.add(hook);
    return () => this.walRemoveHooks.delete(hook);
  }

  private writesHeldBack = 0;
  private writeBacklogRows = WRITE_BACKLOG_ROWS;
  /** Writes waiting for room in the write buffers (roomForWrites), woken after each flush. */
  private readonly roomWaiters: (() => void)[] = [];

  /**
   * Null when the write buffers have room; otherwise a flush is asked for and the promise resolves
   * after it, and the caller tries again. The buffers fill past BUFFER_ROWS_MAX only while a flush
   * waits behind a merge on the segment worker; without this a load kept writing into them and the
   * write thread's memory grew by the merge's duration times the ingest rate (bench/scale, 50M
   * events: its heap and arrays reached 1.1 GB). Writes are not held back while flushes fail (a
   * full disk): they would only retry a failing flush.
   */
  private roomForWrites(): Promise<void> | null {
    if (this.flushFailing || this.closed) return null;
    let rows = 0;
    for (const store of this.stores.values()) rows += store.buffer.rows;
    if (rows < this.writeBacklogRows) return null;
    this.writesHeldBack++;
    void this.flush().catch(this.reportFlushError);
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  private wakeWriters(): void {
    for (const wake of this.roomWaiters.splice(0)) wake();
  }

  appendBatchBody(projectId: string, body: Uint8Array, ctx: WriteContext): Promise<BatchAppendResult> {
    if (this.closed) return Promise.reject(new ApiError('ServiceUnavailableError', 'Tally is shutting down.'));
    if (!this.projects.get(projectId)) {
      return Promise.reject(new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`));
    }
    const room = this.roomForWrites();
    if (room !== null) return room.then(() => this.appendBatchBody(projectId, body, ctx));
    // With every worker busy, this thread prepares the batch itself rather than queue it: it has
    // the spare time then, since a worker's batch costs it about half of what it costs the worker.
    if (this.ingest === null || body.length < INGEST_WORKER_BODY_BYTES_MIN || !this.ingest.idle) {
      try {
        const fast = this.writes.appendBody(projectId, body, ctx);
        if (fast !== null) return fast.done.then((results) => ({ collections: fast.collections, results }));
        const { events, collections } = parseBatchBody(body);
        return this.writes.append(projectId, events, ctx).then((results) => ({ collections, results }));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const time = this.writes.receiptTime();
    const done = this.ingest.run(body, ctx, time.now, time.nowIso).then((packed) => {
      return this.writes.appendPrepared(projectId, packed, time)
        .then((results) => ({ collections: packed.collections, results }));
    });
    this.writes.track(done);
    return done;
  }

  // Inspection.

  listCollections(projectId: string): CollectionSchema[] {
    const out: CollectionSchema[] = [];
    for (const store of this.stores.values()) {
      if (store.project !== projectId || this.deletes.hidden(store)) continue;
      out.push({ name: store.name, properties: store.schema.toJSON() });
      if (out.length === COLLECTIONS_LISTED_MAX) break;
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  getCollection(projectId: string, collection: string): CollectionSchema | undefined {
    const store = this.store(projectId, collection, false);
    if (store === undefined || this.deletes.hidden(store)) return undefined;
    return { name: store.name, properties: store.schema.toJSON() };
  }

  // Scans and queries.

  scanSource(projectId: string, collection: string, startMs: number, endMs: number): ScanSource {
    const store = this.store(projectId, collection, false);
    if (!store) return { idKey: collectionIdKey(projectId, collection), memoryVersion: 0, segments: [], memory: null, schema: {} };
    const deletes = this.deletes.entriesOf(projectId, collection);
    const source = store.scanSource(startMs, endMs);
    return deletes.length === 0 ? source : { ...source, deletes };
  }

  leaseSegments(): () => void {
    return this.retired.lease();
  }

  *scan(projectId: string, collection: string, startMs: number, endMs: number): Iterable<ColumnChunk> {
    const release = this.retired.lease();
    try {
      const source = this.scanSource(projectId, collection, startMs, endMs);
      const deletes = source.deletes ?? [];
      for (const segment of source.segments) yield plainChunk(applyDeletes(readSegment(segment.file), deletes));
      if (source.memory) yield applyDeletes(source.memory, deletes);
    } finally {
      release();
    }
  }

  query(projectId: string, analysis: string, params: Readonly<Record<string, unknown>>): Promise<unknown> {
    return this.queries.run(projectId, analysis, params);
  }

  // Access keys (access-keys.ts).

  createAccessKey(projectId: string, body: unknown): AccessKey {
    if (!this.projects.get(projectId)) throw new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`);
    return this.accessKeys!.create(projectId, body);
  }

  listAccessKeys(projectId: string, name?: string): AccessKey[] {
    return this.accessKeys!.list(projectId, name);
  }

  getAccessKey(projectId: string, key: string): AccessKey {
    return this.accessKeys!.get(projectId, key);
  }

  updateAccessKey(projectId: string, key: string, body: unknown): AccessKey {
    return this.accessKeys!.update(projectId, key, body);
  }

  setAccessKeyActive(projectId: string, key: string, active: boolean): AccessKey {
    return this.accessKeys!.setActive(projectId, key, active);
  }

  deleteAccessKey(projectId: string, key: string): void {
    this.accessKeys!.delete(projectId, key);
  }

  findAccessKey(projectId: string, key: string): AccessKey | null {
    return this.accessKeys!.find(projectId, key);
  }

  // Cached datasets (datasets.ts).

  putDataset(projectId: string, name: string, body: unknown): DatasetView {
    if (!this.projects.get(projectId)) throw new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`);
    return this.datasets!.put(projectId, name, body);
  }

  listDatasets(projectId: string): DatasetView[] {
    return this.datasets!.list(projectId);
  }

  getDataset(projectId: string, name: string): DatasetView {
    return this.datasets!.get(projectId, name);
  }

  deleteDataset(projectId: string, name: string): void {
    this.datasets!.delete(projectId, name);
  }

  datasetResults(projectId: string, name: string, indexBy: unknown, timeframe: unknown): { timeframe: { start: string; end: string }; value: unknown }[] {
    return this.datasets!.results(projectId, name, indexBy, timeframe);
  }

  // Saved and cached queries (saved-queries.ts).

  listSavedQueries(projectId: string): SavedQuery[] {
    return this.saved!.list(projectId);
  }

  getSavedQuery(projectId: string, name: string): SavedQuery {
    return this.saved!.get(projectId, name);
  }

  putSavedQuery(projectId: string, name: string, body: unknown): { created: boolean; saved: SavedQuery } {
    if (!this.projects.get(projectId)) throw new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`);
    return this.saved!.put(projectId, name, body);
  }

  deleteSavedQuery(projectId: string, name: string): void {
    this.saved!.delete(projectId, name);
  }

  savedQueryResult(projectId: string, name: string): Promise<SavedQuery & { result: unknown }> {
    if (this.closed) return Promise.reject(new ApiError('ServiceUnavailableError', 'Tally is shutting down.'));
    return this.saved!.result(projectId, name);
  }

  // Asynchronous extractions (extraction-jobs.ts).

  submitExtraction(projectId: string, params: Readonly<Record<string, unknown>>): ExtractionJob {
    if (this.closed) throw new ApiError('ServiceUnavailableError', 'Tally is shutting down.');
    return this.extractions!.submit(projectId, params);
  }

  getExtractionJob(projectId: string, id: string): ExtractionJob | undefined {
    return this.extractions!.get(projectId, id);
  }

  extractionResult(projectId: string, id: string): { file: string; contentType: string } {
    return this.extractions!.result(projectId, id);
  }

  // Deletes (engine/deletes).

  deleteEvents(projectId: string, collection: string, params: Readonly<Record<string, unknown>>): Promise<void> {
    return this.deletes.deleteEvents(projectId, collection, params);
  }

  deleteProperty(projectId: string, collection: string, property: string): Promise<void> {
    return this.deletes.deleteProperty(projectId, collection, property);
  }

  // The log (outbound Kafka).

  logBounds(projectId: string, collection: string): { start: number; end: number } {
    return this.log.bounds(projectId, collection);
  }

  /** With `filters` (cached datasets), each record says whether its event passes them (log.ts). */
  readLog(projectId: string, collection: string, fromOffset: number, maxRecords: number, maxBytes: number,
    filters?: readonly FilterNode[]): LogRecord[] {
    return this.log.read(projectId, collection, fromOffset, maxRecords, maxBytes, filters);
  }

  offsetForTime(projectId: string, collection: string, timestampMs: number): number {
    return this.log.offsetForTime(projectId, collection, timestampMs);
  }

  onDelete(listener: (projectId: string, collection: string) => void): () => void {
    this.deleteListeners.add(listener);
    return () => this.deleteListeners.delete(listener);
  }

  onAppend(listener: (projectId: string, collection: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async commitOffsets(projectId: string, groupId: string, offsets: readonly CommittedOffset[]): Promise<void> {
    const groups = (this.offsets[projectId] ??= {});
    const merged = new Map((groups[groupId] ?? []).map((o) => [`${o.topic}\u0000${o.partition}`, o]));
    for (const offset of offsets) merged.set(`${offset.topic}\u0000${offset.partition}`, offset);
    groups[groupId] = [...merged.values()];
    writeFileDurable(path.join(this.dataDir, 'kafka-offsets.json'), JSON.stringify(this.offsets));
  }

  fetchOffsets(projectId: string, groupId: string): CommittedOffset[] {
    return this.offsets[projectId]?.[groupId]?.slice() ?? [];
  }

  stats(): EngineStats {
    let bufferRows = 0, segments = 0, segmentRows = 0, segmentBytes = 0, compactionBacklog = 0;
    for (const store of this.stores.values()) {
      bufferRows += store.buffer.rows;
      const perDay = new Map<string, number>();
      for (const segment of store.segments) {
        segments++;
        segmentRows += segment.footer.rows;
        try {
          segmentBytes += fs.statSync(segment.file).size;
        } catch {
          // Replaced by a compaction since the list was read: its successor is counted next time.
        }
        const day = path.basename(path.dirname(segment.file));
        perDay.set(day, (perDay.get(day) ?? 0) + 1);
      }
      for (const count of perDay.values()) if (count > 1) compactionBacklog++;
    }
    const queries = this.queries.depths();
    return {
      eventsAccepted: this.writes.accepted, eventsRefused: this.writes.refused, eventsFailed: this.writes.failed,
      walFailures: this.wal.stats.failures, walRecoveries: this.wal.stats.recoveries, flushFailures: this.flushFailures,
      writesHeldBack: this.writesHeldBack,
      queriesRunning: queries.running, queriesWaiting: queries.waiting,
      bufferRows, segments, segmentRows, segmentBytes, compactionBacklog,
      memoryBudgetBytes: this.memory.budgetBytes,
    };
  }

  onWalSync(listener: (seconds: number) => void): void {
    this.wal.onSync = listener;
  }

  // Flush, compaction, close.

  /** A flush was asked for while one ran: the running one goes round once more. */
  private flushWanted = false;

  flush(): Promise<void> {
    if (this.flushing !== null) {
      this.flushWanted = true;
      return this.flushing;
    }
    this.flushing = (async () => {
      do {
        this.flushWanted = false;
        await this.flushNow();
      } while (this.flushWanted);
    })().finally(() => {
      this.flushing = null;
      this.wakeWriters();
    });
    return this.flushing;
  }

  /**
   * Rotates the WAL, waits until every append written to the closed files is in a buffer, writes
   * the buffers as segments (on the segment worker, while writes go on), swaps them in, commits the
   * manifest, and only then deletes the closed WAL files. Then one compaction step, if any is due.
   */
  private async flushNow(): Promise<void> {
    await this.flushBuffers();
    // After flushBuffers has returned, so that nothing of its frame (the flushed chunks'
    // dictionaries) is still reachable when the collection runs.
    this.releaseQuietBuffers();
    await this.compactStep();
    if (!this.closed) await this.deletes.rewriteStep();
  }

  private async flushBuffers(): Promise<void> {
    const busy = this.writes.busy || [...this.stores.values()].some((store) => store.buffer.rows > 0);
    if (busy) {
      const closedIndex = await this.wal.rotate();
      await this.writes.settled();
      const plans: { store: CollectionStore; plan: FlushPlan }[] = [];
      for (const store of [...this.stores.values()]) {
        const plan = await store.planFlush();
        if (plan !== null) plans.push({ store, plan });
      }
      const footers = await Promise.all(plans.map(({ plan }) =>
        this.segmentPool.run({ op: 'write', chunk: plan.chunk, parts: plan.parts, schema: plan.schema })));
      plans.forEach(({ store, plan }, i) => store.finishFlush(plan, footers[i]));
      this.commitManifest();
      this.flushFailing = false;
      this.wakeWriters();
      // What was derived from the records' tags (the Kafka producer state) is made durable before
      // the records go; a failure leaves the WAL files for the next flush.
      for (const hook of [...this.walRemoveHooks]) await hook();
      await this.wal.removeUpTo(closedIndex);
    }
  }

  /**
   * Flushes as soon as writes stop, when the buffers hold a load's worth of rows, rather than at
   * the next tick of the flush timer: the rows go to segments and the buffers' memory is let go
   * (releaseQuietBuffers) before the queries that follow a load fill their caches.
   */
  private flushIfQuiet(): void {
    if (this.closed || this.writes.busy) return;
    if (performance.now() - this.writes.lastWriteMs < WRITE_QUIET_MS) return;
    let rows = 0;
    for (const store of this.stores.values()) rows += store.buffer.rows;
    if (rows >= QUIET_COLLECT_ROWS) void this.flush().catch(this.reportFlushError);
  }

  /**
   * Once writes stop, the buffers' arrays and the strings of the rows they held (a load's worth,
   * hundreds of MB at 200,000 events/s) are garbage, but V8 returns the memory only at its next
   * full collection, which on a quiet write thread may come many seconds later: meanwhile queries
   * fill their caches on top of it (bench/scale, 10M: the peak RSS came right there). So the first
   * flush that leaves the buffers empty lets their arrays go and collects at once.
   */
  private releaseQuietBuffers(): void {
    if (this.writes.busy) return;
    let rows = 0;
    for (const store of this.stores.values()) rows += store.buffer.trim();
    if (rows < QUIET_COLLECT_ROWS) return;
    collectGarbage();
    void this.ingest?.collectIdle();
  }

  /**
   * Merges small segments, one partition at a time, until none is due; each merge waits until no
   * query has run for COMPACTION_QUERY_IDLE_MS, so compaction takes the cores only when queries
   * leave them. Runs within a flush, so flushes and merges never overlap.
   */
  private async compactStep(): Promise<void> {
    while (!this.closed) {
      if (this.flushWanted) return; // a flush asked for while this one waits goes first
      const due = [...this.stores.values()].find((store) => store.planCompaction() !== null);
      if (due === undefined) return;
      const idle = this.queries.idleMs();
      if (idle < COMPACTION_QUERY_IDLE_MS) {
        await new Promise((resolve) => setTimeout(resolve, COMPACTION_QUERY_IDLE_MS - idle));
        continue;
      }
      const plan = due.planCompaction();
      if (plan === null) continue;
      const [footer] = await this.segmentPool.run({ op: 'compact', ...plan });
      const replaced = due.finishCompaction(plan, footer);
      this.commitManifest();
      for (const file of replaced) this.log.forget(file);
      // Removed once no query or extraction that listed them is still reading.
      this.retired.retire(replaced);
      // Writes waiting for a flush (a full buffer) go first.
      if (this.writes.busy || this.flushWanted) return;
    }
  }

  private commitManifest(): void {
    const collections = [...this.stores.values()].map((store) => store.toManifest());
    writeManifest(this.dataDir, { version: 1, collections });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.quietTimer) clearInterval(this.quietTimer);
    this.extractions?.close();
    this.saved?.close();
    this.datasets?.close();
    await this.writes.settled();
    await this.ingest?.close();
    await this.flush();
    await this.flush(); // rows that arrived while a timer flush was already running
    await this.wal.close();
    await this.queries.close();
    await this.segmentPool.close();
    this.retired.close();
    this.lock?.release();
  }
}

/**
 * Buffers that held at least this many rows (their capacity, let go at once) are worth a full
 * collection when writes stop: ~20 MB of arrays and strings; a trickle of events costs none.
 */
const QUIET_COLLECT_ROWS = 65_536;
/**
 * Buffered rows (all collections) past which writes wait for a flush: twice the rows at which a
 * flush is asked for (BUFFER_ROWS_MAX), so only a flush held up behind a merge makes writes wait.
 */
const WRITE_BACKLOG_ROWS = 2 * BUFFER_ROWS_MAX;
/** Writes have stopped when none started for this long (and none is in flight). */
const WRITE_QUIET_MS = 1_000;

/** Rows between two sums of the write buffers' bytes: cheap, and fine-grained enough for the budget. */
const BUDGET_CHECK_ROWS = 8192;

function key(project: string, collection: string): string {
  return `${project}\u0000${collection}`;
}
