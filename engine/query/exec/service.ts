/**
 * The query service the engine owns: rate limits per project and category, admission (K running,
 * Q waiting, start deadline), planning (request.ts), and execution on the worker pool, or
 * in-process when `workers` is 0 (tests; cancellation is then cooperative between chunks).
 */
import * as L from '../../base/limits.js';
import type { ScanSource, SegmentRef } from '../../storage/chunk.js';
import { Admission } from './admission.js';
import { CHUNK_CACHE_BYTES_DEFAULT, FOOTER_CACHE_BYTES_DEFAULT } from '../../base/limits.js';
import { ChunkCache } from './chunk-cache.js';
import { ColumnViews } from '../eval/columns.js';
import type { ExecLimits, Plan } from '../plan/plan.js';
import { WorkerPool } from './pool.js';
import { RateLimiter } from '../../base/rate-limit.js';
import { parseRequest } from '../plan/request.js';
import { parseTimezone, resolveTimeframe } from '../plan/timeframe.js';
import { queryIncomplete } from './scan.js';
import { loadSegmentFiles } from './segment-reader.js';
import { checkResponseBytes, runTask, type QueryTask } from './task.js';
import { FixedAggregator, finishAggregate } from './execute.js';
import { countFromFooters, isPlainCount } from './footer-count.js';
import { finishFunnel, finishFunnelKeys, mergeOutcomes, splitSource, workerOfSegment, type PartialBody } from './partial.js';
import { decodePartial, encodeOutcome } from './partial-codec.js';
import { mayCountFromSketches } from './footer-sketch.js';
import { ApiError } from '../../base/errors.js';
import type { QueryActivity } from '../../base/query-activity.js';
import type { AggregatePlan, FunnelPlan } from '../plan/plan.js';
import type { AggregateOutcome } from './result.js';

export interface QueryLimits extends ExecLimits {
  readonly queriesPerMinute: number;
  readonly extractionsPerMinute: number;
  readonly runningMax: number;
  readonly waitingMax: number;
  readonly startDeadlineMs: number;
  readonly timeoutMs: number;
  readonly intervalsMax: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = Object.freeze({
  countUniqueExactMax: L.COUNT_UNIQUE_EXACT_MAX,
  percentileExactMax: L.PERCENTILE_EXACT_MAX,
  groupsMax: L.GROUPS_MAX,
  extractionScanMax: L.EXTRACTION_SCAN_MAX,
  extractionResultMax: L.EXTRACTION_RESULT_MAX,
  funnelActorsMax: L.FUNNEL_ACTORS_MAX,
  funnelStateBytesMax: L.FUNNEL_STATE_BYTES_MAX,
  responseBytesMax: L.RESPONSE_BYTES_MAX,
  queriesPerMinute: L.QUERIES_PER_MINUTE,
  extractionsPerMinute: L.EXTRACTIONS_PER_MINUTE,
  runningMax: L.QUERIES_RUNNING_MAX,
  waitingMax: L.QUERIES_WAITING_MAX,
  startDeadlineMs: L.QUERY_START_DEADLINE_MS,
  timeoutMs: L.QUERY_TIMEOUT_MS,
  intervalsMax: L.INTERVALS_MAX,
});

export interface QueryServiceOptions {
  /** Segments + buffered rows of a collection overlapping [startMs, endMs); schema {} for an unknown collection. */
  source(projectId: string, collection: string, startMs: number, endMs: number): ScanSource;
  /**
   * Keeps the segment files a query lists on disk until the returned function is called (the
   * engine's RetiredFiles); without it, files are assumed to stay (tests over fixed sources).
   */
  lease?: () => () => void;
  clock: () => number;
  /** worker_threads to run scans on; 0 = run in-process (tests). */
  workers: number;
  /** Overrides of the limits.ts values, for every project (tests use tiny ones). */
  limits?: Partial<QueryLimits>;
  /** Per-project overrides of the rate and execution limits (spec: "configurable per project"). */
  projectLimits?: (projectId: string) => Partial<QueryLimits> | undefined;
  /** Byte budget of each worker's decoded-segment cache. */
  cacheBytes?: number;
  /** Whether cache warming may run now (pool.ts); default always. */
  mayWarm?: () => boolean;
  /** Byte budget of each worker's footers and sketches. */
  footerCacheBytes?: number;
  /**
   * Workers one aggregate query's segments are split across (each scans its share into partial
   * states, merged here); default every worker of the pool. 1 = each query on one worker.
   */
  fanOut?: number;
  /** Queries running, counted where the segment worker sees them: its merges pause meanwhile. */
  activity?: QueryActivity;
}

export class QueryService {
  private readonly limits: QueryLimits;
  private readonly rates: RateLimiter;
  private readonly admission: Admission;
  private readonly pool: WorkerPool | null;
  private local: Promise<{ views: ColumnViews; cache: ChunkCache }> | null = null;

  constructor(private readonly opts: QueryServiceOptions) {
    this.limits = { ...DEFAULT_QUERY_LIMITS, ...opts.limits };
    this.rates = new RateLimiter(opts.clock);
    const runningMax = opts.workers > 0 ? Math.min(this.limits.runningMax, opts.workers)
      : this.limits.runningMax;
    this.admission = new Admission(runningMax, this.limits.waitingMax, this.limits.startDeadlineMs);
    this.pool = opts.workers > 0
      ? new WorkerPool(opts.workers, opts.cacheBytes ?? CHUNK_CACHE_BYTES_DEFAULT,
        opts.footerCacheBytes ?? FOOTER_CACHE_BYTES_DEFAULT, opts.mayWarm) : null;
    // luxon's first calendar arithmetic sets up its Intl formatters, ~20 ms on this machine: paid
    // here, at start, rather than by the first query (bench/scale: its first trivial count took 37 ms).
    resolveTimeframe('this_1_days', parseTimezone(undefined), opts.clock());
  }

  /** Queries executing or waiting now, and when the last one finished (ms, Date.now()). */
  private active = 0;
  private lastDoneMs = 0;

  /** Queries executing and waiting to start. */
  depths(): { running: number; waiting: number } {
    return this.admission.depths;
  }

  /** Milliseconds since the last query finished; 0 while one runs. Background work defers to queries. */
  idleMs(): number {
    return this.active > 0 ? 0 : Date.now() - this.lastDoneMs;
  }

  private begin(): void {
    this.active++;
    this.opts.activity?.enter();
  }

  private end(): void {
    this.active--;
    this.lastDoneMs = Date.now();
    this.opts.activity?.leave();
  }

  /**
   * Segments just written: decoded into the caches of the workers that will scan them, while they
   * have no query (pool.ts warm). Without workers (tests), nothing.
   */
  warm(refs: readonly SegmentRef[]): void {
    if (this.pool === null || refs.length === 0) return;
    this.pool.warm(refs, Math.min(this.pool.size, Math.max(1, this.opts.fanOut ?? this.pool.size)));
  }

  /** Segments decoded into a worker's cache before a query asked for them, since start. */
  get segmentsWarmed(): number {
    return this.pool?.segmentsWarmed ?? 0;
  }

  /** Footers read into a worker's cache for segments other workers scan, since start. */
  get footersWarmed(): number {
    return this.pool?.footersWarmed ?? 0;
  }

  /** Segments whose ids were warmed after their other columns (pool.ts warmRest). */
  get segmentsWarmedRest(): number {
    return this.pool?.segmentsWarmedRest ?? 0;
  }

  /** Warms that stopped between columns for a task and went on after it (pool.ts), since start. */
  get warmsPaused(): number {
    return this.pool?.warmsPaused ?? 0;
  }

  /** Segments a worker put in shared memory for the others (pool.ts share), since start. */
  get segmentsShared(): number {
    return this.pool?.segmentsShared ?? 0;
  }

  /** Segments queries read from another worker's shared memory rather than their files, since start. */
  get segmentsReadFromPeers(): number {
    return this.pool?.segmentsReadFromPeers ?? 0;
  }

  /** Segment files gone: dropped from every worker's cache (and the in-process one). */
  forget(files: readonly string[]): void {
    this.pool?.forget(files);
    void this.local?.then(({ cache }) => cache.forget(files));
  }

  /** Checks a query as run() would (the same 400s) without running it or counting it. */
  validate(projectId: string, analysis: string, params: Readonly<Record<string, unknown>>): void {
    const limits = { ...this.limits, ...this.opts.projectLimits?.(projectId) };
    parseRequest(analysis, params, { nowMs: this.opts.clock(), intervalsMax: limits.intervalsMax });
  }

  /** Runs a query; `counted` false keeps it out of the rate limits (cached queries' refreshes). */
  async run(projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, counted = true): Promise<unknown> {
    this.begin();
    try {
      return await this.runCounted(projectId, analysis, params, counted);
    } finally {
      this.end();
    }
  }

  private async runCounted(
    projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, counted: boolean,
  ): Promise<unknown> {
    // With workers, a plain count its footers answer whole is counted here, taking no worker's
    // turn (footer-count.ts); in process, every query runs here anyway.
    const quick = this.pool !== null ? countFromFooters : undefined;
    return this.admitted(projectId, analysis, params, { counted, nowMs: this.opts.clock(), quick }, async (task) => {
      if (this.pool !== null) return this.runOnPool(task);
      const env = await (this.local ??= this.openLocal());
      const body = runTask(task, env);
      if (Date.now() > task.deadlineMs) throw queryIncomplete(task.timeoutMs);
      return body;
    });
  }

  /**
   * Plans a query, counts it, waits for its turn and runs `work` on its task, its files leased;
   * `quick` first, without a turn or a lease, for an answer that reads no file (else null).
   */
  private async admitted<T>(
    projectId: string, analysis: string, params: Readonly<Record<string, unknown>>,
    how: { counted: boolean; nowMs: number; steps?: readonly number[]; quick?: (task: QueryTask) => T | null },
    work: (task: QueryTask) => Promise<T>,
  ): Promise<T> {
    const limits = { ...this.limits, ...this.opts.projectLimits?.(projectId) };
    const plan = parseRequest(analysis, params, { nowMs: how.nowMs, intervalsMax: limits.intervalsMax });
    // A cached query's refresh is not counted: it is outside the ad-hoc limits (seed, Limits rule 4).
    if (how.counted && plan.kind === 'extraction') this.rates.take(projectId, 'extraction', limits.extractionsPerMinute);
    else if (how.counted) this.rates.take(projectId, 'query', limits.queriesPerMinute);
    const taskOf = (): QueryTask => ({
      plan, sources: this.sourcesOf(projectId, plan, how.steps), limits,
      deadlineMs: Date.now() + limits.timeoutMs, timeoutMs: limits.timeoutMs,
    });
    // (A plain count its footers do not answer lists its sources again, under the lease.)
    const answer = how.quick !== undefined && isPlainCount(plan) ? how.quick(taskOf()) : null;
    if (answer !== null) return answer;
    const release = await this.admission.acquire();
    const lease = this.opts.lease?.();
    try {
      return await work(taskOf());
    } finally {
      lease?.();
      release();
    }
  }

  /**
   * What a query reads, checked as run() checks it (the same 400s), nothing run nor counted:
   * its kind and its collections (a funnel's steps', in order). `nowMs` resolves relative timeframes.
   */
  describe(projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, nowMs = this.opts.clock()):
    { kind: Plan['kind']; collections: string[] } {
    const limits = { ...this.limits, ...this.opts.projectLimits?.(projectId) };
    const plan = parseRequest(analysis, params, { nowMs, intervalsMax: limits.intervalsMax });
    return { kind: plan.kind, collections: plan.kind === 'funnel' ? plan.steps.map((step) => step.collection) : [plan.collection] };
  }

  /**
   * A cluster node's share of a query: the partial state (partial-codec.ts) of the query over
   * this store, not its body; for a funnel, the actor sets of its `steps` (indexes, default all).
   * `nowMs` is the coordinator's, so a relative timeframe means the same range and buckets on
   * every node. Counted as a query of the project.
   */
  async runPartial(
    projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, nowMs: number, steps?: readonly number[],
  ): Promise<Uint8Array<ArrayBuffer>> {
    this.begin();
    try {
      return await this.admitted(projectId, analysis, params, { counted: true, nowMs, steps }, async (task) => {
        if (task.plan.kind === 'funnel') return this.funnelSteps(task, steps ?? task.plan.steps.map((_, index) => index));
        if (task.plan.kind !== 'aggregate') throw new ApiError('InvalidQueryError', `A ${analysis} has no partial state.`);
        const whole = task.sources[0];
        if (this.pool === null) {
          const body = runTask({ ...task, whole }, await (this.local ??= this.openLocal())) as unknown as PartialBody;
          return body.state;
        }
        const fanOut = Math.min(this.pool.size, Math.max(1, this.opts.fanOut ?? this.pool.size));
        const shares = splitSource(whole, fanOut).filter((share) => share !== null);
        const tasks = (shares.length === 0 ? [whole] : shares).map((share): QueryTask => ({ ...task, sources: [share], whole }));
        const bodies = (await this.pool.runAll(tasks, task.timeoutMs)) as unknown as PartialBody[];
        const { outcome, eventsScanned } = mergePartials(task.plan, bodies.map((body) => body.state));
        return encodeOutcome(outcome, eventsScanned);
      });
    } finally {
      this.end();
    }
  }

  /** A funnel's `steps` scanned on one worker, encoded (partial-codec.ts, version 2). */
  private async funnelSteps(task: QueryTask, steps: readonly number[]): Promise<Uint8Array<ArrayBuffer>> {
    const share: QueryTask = { ...task, funnelSteps: steps };
    const body = this.pool !== null ? await this.pool.run(share) : runTask(share, await (this.local ??= this.openLocal()));
    return (body as unknown as PartialBody).state;
  }

  /** The body of a query from the partial states of its shares (runPartial on each node; a funnel's steps on theirs). */
  finishPartials(
    projectId: string, analysis: string, params: Readonly<Record<string, unknown>>, nowMs: number, states: readonly Uint8Array[],
  ): Record<string, unknown> {
    const startedMs = Date.now();
    const limits = { ...this.limits, ...this.opts.projectLimits?.(projectId) };
    const plan = parseRequest(analysis, params, { nowMs, intervalsMax: limits.intervalsMax });
    if (plan.kind === 'extraction' || states.length === 0) throw new ApiError('InvalidQueryError', `A ${analysis} has no partial state.`);
    let body: Record<string, unknown>;
    if (plan.kind === 'funnel') {
      body = finishFunnel(plan, states, startedMs);
    } else {
      const { outcome, eventsScanned } = mergePartials(plan, states);
      body = finishAggregate(plan, outcome, eventsScanned, startedMs);
    }
    checkResponseBytes(body, limits.responseBytesMax);
    return body;
  }

  /** Counts one extraction against the project's extraction rate limit (asynchronous jobs). */
  takeExtraction(projectId: string): void {
    const limits = { ...this.limits, ...this.opts.projectLimits?.(projectId) };
    this.rates.take(projectId, 'extraction', limits.extractionsPerMinute);
  }

  /**
   * Runs one asynchronous extraction task (engine/query/exec/jobs.ts) on a worker, outside the
   * admission queue (a job runs one task at a time); returns the events it wrote to output.file.
   */
  async extractToFile(plan: Plan, source: ScanSource, output: QueryTask['output']): Promise<number> {
    const task: QueryTask = {
      plan, sources: [source], limits: this.limits, output,
      deadlineMs: Date.now() + this.limits.timeoutMs, timeoutMs: this.limits.timeoutMs,
    };
    const body = this.pool !== null ? await this.pool.run(task)
      : runTask(task, await (this.local ??= this.openLocal()));
    return body.events as number;
  }

  private async runOnPool(task: QueryTask): Promise<Record<string, unknown>> {
    const pool = this.pool!;
    const plan = task.plan;
    const fanOut = Math.min(pool.size, Math.max(1, this.opts.fanOut ?? pool.size));
    // Extraction and funnel run whole on one worker; so do plain counts, which the segment
    // footers answer without reading the segments (or runCounted did, footer-count.ts).
    const footerCount = isPlainCount(plan);
    // An extraction reads the newest segment first (the latest events, warmed whole in the cache
    // of the worker that owns it: pool.ts warm), so it goes to that worker when it is free.
    if (plan.kind === 'extraction') return pool.run(task, newestOwner(task.sources, fanOut));
    if (plan.kind === 'funnel' && fanOut > 1 && !plan.steps.some((step) => step.withActors)) return this.funnelOnPool(task, plan, fanOut);
    if (plan.kind !== 'aggregate' || fanOut <= 1 || footerCount) return pool.run(task);
    const whole = task.sources[0];
    const shares = splitSource(whole, fanOut);
    if (shares.filter((share) => share !== null).length <= 1) return pool.run(task);
    const startedMs = Date.now();
    // A share's task carries the whole source for the footer-sketch estimate alone, the only
    // reader of its buffered rows: without it, a worker whose share has none is not posted
    // them (right after a load, cloning a buffer's rows cost more than the query).
    const wholeOfShares = mayCountFromSketches(plan) ? whole : { ...whole, memory: null, memoryVersion: 0 };
    const tasks = shares.map((share): QueryTask | null => (share === null ? null
      : { ...task, sources: [share], whole: wholeOfShares }));
    const bodies = await pool.runAll(tasks, task.timeoutMs);
    const { outcome, eventsScanned } = mergePartials(plan,
      (bodies.filter((body) => body !== null) as unknown as PartialBody[]).map((body) => body.state));
    const body = finishAggregate(plan, outcome, eventsScanned, startedMs);
    checkResponseBytes(body, task.limits.responseBytesMax);
    return body;
  }

  /**
   * A funnel fanned out as aggregates are: each worker finds every step's actor keys among the
   * days it owns (and their cache holds), the coordinator unites each step's and runs the step
   * logic (partial.ts finishFunnelKeys). Whole on one worker when one owns everything it reads.
   */
  private async funnelOnPool(task: QueryTask, plan: FunnelPlan, fanOut: number): Promise<Record<string, unknown>> {
    const pool = this.pool!;
    const byStep = task.sources.map((source) => splitSource(source, fanOut));
    const tasks = Array.from({ length: fanOut }, (_, w): QueryTask | null => (byStep.every((shares) => shares[w] === null) ? null
      : { ...task, funnelKeys: true, sources: byStep.map((shares, index) => shares[w] ?? emptySource()) }));
    if (tasks.filter((share) => share !== null).length <= 1) return pool.run(task);
    const startedMs = Date.now();
    const bodies = await pool.runAll(tasks, task.timeoutMs);
    const states = (bodies.filter((body) => body !== null) as unknown as PartialBody[]).map((body) => body.state);
    return finishFunnelKeys(plan, states, startedMs, task.limits.funnelActorsMax);
  }

  /** The plan's sources; a funnel's steps not among `steps` (when given) read nothing. */
  private sourcesOf(projectId: string, plan: Plan, steps?: readonly number[]): ScanSource[] {
    const source = (collection: string, range: { startMs: number; endMs: number }) =>
      this.opts.source(projectId, collection, range.startMs, range.endMs);
    if (plan.kind === 'funnel') {
      if (steps !== undefined) checkSteps(steps, plan.steps.length);
      return plan.steps.map((step, index) => (steps === undefined || steps.includes(index) ? source(step.collection, step.range)
        : emptySource()));
    }
    return [source(plan.collection, plan.range)];
  }

  private async openLocal(): Promise<{ views: ColumnViews; cache: ChunkCache }> {
    const cache = new ChunkCache(await loadSegmentFiles(), this.opts.cacheBytes ?? CHUNK_CACHE_BYTES_DEFAULT,
      this.opts.footerCacheBytes ?? FOOTER_CACHE_BYTES_DEFAULT);
    return { views: new ColumnViews(), cache };
  }

  async close(): Promise<void> {
    await this.pool?.close();
  }
}

/** Merges encoded partial states of one plan; a footer-sketch estimate (computed over the whole source by every share) counts its events once. */
function mergePartials(plan: AggregatePlan, states: readonly Uint8Array[]): { outcome: AggregateOutcome; eventsScanned: number } {
  const partials = states.map((state) => decodePartial(state, plan));
  const outcomes = partials.map((partial) => partial.outcome);
  const outcome = mergeOutcomes(plan, outcomes);
  const eventsScanned = outcome.aggregators[0] instanceof FixedAggregator
    ? partials[outcomes.indexOf(outcome)].eventsScanned
    : partials.reduce((total, partial) => total + partial.eventsScanned, 0);
  return { outcome, eventsScanned };
}

/** A funnel share's step indexes: distinct steps of the plan, at least one. */
function checkSteps(steps: readonly number[], count: number): void {
  const ok = steps.length > 0 && new Set(steps).size === steps.length
    && steps.every((index) => Number.isInteger(index) && index >= 0 && index < count);
  if (!ok) throw new ApiError('InvalidQueryError', `A funnel share names steps ${JSON.stringify(steps)} of a ${count}-step funnel.`);
}

/** A source that reads nothing (a funnel step another share or node scans). */
function emptySource(): ScanSource {
  return { idKey: 0, segments: [], memory: null, memoryVersion: 0, schema: {} };
}

/** The worker (of `workers`) that owns the newest of the sources' segments, if they have any. */
function newestOwner(sources: readonly ScanSource[], workers: number): number | undefined {
  let newest: SegmentRef | null = null;
  for (const source of sources) {
    for (const ref of source.segments) if (newest === null || ref.footer.tsMax > newest.footer.tsMax) newest = ref;
  }
  return newest === null ? undefined : workerOfSegment(newest.file, workers);
}
