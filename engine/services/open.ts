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
import { QueryActivity } from '../base/query-activity.js';
import { AccessKeys } from '../catalog/access-keys.js';
import { Catalog } from '../catalog/catalog.js';
import { Datasets } from '../catalog/datasets.js';
import { ProjectStore } from '../catalog/projects.js';
import { SavedQueries } from '../catalog/saved-queries.js';
import { DeleteManager } from '../deletes/manager.js';
import { createEnricher, sharedDatabaseFiles, type Enricher } from '../enrich/pipeline.js';
import { IngestPool } from '../ingest/pool.js';
import { LogReader } from '../log/reader.js';
import { Flusher } from '../maintenance/flusher.js';
import { ExtractionJobs } from '../query/exec/jobs.js';
import { QueryService as QueryRunner } from '../query/exec/service.js';
import { notLoading } from './warm-share.js';
import { RetiredFiles } from '../storage/retired-files.js';
import { SegmentPool } from '../maintenance/segment-pool.js';
import { StoreSet } from '../storage/store-set.js';
import type { EngineOptions, EngineStats, TallyEngine } from './types.js';
import type { Guards } from '../base/guards.js';
import type { Logger } from '../base/logger.js';
import type { MemoryPlan } from '../base/memory.js';
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

/** What the services are built on: the directory's files opened, the threads' pools made. */
interface Base {
  readonly dataDir: string;
  readonly clock: () => number;
  readonly logger: Logger;
  readonly state: { closed: boolean };
  readonly guards: Guards;
  readonly projects: ProjectStore;
  readonly created: boolean;
  readonly wal: Wal;
  /** The WAL records found at open, replayed once the stores are loaded. */
  readonly replay: Uint8Array[];
  readonly enricher: Enricher;
  readonly workers: number;
  readonly memory: MemoryPlan;
  readonly ingest: IngestPool | null;
  readonly stores: StoreSet;
  readonly segmentPool: SegmentPool;
  readonly retired: RetiredFiles;
  readonly queryActivity: QueryActivity;
}

/** The services of data: events in, collections, the log view, queries, flush and compaction. */
interface Core {
  readonly events: Events;
  readonly deleted: Listeners<[projectId: string, collection: string]>;
  readonly deletes: DeleteManager;
  readonly log: LogReader;
  readonly collections: Collections;
  readonly runner: QueryRunner;
  readonly flusher: Flusher;
}

/** The features over the data: extraction jobs and the catalog's durable objects. */
interface Features {
  readonly catalog: Catalog;
  readonly extractions: ExtractionJobs;
  readonly accessKeys: AccessKeys;
  readonly datasets: Datasets;
  readonly savedQueries: SavedQueries;
}

async function openLocked(options: EngineOptions, dataDir: string, unlock: () => void): Promise<TallyEngine> {
  const base = await openBase(options, dataDir);
  const core = wireCore(options, base);
  // Recovery: the manifest's stores, the WAL tail into their buffers, then the deletes over them.
  base.stores.load();
  core.events.replay(base.replay);
  core.deletes.recover();
  const features = openFeatures(options, base, core);
  core.flusher.start(options.flushIntervalMs ?? FLUSH_INTERVAL_MS);
  // The stored segments, newest last (warmed first), for the first queries after a restart.
  if (options.cacheWarming !== false) {
    core.runner.warm([...base.stores.values()].flatMap((store) => store.segments).sort((a, b) => a.footer.tsMax - b.footer.tsMax));
  }
  return face(base, core, features, unlock);
}

async function openBase(options: EngineOptions, dataDir: string): Promise<Base> {
  const clock = options.clock ?? Date.now;
  const logger = options.logger ?? jsonLogger();
  const state = { closed: false };
  const projects = new ProjectStore(dataDir, options.orgId ?? 'default', options.orgKey);
  const created = projects.created;
  if (created) projects.create('default');
  else projects.save();
  const guards = makeGuards(() => state.closed, (id) => projects.get(id) !== undefined);
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
  // Queries running, seen by the segment worker: its merges and delete rewrites pause meanwhile.
  const queryActivity = new QueryActivity();
  // Segment files replaced by compaction or a delete rewrite, kept until their readers are done.
  const retired = new RetiredFiles((file) => {
    fs.rmSync(file, { force: true });
    fs.rmSync(`${file}.meta`, { force: true });
  });
  return {
    dataDir, clock, logger, state, guards, projects, created, wal, replay, enricher, workers, memory, ingest,
    stores: new StoreSet(dataDir, clock), segmentPool: new SegmentPool(workers === 0, queryActivity), retired, queryActivity,
  };
}

function wireCore(options: EngineOptions, base: Base): Core {
  const { dataDir, clock, stores, segmentPool, retired, memory } = base;
  // The flusher and the write path call each other (a full buffer asks for a flush, a flush waits
  // for the appends in flight): the events service reaches the flusher once it exists.
  let flusher: Flusher | null = null;
  let deletes: DeleteManager | null = null;
  const events = new Events({
    clock, wal: base.wal, enricher: base.enricher, stores, guards: base.guards, ingest: base.ingest,
    hidden: (store) => deletes!.hidden(store),
    room: () => flusher!.roomForWrites(),
    full: () => flusher!.bufferFull(),
    added: (rows) => flusher!.rowsAdded(rows),
  });
  const deleted = new Listeners<[projectId: string, collection: string]>();
  let log: LogReader | null = null;
  deletes = new DeleteManager({
    dataDir, clock,
    store: (project, collection) => stores.get(project, collection),
    stores: () => stores.values(),
    resetStore: (old, flushedSeq) => stores.reset(old, flushedSeq),
    idle: () => flusher!.idle(),
    commitManifest: () => stores.commitManifest(),
    deleted: (project, collection) => deleted.emit(project, collection),
    rewrite: (job) => segmentPool.run({ op: 'rewrite', ...job }).then(([footer]) => footer),
    forget: (file) => log!.forget(file),
    retire: (files) => {
      runner.forget(files);
      retired.retire(files);
    },
  });
  const reader = log = new LogReader((project, collection) => stores.get(project, collection), memory.logCacheBytes,
    (project, collection) => deletes.entriesOf(project, collection));
  const collections = new Collections(stores, deletes, retired, deleted);
  const runner = new QueryRunner({
    source: (project, collection, start, end) => collections.scanSource(project, collection, start, end),
    lease: () => retired.lease(),
    clock, workers: base.workers,
    cacheBytes: memory.chunkCacheBytes,
    footerCacheBytes: memory.footerCacheBytes,
    mayWarm: notLoading(() => events.writes.accepted),
    activity: base.queryActivity,
  });
  flusher = new Flusher({
    stores, wal: base.wal, segmentPool,
    writes: events.writes,
    queriesIdleMs: () => runner.idleMs(),
    rewriteDeletes: async () => void await deletes.rewriteStep(),
    replaced: (files) => {
      for (const file of files) reader.forget(file);
      runner.forget(files);
      retired.retire(files);
    },
    published: (segments) => {
      if (options.cacheWarming !== false) runner.warm(segments);
    },
    beforeWalRemove: () => events.runWalRemoveHooks(),
    writesStopped: () => void base.ingest?.collectIdle(),
    logger: base.logger,
    bufferBytes: memory.bufferBytes,
    backlogRows: options.writeBacklogRows ?? WRITE_BACKLOG_ROWS,
    isClosed: () => base.state.closed,
  });
  return { events, deleted, deletes, log: reader, collections, runner, flusher };
}

function openFeatures(options: EngineOptions, base: Base, core: Core): Features {
  const { dataDir, clock, guards, logger } = base;
  const { runner, collections, log, events, deleted } = core;
  const catalog = new Catalog(logger);
  const { commit } = catalog;
  const features: Features = {
    catalog,
    extractions: new ExtractionJobs({
      dataDir, clock, queries: runner, idPrefix: options.extractionJobPrefix ?? '',
      source: (project, collection, start, end) => collections.scanSource(project, collection, start, end),
      lease: () => base.retired.lease(),
      logFailure: (job, error) => logger.write('error', 'extraction job failed', { job: job.id, project: job.project, error }),
    }),
    accessKeys: new AccessKeys(dataDir, clock, guards, commit),
    datasets: new Datasets({
      dataDir, clock, guards,
      readLog: (project, collection, from, records, bytes, filters) => log.read(project, collection, from, records, bytes, filters),
      logBounds: (project, collection) => log.bounds(project, collection),
      onAppend: (listener) => events.onAppend(listener),
      onDelete: (listener) => deleted.add(listener),
      commit,
    }),
    savedQueries: new SavedQueries({
      dataDir, clock, guards,
      validate: (project, analysis, params) => runner.validate(project, analysis, params),
      run: options.savedQueryRunner ?? ((project, analysis, params, counted) => runner.run(project, analysis, params, counted)),
      commit,
    }),
  };
  catalog.attach({ projects: base.projects, ...features });
  return features;
}

/** The engine as its users see it: the services, and close() undoing open in reverse order. */
function face(base: Base, core: Core, features: Features, unlock: () => void): TallyEngine {
  const { projects, guards, wal } = base;
  const { runner, flusher, events } = core;
  const { extractions, catalog } = features;
  return {
    created: base.created,
    organization: {
      get id() {
        return projects.orgId;
      },
      get key() {
        return projects.orgKey;
      },
      isOrgKey: (key) => projects.isOrgKey(key),
    },
    projects: {
      create: async (name) => {
        const project = projects.plan(name);
        await catalog.commit([{ kind: 'project', id: project.id, state: project }]);
        return project;
      },
      list: () => projects.list(),
      get: (id) => projects.get(id),
      regenerateKey: async (id, kind) => {
        const project = projects.planRegenerate(id, kind);
        await catalog.commit([{ kind: 'project', id, state: project }]);
        return project.api_keys[kind];
      },
      authenticate: (id, key) => projects.authenticate(id, key),
      isAnyMasterKey: (key) => projects.isAnyMasterKey(key),
    },
    events,
    collections: core.collections,
    queries: {
      run: (project, analysis, params, counted) => runner.run(project, analysis, params, counted),
      describe: (project, analysis, params, nowMs) => runner.describe(project, analysis, params, nowMs),
      runPartial: (project, analysis, params, nowMs, steps) => runner.runPartial(project, analysis, params, nowMs, steps),
      finishPartials: (project, analysis, params, nowMs, states) => runner.finishPartials(project, analysis, params, nowMs, states),
      submitExtraction: (project, params) => {
        guards.open();
        return extractions.submit(project, params);
      },
      extractionJob: (project, id) => extractions.get(project, id),
      extractionResult: (project, id) => extractions.result(project, id),
    },
    accessKeys: features.accessKeys,
    savedQueries: features.savedQueries,
    datasets: features.datasets,
    log: core.log,
    groups: new GroupOffsets(base.dataDir),
    catalog: {
      records: () => catalog.records(),
      apply: (records) => catalog.apply(records),
      replace: (records) => catalog.replace(records),
      beforeChange: (hook) => catalog.beforeChange(hook),
    },
    stats: (): EngineStats => engineStats({ stores: base.stores, writes: events.writes, wal, flusher, queries: runner, memory: base.memory }),
    onWalSync: (listener) => {
      wal.onSync = listener;
    },
    flush: () => flusher.flush(),
    close: () => close(base, core, features, unlock),
  };
}

async function close(base: Base, core: Core, features: Features, unlock: () => void): Promise<void> {
  if (base.state.closed) return;
  base.state.closed = true;
  const { flusher } = core;
  flusher.stop();
  features.extractions.close();
  features.savedQueries.close();
  features.datasets.close();
  await core.events.writes.settled();
  await base.ingest?.close();
  await flusher.flush();
  await flusher.flush(); // rows that arrived while a timer flush was already running
  await base.wal.close();
  await core.runner.close();
  await base.segmentPool.close();
  base.retired.close();
  unlock();
}
