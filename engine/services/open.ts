/**
 * The composition root: opens a data directory and builds the engine's services in recovery
 * order (projects, the WAL, the stores from the manifest, the WAL tail replayed into their
 * buffers, deletes, then the features built on them), then starts the flush timers. Each service
 * is small and owns one job; this file only wires them and closes them in the reverse order.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lockDataDir } from '../base/data-dir-lock.js';
import { guards as makeGuards } from '../base/guards.js';
import { FLUSH_INTERVAL_MS, WRITE_BACKLOG_ROWS } from '../base/limits.js';
import { Listeners } from '../base/listeners.js';
import { jsonLogger } from '../base/logger.js';
import { defaultMemoryBudget, planMemory } from '../base/memory.js';
import { AccessKeys } from '../catalog/access-keys.js';
import { Datasets } from '../catalog/datasets.js';
import { ProjectStore } from '../catalog/projects.js';
import { SavedQueries } from '../catalog/saved-queries.js';
import { DeleteManager } from '../deletes/manager.js';
import { createEnricher, sharedDatabaseFiles } from '../enrich/pipeline.js';
import { IngestPool } from '../ingest/pool.js';
import { LogReader } from '../log/reader.js';
import { Flusher } from '../maintenance/flusher.js';
import { ExtractionJobs } from '../query/exec/jobs.js';
import { QueryService as QueryRunner } from '../query/exec/service.js';
import { RetiredFiles } from '../storage/retired-files.js';
import { SegmentPool } from '../maintenance/segment-pool.js';
import { StoreSet } from '../storage/store-set.js';
import type { EngineOptions, EngineStats, TallyEngine } from './types.js';
import { Wal } from '../wal/wal.js';
import { Collections } from './collections.js';
import { Events } from './events.js';
import { GroupOffsets } from './groups.js';
import { engineStats } from './stats.js';

export async function openEngine(options: EngineOptions): Promise<TallyEngine> {
  const dataDir = path.resolve(options.dataDir);
  // Only the owner can enter the directory (the keys are in it); then the lock, before any file.
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(dataDir);
  try {
    return await openLocked(options, dataDir, () => lock.release());
  } catch (error) {
    lock.release();
    throw error;
  }
}

async function openLocked(options: EngineOptions, dataDir: string, unlock: () => void): Promise<TallyEngine> {
  const clock = options.clock ?? Date.now;
  const logger = options.logger ?? jsonLogger();
  let closed = false;

  const projects = new ProjectStore(dataDir, options.orgId ?? 'default', options.orgKey);
  const created = projects.created;
  if (created) projects.create('default');
  else projects.save();
  const guards = makeGuards(() => closed, (id) => projects.get(id) !== undefined);

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
  // The thread that serves writes keeps a core's share of the work (schema, WAL, buffers).
  const ingestWorkers = options.ingestWorkers ?? Math.max(1, os.availableParallelism() - 1);
  const ingest = ingestWorkers > 0
    ? new IngestPool(ingestWorkers, { geoipDbPath: options.geoipDbPath, databaseFiles: sharedDatabaseFiles(), eagerData }) : null;

  const stores = new StoreSet(dataDir, clock);
  const segmentPool = new SegmentPool(workers === 0);
  // Segment files replaced by compaction or a delete rewrite, kept until their readers are done.
  const retired = new RetiredFiles((file) => {
    fs.rmSync(file, { force: true });
    fs.rmSync(`${file}.meta`, { force: true });
  });
  // The flusher and the write path call each other (a full buffer asks for a flush, a flush waits
  // for the appends in flight): the events service reaches the flusher once it exists.
  let flusher: Flusher | null = null;
  const events = new Events({
    clock, wal, enricher, stores, guards, ingest,
    room: () => flusher!.roomForWrites(),
    full: () => flusher!.flushInBackground(),
    added: (rows) => flusher!.rowsAdded(rows),
  });
  const deleted = new Listeners<[projectId: string, collection: string]>();
  let log: LogReader | null = null;
  const deletes = new DeleteManager({
    dataDir, clock,
    store: (project, collection) => stores.get(project, collection),
    stores: () => stores.values(),
    resetStore: (old, flushedSeq) => stores.reset(old, flushedSeq),
    idle: () => flusher!.idle(),
    commitManifest: () => stores.commitManifest(),
    deleted: (project, collection) => deleted.emit(project, collection),
    rewrite: (job) => segmentPool.run({ op: 'rewrite', ...job }).then(([footer]) => footer),
    forget: (file) => log!.forget(file),
    retire: (files) => retired.retire(files),
  });
  log = new LogReader((project, collection) => stores.get(project, collection), memory.logCacheBytes,
    (project, collection) => deletes.entriesOf(project, collection));
  const collections = new Collections(stores, deletes, retired, deleted);
  const runner = new QueryRunner({
    source: (project, collection, start, end) => collections.scanSource(project, collection, start, end),
    lease: () => retired.lease(),
    clock, workers,
    cacheBytes: memory.chunkCacheBytes,
    footerCacheBytes: memory.footerCacheBytes,
  });
  const reader = log;
  flusher = new Flusher({
    stores, wal, segmentPool,
    writes: events.writes,
    queriesIdleMs: () => runner.idleMs(),
    rewriteDeletes: async () => void await deletes.rewriteStep(),
    replaced: (files) => {
      for (const file of files) reader.forget(file);
      retired.retire(files);
    },
    beforeWalRemove: () => events.runWalRemoveHooks(),
    writesStopped: () => void ingest?.collectIdle(),
    logger,
    bufferBytes: memory.bufferBytes,
    backlogRows: options.writeBacklogRows ?? WRITE_BACKLOG_ROWS,
    isClosed: () => closed,
  });

  // Recovery: the manifest's stores, the WAL tail into their buffers, then the deletes over them.
  stores.load();
  events.replay(replay);
  deletes.recover();

  const extractions = new ExtractionJobs({
    dataDir, clock, queries: runner,
    source: (project, collection, start, end) => collections.scanSource(project, collection, start, end),
    lease: () => retired.lease(),
    logFailure: (job, error) => logger.write('error', 'extraction job failed', { job: job.id, project: job.project, error }),
  });
  const accessKeys = new AccessKeys(dataDir, clock, guards);
  const datasets = new Datasets({
    dataDir, clock, guards,
    readLog: (project, collection, from, records, bytes, filters) => reader.read(project, collection, from, records, bytes, filters),
    logBounds: (project, collection) => reader.bounds(project, collection),
    onAppend: (listener) => events.onAppend(listener),
    onDelete: (listener) => deleted.add(listener),
  });
  const savedQueries = new SavedQueries({
    dataDir, clock, guards,
    validate: (project, analysis, params) => runner.validate(project, analysis, params),
    run: (project, analysis, params, counted) => runner.run(project, analysis, params, counted),
  });
  const flush = flusher;
  flush.start(options.flushIntervalMs ?? FLUSH_INTERVAL_MS);

  return {
    created,
    organization: {
      id: projects.orgId,
      key: projects.orgKey,
      isOrgKey: (key) => projects.isOrgKey(key),
    },
    projects: {
      create: async (name) => projects.create(name),
      list: () => projects.list(),
      get: (id) => projects.get(id),
      regenerateKey: async (id, kind) => projects.regenerate(id, kind),
      authenticate: (id, key) => projects.authenticate(id, key),
      isAnyMasterKey: (key) => projects.isAnyMasterKey(key),
    },
    events,
    collections,
    queries: {
      run: (project, analysis, params) => runner.run(project, analysis, params),
      submitExtraction: (project, params) => {
        guards.open();
        return extractions.submit(project, params);
      },
      extractionJob: (project, id) => extractions.get(project, id),
      extractionResult: (project, id) => extractions.result(project, id),
    },
    accessKeys,
    savedQueries,
    datasets,
    log: reader,
    groups: new GroupOffsets(dataDir),
    stats: (): EngineStats => engineStats({ stores, writes: events.writes, wal, flusher: flush, queries: runner, memory }),
    onWalSync: (listener) => {
      wal.onSync = listener;
    },
    flush: () => flush.flush(),
    close: async () => {
      if (closed) return;
      closed = true;
      flush.stop();
      extractions.close();
      savedQueries.close();
      datasets.close();
      await events.writes.settled();
      await ingest?.close();
      await flush.flush();
      await flush.flush(); // rows that arrived while a timer flush was already running
      await wal.close();
      await runner.close();
      await segmentPool.close();
      retired.close();
      unlock();
    },
  };
}
