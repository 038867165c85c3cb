/**
 * The types of the engine's public surface. The server, the Kafka broker, the bench and embedding
 * programs code against TallyEngine; engine/services/open.ts assembles it. Wire field names stay snake_case.
 */
import type { Logger } from '../base/logger.js';
import type { SavedQuery } from '../catalog/saved-queries.js';
import type { AccessKey } from '../catalog/access-keys.js';
import type { DatasetView } from '../catalog/datasets.js';
import type { ColumnChunk, SchemaType, ScanSource } from '../storage/chunk.js';
import type { ExtractionJob } from '../query/exec/jobs.js';
import type { FilterNode } from '../query/plan/plan.js';
import type { DeletePlan } from '../storage/delete-entry.js';


export type { DeletePlan };
export type { ExtractionJob } from '../query/exec/jobs.js';

import type { KeyKind, ProjectInfo } from '../catalog/project-info.js';
import type { CatalogRecord } from '../catalog/records.js';

export type { KeyKind, ProjectInfo };
export type { CatalogKind, CatalogRecord, OrgState } from '../catalog/records.js';
export type { EventToWrite, WriteContext } from '../ingest/event-preparer.js';
export type { AppendOptions, AppendResult, BatchAppendResult, ReplayedTag, StampResult } from '../write/results.js';
import type { EventToWrite, WriteContext } from '../ingest/event-preparer.js';
import type { AppendOptions, AppendResult, BatchAppendResult, ReplayedTag, StampResult } from '../write/results.js';

export interface CollectionSchema {
  readonly name: string;
  readonly properties: Readonly<Record<string, SchemaType>>;
}

import type { LogRecord } from '../log/record.js';

export type { LogRecord };

export interface CommittedOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly metadata: string | null;
}

export interface EngineOptions {
  /** Data root; created if absent. */
  readonly dataDir: string;
  /** Organization id (default "default"). */
  readonly orgId?: string;
  /** Organization key; when absent one is generated once and kept in the data dir. */
  readonly orgKey?: string;
  /** A MaxMind-format City database for svc:ip_to_geo; default: the bundled DB-IP City Lite. */
  readonly geoipDbPath?: string;
  /**
   * When the add-ons' rule data (uap-core, the referrer table) is read: at open (the server,
   * so the first event that asks for an add-on is not the one that waits ~0.6 s) or on first
   * use (the default, so an embedding program opens in milliseconds).
   */
  readonly addonData?: 'at-open' | 'on-first-use';
  /** ms since the epoch; injectable for tests. */
  readonly clock?: () => number;
  /** How often buffered rows are flushed to segments; default FLUSH_INTERVAL_MS. */
  readonly flushIntervalMs?: number;
  /**
   * Buffered rows (all collections) past which writes wait for a flush; default twice the rows at
   * which a flush is asked for (250,000), so only a flush held up behind a merge makes writes wait.
   */
  readonly writeBacklogRows?: number;
  /**
   * Worker threads that parse and prepare large batch bodies; default: one per core but one. 0 prepares
   * every batch on the thread that serves writes.
   */
  readonly ingestWorkers?: number;
  /** Worker threads for queries; default: one per core. 0 runs queries in-process. */
  readonly queryWorkers?: number;
  /**
   * Bytes for caches and write buffers (engine/base/memory.ts splits them); default: a thirty-second of
   * the machine's memory, between 256 MiB and 2 GiB.
   */
  readonly memoryBudgetBytes?: number;
  /**
   * Whether segments a flush or a merge writes, and the stored ones at open, are decoded into the
   * query workers' caches while they are idle, so the first query after a load or a restart reads
   * them from memory (default true; query/exec/pool.ts warm says when it holds back).
   */
  readonly cacheWarming?: boolean;
  /** Whether to fsync the WAL before acknowledging (default true). Only benchmarks turn it off. */
  readonly fsync?: boolean;
  /** Where the engine reports recoveries and failures; JSON lines on stderr at info by default. */
  readonly logger?: Logger;
  /**
   * How saved queries' results and cached queries' refreshes are run; default this engine's own
   * queries.run. A cluster of nodes gives its router, so they read the events wherever they are
   * stored (server/cluster/queries.ts). `counted` false: a refresh, outside the rate limits.
   */
  readonly savedQueryRunner?: (projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, counted: boolean) => Promise<unknown>;
  /** Put before every new asynchronous extraction job's id (a cluster node names itself: `n1-`); default none. */
  readonly extractionJobPrefix?: string;
}

/** Numbers an operator watches (the server's /metrics); cheap to compute, plain data. */
export interface EngineStats {
  /** Events accepted since start (stored, or dropped as duplicates of a uniqueness token). */
  readonly eventsAccepted: number;
  /** Events refused since start (invalid, or all events of an atomic append with one invalid). */
  readonly eventsRefused: number;
  /** Valid events not stored because the disk failed them (503; a full disk). */
  readonly eventsFailed: number;
  /** WAL write or sync failures, and recoveries from them without a restart. */
  readonly walFailures: number;
  readonly walRecoveries: number;
  /** Flushes or compactions that failed (retried on the next flush). */
  readonly flushFailures: number;
  /** Writes that waited for a flush because the write buffers were full (a flush behind a merge). */
  readonly writesHeldBack: number;
  /** Milliseconds merges and delete rewrites under way stood still while queries ran. */
  readonly backgroundPausedMs: number;
  /** Queries executing and waiting for a slot (K running, Q waiting). */
  readonly queriesRunning: number;
  readonly queriesWaiting: number;
  /** Segments decoded into the query caches before any query asked for them (EngineOptions.cacheWarming). */
  readonly segmentsWarmed: number;
  /** Segments a query worker put in shared memory for the others, and segment loads queries made from there (not the files). */
  readonly segmentsShared: number;
  readonly segmentsReadFromPeers: number;
  /** Rows in the write buffers, not yet in segments. */
  readonly bufferRows: number;
  readonly segments: number;
  readonly segmentRows: number;
  readonly segmentBytes: number;
  /**
   * Day partitions where compaction has segments yet to merge (two or more under half a merged
   * segment's rows). A large day stays several full segments: not a backlog.
   */
  readonly compactionBacklog: number;
  readonly memoryBudgetBytes: number;
}

/**
 * The engine: small services, each one job, built in recovery order by engine/services/open.ts.
 * Every method that names a project refuses an unknown one with 404 ResourceNotFoundError, and
 * every write or query refuses with 503 ServiceUnavailableError once close() has begun.
 */
export interface TallyEngine {
  /** True when open() found an empty data dir and created the default project. */
  readonly created: boolean;
  readonly organization: OrganizationService;
  readonly projects: ProjectService;
  readonly events: EventService;
  readonly collections: CollectionService;
  readonly queries: QueryService;
  readonly accessKeys: AccessKeyService;
  readonly savedQueries: SavedQueryService;
  readonly datasets: DatasetService;
  /** The collections as Kafka logs (the outbound listener, cached datasets). */
  readonly log: LogService;
  /** Kafka consumer group offsets, per project. */
  readonly groups: GroupOffsetService;
  /** The organization and its catalog as records (cluster mode shares them). */
  readonly catalog: CatalogService;

  /** Counters and sizes for monitoring (computed on call). */
  stats(): EngineStats;
  /** Calls `listener` with the seconds of each WAL fdatasync (a latency histogram). */
  onWalSync(listener: (seconds: number) => void): void;
  /** Flushes buffered rows to segments (also runs on a timer). */
  flush(): Promise<void>;
  /** Stops timers, flushes, closes files and workers. */
  close(): Promise<void>;
}

export interface OrganizationService {
  /** The organization's id and key: a cluster node adopts the shared ones (CatalogService). */
  readonly id: string;
  readonly key: string;
  /** True when `key` is the organization key (org API, versions endpoint). */
  isOrgKey(key: string): boolean;
}

/**
 * The organization, projects, access keys, saved queries and dataset definitions as records of
 * their full state (engine/catalog/records.ts). Every change the other services make passes the
 * beforeChange hooks before it is applied; the mutating methods of those services resolve after.
 */
export interface CatalogService {
  /** The organization (id '') and every object, projects before what is theirs. */
  records(): CatalogRecord[];
  /** Applies records made elsewhere, in order; idempotent, the last record of an object wins. */
  apply(records: readonly CatalogRecord[]): void;
  /** Makes the catalog exactly `records`, the organization's id and key included. */
  replace(records: readonly CatalogRecord[]): void;
  /**
   * Registers `hook`, awaited with a change's records before they are applied: a rejection
   * is the change's (nothing applied). Returns an unregister function.
   */
  beforeChange(hook: (records: readonly CatalogRecord[]) => Promise<void>): () => void;
}

export interface ProjectService {
  create(name: string): Promise<ProjectInfo>;
  list(): ProjectInfo[];
  get(projectId: string): ProjectInfo | undefined;
  /** Replaces the project's write or read key; the old one stops working at once. */
  regenerateKey(projectId: string, kind: 'write' | 'read'): Promise<string>;
  /** The kind of `key` in project `projectId`, or null when it is none of its keys. */
  authenticate(projectId: string, key: string): KeyKind | null;
  /** True when `key` is the master key of any project (versions endpoint). */
  isAnyMasterKey(key: string): boolean;
}

export interface EventService {
  /**
   * Validates, enriches and durably appends events. Resolves once every accepted event is fsynced.
   * Never rejects for bad events: each gets its own result. Rejects only on I/O failure.
   */
  append(projectId: string, events: readonly EventToWrite[], ctx: WriteContext, options?: AppendOptions): Promise<AppendResult[]>;
  /**
   * Cluster mode, on the node that takes a write: checks events as append would, except
   * what only the node storing them can (uniqueness tokens; the collection's property bound is
   * checked against its schema here and now), and stamps the valid ones with this call's receipt
   * time (svc.timestamp when absent, svc.created_at) and `ctx`'s placeholders. Stores nothing.
   * Throws ApiError, as append rejects, for an unknown project or a closed engine.
   */
  stamp(projectId: string, events: readonly EventToWrite[], ctx: WriteContext): StampResult[];
  /**
   * Parses a batch body (a JSON object of collection name → array of events) and appends its
   * events as append does; large bodies are parsed and prepared on ingest workers. Rejects
   * with InvalidJsonError or InvalidBatchError for a body that is not a batch.
   */
  appendBatch(projectId: string, body: Uint8Array, ctx: WriteContext): Promise<BatchAppendResult>;
  /** Calls listener after events are appended (acknowledged); returns an unsubscribe function. */
  onAppend(listener: (projectId: string, collection: string) => void): () => void;
  /**
   * The tags of the WAL records replayed when the engine opened, in WAL order: every record
   * written since the last flush that deleted its WAL file (also those whose rows were flushed).
   */
  replayedTags(): readonly ReplayedTag[];
  /**
   * Calls `listener` for each tagged append once its events are durable and applied, before the
   * append resolves (so before any flush can delete its WAL record); returns an unsubscribe
   * function.
   */
  onTagged(listener: (projectId: string, tag: string, firstOffset: number) => void): () => void;
  /**
   * Registers `hook`, awaited by every flush after its segments and manifest are written and
   * before it deletes the WAL files they replace; a rejection fails the flush and keeps the files.
   * Lets whoever keeps state derived from tags make it durable before the tags' records go.
   * Returns an unregister function.
   */
  beforeWalRemove(hook: () => Promise<void>): () => void;
}

export interface CollectionService {
  list(projectId: string): CollectionSchema[];
  get(projectId: string, collection: string): CollectionSchema | undefined;
  /**
   * Keeps every segment file now listed on disk until the returned function is called: hold one
   * while reading the segments scanSource names, since compaction replaces files meanwhile.
   */
  leaseSegments(): () => void;
  /** Segments and buffered rows of a collection overlapping [startMs, endMs) (see leaseSegments). */
  scanSource(projectId: string, collection: string, startMs: number, endMs: number): ScanSource;
  /** The same rows as chunks, read in this process (embedded use); holds a lease while iterating. */
  scan(projectId: string, collection: string, startMs: number, endMs: number): Iterable<ColumnChunk>;
  /**
   * Deletes events (docs/api.md §7): those matching `filters`/`timeframe`/`timezone`, or with none
   * of them the whole collection and its schema. Durable when it resolves; rows leave the disk in
   * the background. ResourceNotFoundError for an unknown collection; rate-limited (429).
   */
  deleteEvents(projectId: string, collection: string, params: Readonly<Record<string, unknown>>): Promise<void>;
  /** Deletes a property (and the paths below it) from the collection's schema and data. */
  deleteProperty(projectId: string, collection: string, property: string): Promise<void>;
  /**
   * A delete of events checked as deleteEvents checks it (the same 400s, the rate limit: 429) but
   * not applied and whether or not this store has the collection: a relative timeframe resolved
   * now, so every node that applies the plan later deletes the same range (cluster mode).
   */
  planDeleteEvents(projectId: string, collection: string, params: Readonly<Record<string, unknown>>): DeletePlan;
  /** A property delete checked as deleteProperty checks what needs no data (svc paths: 404; 429). */
  planDeleteProperty(projectId: string, collection: string, property: string): DeletePlan;
  /**
   * Applies a planned delete to this store now, bound to the events stored so far: no rate limit.
   * False when the store has no such collection (or property): nothing to delete. Durable when it
   * resolves.
   */
  applyDelete(projectId: string, collection: string, plan: DeletePlan): Promise<boolean>;
  /**
   * Calls listener after a delete of the collection's events, properties or the collection itself
   * is durable (results cached over it are stale); returns an unsubscribe function.
   */
  onDelete(listener: (projectId: string, collection: string) => void): () => void;
}

export interface QueryService {
  /**
   * Runs an analysis (docs/api.md §6); throws ApiError for bad queries and limits. `counted` false
   * keeps it out of the rate limits (a cached query's refresh).
   */
  run(projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, counted?: boolean): Promise<unknown>;
  /**
   * What a query reads, checked as run() checks it (the same 400s), nothing run nor counted: its
   * kind and collections (a funnel's steps'). `nowMs` (default now) resolves relative timeframes.
   */
  describe(projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, nowMs?: number):
    { kind: 'aggregate' | 'extraction' | 'funnel'; collections: string[] };
  /**
   * Cluster fan-out: an aggregate query (not an extraction: 400) over this node's store, answered
   * as its encoded partial state (engine/query/exec/partial-codec.ts); for a funnel, the actor
   * sets of its `steps` (indexes; default all), the others not read. `nowMs` is the coordinating
   * node's, so relative timeframes resolve alike. Counted as a query.
   */
  runPartial(
    projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, nowMs: number, steps?: readonly number[],
  ): Promise<Uint8Array>;
  /**
   * The body of a query from the partial states runPartial gave on each node, merged as the
   * workers' are; a funnel's from states that hold each of its steps once.
   */
  finishPartials(
    projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, nowMs: number, states: readonly Uint8Array[],
  ): Record<string, unknown>;
  /**
   * Queues an asynchronous extraction (docs/api.md §11) after validating it as a synchronous one
   * would be validated (ApiError 400s, 429 in the extractions category). The job survives restarts.
   */
  submitExtraction(projectId: string, params: Readonly<Record<string, unknown>>): ExtractionJob;
  /** A job of the project, or undefined when unknown or expired. */
  extractionJob(projectId: string, id: string): ExtractionJob | undefined;
  /** The finished job's file and its content type; 404 unknown/expired, 409 ExtractionNotReadyError. */
  extractionResult(projectId: string, id: string): { file: string; contentType: string };
}

/** Access keys (docs/api.md §8; engine/catalog/access-keys.ts). Unknown keys → 404 ResourceNotFoundError. */
export interface AccessKeyService {
  create(projectId: string, body: unknown): Promise<AccessKey>;
  list(projectId: string, name?: string): AccessKey[];
  get(projectId: string, key: string): AccessKey;
  update(projectId: string, key: string, body: unknown): Promise<AccessKey>;
  setActive(projectId: string, key: string, active: boolean): Promise<AccessKey>;
  delete(projectId: string, key: string): Promise<void>;
  /** The access key record `key` names in this project (active or not), or null. */
  find(projectId: string, key: string): AccessKey | null;
}

/** Saved and cached queries (docs/api.md §9; engine/catalog/saved-queries.ts). */
export interface SavedQueryService {
  list(projectId: string): SavedQuery[];
  /** Throws 404 ResourceNotFoundError for an unknown name. */
  get(projectId: string, name: string): SavedQuery;
  /** Creates or replaces (a body's `query_name` renames); validated as an ad-hoc query, not run. */
  put(projectId: string, name: string, body: unknown): Promise<{ created: boolean; saved: SavedQuery }>;
  delete(projectId: string, name: string): Promise<void>;
  /** The definition plus `result`: a cached query's from memory, else run now (counts as ad-hoc). */
  result(projectId: string, name: string): Promise<SavedQuery & { result: unknown }>;
}

/** Cached datasets (docs/api.md §10; engine/catalog/datasets.ts). Unknown names → 404 ResourceNotFoundError. */
export interface DatasetService {
  put(projectId: string, name: string, body: unknown): Promise<DatasetView>;
  list(projectId: string): DatasetView[];
  get(projectId: string, name: string): DatasetView;
  delete(projectId: string, name: string): Promise<void>;
  /** Per interval bucket of `timeframe`, the value for one index value (503 until bootstrapped). */
  results(projectId: string, name: string, indexBy: unknown, timeframe: unknown): { timeframe: { start: string; end: string }; value: unknown }[];
}

export interface LogService {
  /** The collection's log: first offset still stored and the next offset to be written. */
  bounds(projectId: string, collection: string): { start: number; end: number };
  /**
   * Up to maxRecords records from `fromOffset` on (skipping deleted offsets), at most ~maxBytes.
   * With `filters` (cached datasets), each record says whether its event passes them.
   */
  read(projectId: string, collection: string, fromOffset: number, maxRecords: number, maxBytes: number,
    filters?: readonly FilterNode[]): LogRecord[];
  /** First offset whose svc.created_at is ≥ timestampMs, or the end offset. */
  offsetForTime(projectId: string, collection: string, timestampMs: number): number;
}

export interface GroupOffsetService {
  commit(projectId: string, groupId: string, offsets: readonly CommittedOffset[]): Promise<void>;
  fetch(projectId: string, groupId: string): CommittedOffset[];
}
