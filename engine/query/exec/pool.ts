/**
 * A fixed pool of query worker threads (worker.ts). A query runs as one task on one worker, or
 * fanned out as one task per worker (partial.ts); each worker runs its tasks one at a time from
 * its own queue. A query past its timeout is really cancelled: its queued tasks are dropped, the
 * workers running its tasks are terminated and replaced, and the query fails with 504
 * QueryIncompleteError.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { assert } from '../../base/assert.js';
import { ApiError, type ErrorCode } from '../../base/errors.js';
import {
  SENT_FOOTERS_MAX, WARM_QUEUE_MAX, WARM_REST_SHARE, WARM_RETRY_MS, WORKER_YOUNG_GENERATION_MB,
} from '../../base/limits.js';
import { queryIncomplete } from './scan.js';
import type { ScanSource, SegmentFooter, SegmentRef } from '../../storage/chunk.js';
import { KeptSnapshots, type QueryTask } from './task.js';
import type {
  WorkerForget, WorkerPeers, WorkerReply, WorkerRequest, WorkerShared, WorkerWarm, WorkerWarmed,
} from './worker.js';
import type { SharedChunk } from '../../storage/segment/shared-chunk.js';
import { workerOfSegment } from './partial.js';

interface Job {
  readonly id: number;
  readonly task: QueryTask;
  readonly settle: (reply: WorkerReply | Error) => void;
}

interface Slot {
  worker: Worker;
  /** Resolves once the worker has loaded its modules; a query's timeout starts after it. */
  ready: Promise<void>;
  current: Job | null;
  readonly queue: Job[];
  /** Buffer snapshots this worker holds (worker.ts keeps the same): not posted again. */
  sent: KeptSnapshots<true>;
  /** Segment files whose footers this worker holds (worker.ts keeps them): posted as names. */
  footers: Set<string>;
  /** Fresh segments to decode into the worker's cache while it has no query (warm()). */
  readonly toWarm: Map<string, SegmentRef>;
  /** Fresh segments other workers scan, whose footers this worker reads too (warm()); before toWarm. */
  readonly toWarmFooters: Map<string, SegmentRef>;
  /** Segments warmed without their ids, whose ids go in after toWarm is done, while they fit (warmNext). */
  readonly toWarmRest: Map<string, SegmentRef>;
  /** A warm message is with the worker: the next one goes after its 'warmed'. */
  warming: boolean;
  /** Shared with the worker: set when a task is posted while a warm is with it, which then stops (worker.ts). */
  waiting: Int32Array;
  /** Rows of every segment this worker scans that warm() was told of and forget() did not drop. */
  readonly known: Map<string, number>;
  knownRows: number;
  /** Rows and cache bytes (columns without ids) of the segments warmed so far: the bytes a row takes once warmed. */
  warmedRows: number;
  warmedBytes: number;
  /** Rows of the segment being warmed, whether it is warmed whole, and whether only its footer is. */
  warmingRows: number;
  warmingWhole: boolean;
  warmingFooter: boolean;
  warmingRest: boolean;
  warmingRef: SegmentRef | null;
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private closed = false;
  /** Segments decoded into a worker's cache before any query asked for them (warm()). */
  segmentsWarmed = 0;
  /** Of those, the ones warmed whole (each collection's newest segment). */
  segmentsWarmedWhole = 0;
  /** Footers read into a worker's cache for segments other workers scan (warm()). */
  footersWarmed = 0;
  /** Segments whose ids (the columns left out at first) were then warmed too (warmNext). */
  segmentsWarmedRest = 0;
  /** Warms that stopped between columns for a task posted meanwhile, and went on after it. */
  warmsPaused = 0;
  /** Each collection's newest segment known to warm(), by the collection's folder. */
  private readonly newest = new Map<string, { readonly file: string; readonly tsMax: number }>();
  /** Segments to warm whole: a collection's newest, while not yet warmed. */
  private readonly whole = new Set<string>();
  /**
   * Segments a worker holds in shared memory (worker.ts WorkerShared), by file: every other
   * worker is told (WorkerPeers) and reads them from there, so a query run whole on one worker (a
   * funnel, an extraction) reads the other workers' segments from their caches, not the files,
   * and decodes no second copy.
   */
  private readonly shared = new Map<string, { readonly owner: Slot; readonly chunk: SharedChunk }>();
  /** Segments shared so far (each time a worker shares one, or shares it again with more columns). */
  segmentsShared = 0;
  /** Segments tasks read from another worker's shared memory (not from their files). */
  segmentsReadFromPeers = 0;
  /** Whether workers share what they warm: with one worker, no other would read it. */
  private readonly sharing: boolean;

  /** `mayWarm`: whether warming may run now (the engine says no while a bulk load runs). */
  constructor(
    size: number, private readonly cacheBytes: number, private readonly footerCacheBytes: number,
    private readonly mayWarm: () => boolean = () => true,
  ) {
    assert(size >= 1, 'a pool has at least one worker');
    this.sharing = size > 1;
    for (let s = 0; s < size; s++) {
      const slot = {
        current: null, queue: [], toWarm: new Map(), toWarmFooters: new Map(), toWarmRest: new Map(), warming: false,
        known: new Map(), knownRows: 0, warmedRows: 0, warmedBytes: 0, warmingRows: 0, warmingWhole: false,
        warmingFooter: false, warmingRest: false, warmingRef: null,
      } as unknown as Slot;
      this.spawn(slot, true);
      this.slots.push(slot);
    }
  }

  get size(): number {
    return this.slots.length;
  }

  /**
   * Starts the slot's worker: primed (prime.ts) when the pool starts, not when it replaces one
   * past a query's timeout: the queries queued then come first, not its ~0.75 s of priming.
   */
  private spawn(slot: Slot, prime = false): void {
    slot.waiting = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: {
        cacheBytes: this.cacheBytes, footerCacheBytes: this.footerCacheBytes, waiting: slot.waiting, prime, sharing: this.sharing,
      },
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    });
    let markReady = () => {};
    slot.worker = worker;
    slot.sent = new KeptSnapshots();
    slot.footers = new Set();
    slot.warming = false;
    slot.warmingFooter = false;
    slot.warmingRest = false;
    slot.ready = new Promise((resolve) => (markReady = resolve));
    worker.on('message', (reply: WorkerReply | WorkerWarmed | WorkerShared | 'ready') => {
      if (slot.worker !== worker) return;
      if (reply === 'ready') markReady();
      else if ('shared' in reply) this.share(slot, reply.shared);
      else if ('unshared' in reply) this.unshare(slot, reply.unshared);
      else if ('warmed' in reply && slot.warmingFooter) {
        if (reply.warmed) this.footersWarmed++;
        slot.warming = false;
        slot.warmingFooter = false;
        // The footer budget is spent: the queries' own footers come first.
        if (reply.full) slot.toWarmFooters.clear();
        this.pump(slot);
      } else if ('warmed' in reply && reply.paused) {
        // Stopped for a task: the same segment goes on next, unless it is gone meanwhile (forget).
        this.warmsPaused++;
        const ref = slot.warmingRef!;
        if (slot.known.has(ref.file)) {
          if (slot.warmingRest) slot.toWarmRest.set(ref.file, ref);
          else {
            slot.toWarm.set(ref.file, ref);
            if (slot.warmingWhole) this.whole.add(ref.file);
          }
        }
        slot.warming = false;
        slot.warmingRest = false;
        this.pump(slot);
      } else if ('warmed' in reply && slot.warmingRest) {
        if (reply.warmed) this.segmentsWarmedRest++;
        slot.warming = false;
        slot.warmingRest = false;
        if (reply.full) slot.toWarmRest.clear();
        this.pump(slot);
      } else if ('warmed' in reply) {
        if (reply.warmed) {
          this.segmentsWarmed++;
          if (slot.warmingWhole) this.segmentsWarmedWhole++;
          slot.warmedRows += slot.warmingRows;
          slot.warmedBytes += reply.bytes;
          if (!slot.warmingWhole && slot.warmingRef !== null) {
            slot.toWarmRest.set(slot.warmingRef.file, slot.warmingRef);
            if (slot.toWarmRest.size > WARM_QUEUE_MAX) slot.toWarmRest.delete(slot.toWarmRest.keys().next().value!);
          }
        }
        slot.warming = false;
        // No room: the older segments queued would not fit either (each is read first).
        if (reply.full) slot.toWarm.clear();
        this.pump(slot);
      } else this.finish(slot, reply);
    });
    const fail = (error: Error) => {
      if (this.closed || slot.worker !== worker) return;
      this.replace(slot);
      this.finish(slot, error);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`query worker exited (${code})`)));
  }

  /** Terminates the slot's worker (abandoning its current task) and starts a fresh one. */
  private replace(slot: Slot): void {
    void slot.worker.terminate();
    // What it shared dies with it; the fresh worker reads what the others share.
    this.unshare(slot, [...this.shared].filter(([, { owner }]) => owner === slot).map(([file]) => file));
    this.spawn(slot);
    for (const { owner, chunk } of this.shared.values()) {
      if (owner !== slot) slot.worker.postMessage({ peer: chunk } satisfies WorkerPeers);
    }
  }

  /** A segment `owner` holds in shared memory: the other workers read it from there. */
  private share(owner: Slot, chunk: SharedChunk): void {
    if (this.closed) return;
    this.segmentsShared++;
    this.shared.set(chunk.parts.file, { owner, chunk });
    for (const slot of this.slots) if (slot !== owner) slot.worker.postMessage({ peer: chunk } satisfies WorkerPeers);
  }

  /** Segments `owner` no longer holds: the other workers read them from the files again. */
  private unshare(owner: Slot, files: readonly string[]): void {
    const gone = files.filter((file) => this.shared.get(file)?.owner === owner);
    if (this.closed || gone.length === 0) return;
    for (const file of gone) this.shared.delete(file);
    for (const slot of this.slots) if (slot !== owner) slot.worker.postMessage({ unpeer: gone } satisfies WorkerPeers);
  }

  private finish(slot: Slot, reply: WorkerReply | Error): void {
    if (!(reply instanceof Error) && reply.ok) this.segmentsReadFromPeers += reply.peerReads;
    const job = slot.current;
    slot.current = null;
    job?.settle(reply);
    this.pump(slot);
  }

  private pump(slot: Slot): void {
    if (slot.current !== null || this.closed) return;
    const job = slot.queue.shift();
    if (job === undefined) {
      this.warmNext(slot);
      return;
    }
    slot.current = job;
    // Both sides forget every footer at the same point in the message order (worker.ts).
    const resetFooters = slot.footers.size > SENT_FOOTERS_MAX;
    if (resetFooters) slot.footers.clear();
    const task = withoutSent(job.task, slot.sent, slot.footers);
    // A warm with the worker stops before its next column; the task then runs (worker.ts warm).
    if (slot.warming) Atomics.store(slot.waiting, 0, 1);
    slot.worker.postMessage({ id: job.id, task, resetFooters } satisfies WorkerRequest);
  }

  /**
   * Segments just written (a flush, a merge): each is decoded into the cache of the worker that
   * scans it (partial.ts workerOfSegment, over `workers`), one segment at a time and only while
   * that worker has no query to run, as far as its cache has free room (chunk-cache.ts warm).
   * The first query after a load then reads what the load wrote from memory, as it would in a
   * database whose buffer pool the load filled. A query that arrives meanwhile waits for at most
   * the one column (or pair table) being decoded: the warm stops there, the query runs, and the
   * warm goes on where it stopped (worker.ts warm; a segment with its ids took up to 50-110 ms).
   * Warming waits while a bulk load runs (mayWarm; footers do not wait), and a worker whose
   * segments' warmed columns would not fit its cache warms no more (warmNext)
   * but for each collection's newest segment. That one is warmed whole, its ids and times too,
   * and held (chunk-cache.ts warmWhole: queries neither evict nor trim it): what an extraction
   * of the latest events reads. Being newest, it is warmed first.
   * Every worker, its own too, reads the segment's footer first, while its footer cache has
   * room: a distinct count's share looks at the footers of every segment (footer-sketch.ts), and
   * read on the first query they cost it ~40 ms at 10M events.
   */
  warm(refs: readonly SegmentRef[], workers: number): void {
    for (const ref of refs) {
      const collection = collectionOf(ref.file);
      const newest = this.newest.get(collection);
      if (newest?.file !== ref.file && (newest === undefined || ref.footer.tsMax >= newest.tsMax)) {
        if (newest !== undefined) this.whole.delete(newest.file);
        this.newest.set(collection, { file: ref.file, tsMax: ref.footer.tsMax });
        this.whole.add(ref.file);
      }
      const owner = workerOfSegment(ref.file, Math.min(workers, this.slots.length));
      // Every worker reads the footer first, the owner too: footers are read while a bulk load
      // runs (warmNext), so the first queries after it read none.
      for (let s = 0; s < Math.min(workers, this.slots.length); s++) {
        const reader = this.slots[s];
        reader.toWarmFooters.set(ref.file, ref);
        if (reader.toWarmFooters.size > WARM_QUEUE_MAX) reader.toWarmFooters.delete(reader.toWarmFooters.keys().next().value!);
      }
      const slot = this.slots[owner];
      if (!slot.known.has(ref.file)) {
        slot.known.set(ref.file, ref.footer.rows);
        slot.knownRows += ref.footer.rows;
      }
      slot.toWarm.set(ref.file, ref);
      if (slot.toWarm.size > WARM_QUEUE_MAX) slot.toWarm.delete(slot.toWarm.keys().next().value!);
    }
    for (const slot of this.slots) this.pump(slot);
  }

  /** Segment files replaced or deleted: no worker decodes or keeps them any longer. */
  forget(files: readonly string[]): void {
    if (this.closed || files.length === 0) return;
    for (const slot of this.slots) {
      for (const file of files) {
        this.whole.delete(file);
        const collection = collectionOf(file);
        if (this.newest.get(collection)?.file === file) this.newest.delete(collection);
        slot.toWarm.delete(file);
        slot.toWarmFooters.delete(file);
        slot.toWarmRest.delete(file);
        slot.knownRows -= slot.known.get(file) ?? 0;
        slot.known.delete(file);
        this.shared.delete(file);
      }
      slot.worker.postMessage({ forget: files } satisfies WorkerForget);
    }
  }

  private warmNext(slot: Slot): void {
    if (slot.warming || (slot.toWarm.size === 0 && slot.toWarmFooters.size === 0 && slot.toWarmRest.size === 0)) return;
    // Footers are read even while a bulk load runs: a fraction of a millisecond a segment, and
    // right after the load the queries answered from footers and value counts (a distinct count
    // of 50 values, select_unique, group_by) would otherwise read a hundred of them first.
    const loading = !this.mayWarm();
    if (loading && slot.toWarmFooters.size === 0) {
      this.warmLater(slot);
      return;
    }
    if (slot.toWarmFooters.size > 0) {
      // A footer takes a millisecond or two: they go first. Newest first, as segments.
      const ref = takeNewest(slot.toWarmFooters);
      slot.warming = true;
      slot.warmingFooter = true;
      slot.worker.postMessage({ warm: ref, whole: false, footerOnly: true } satisfies WorkerWarm);
      return;
    }
    if (slot.toWarm.size === 0) {
      this.warmRest(slot);
      return;
    }
    // A store whose warmed columns would not fit the cache is not warmed: the queries' own reads
    // would evict them (bench/scale at 100M: warming cost 130 MB of RSS, and the first runs
    // were slower). The bytes a row takes are learnt from the segments warmed so far.
    // Each collection's newest segment is still warmed whole: it is one segment, and what an
    // extraction of the latest events reads (chunk-cache.ts warmWhole holds it).
    if (slot.warmedRows > 0 && (slot.knownRows * slot.warmedBytes) / slot.warmedRows > this.cacheBytes) {
      for (const file of slot.toWarm.keys()) if (!this.whole.has(file)) slot.toWarm.delete(file);
      if (slot.toWarm.size === 0) return;
    }
    // Newest first: the file added last is the one a query is likeliest to read.
    const ref = takeNewest(slot.toWarm);
    slot.warming = true;
    slot.warmingRows = ref.footer.rows;
    slot.warmingRef = ref;
    slot.warmingWhole = this.whole.delete(ref.file);
    slot.worker.postMessage({ warm: ref, whole: slot.warmingWhole } satisfies WorkerWarm);
  }

  /**
   * Once a worker's segments are warmed without their ids, their ids go in too, newest first,
   * within WARM_REST_SHARE of its cache: the share left after what the columns without ids take
   * for every segment it scans, as bytes a row. A distinct count of user ids then reads no
   * dictionary from disk on its first run (bench/scale at 10M: 588 → 410-426 ms). Ids that take
   * more than the share are left out (chunk-cache.ts warmRest); the rest of the cache stays free
   * for what queries decode on first use.
   */
  private warmRest(slot: Slot): void {
    const perRow = slot.warmedRows === 0 ? 0 : slot.warmedBytes / slot.warmedRows;
    const bytesPerRow = (this.cacheBytes * WARM_REST_SHARE) / Math.max(1, slot.knownRows) - perRow;
    if (bytesPerRow <= 0) {
      slot.toWarmRest.clear();
      return;
    }
    const ref = takeNewest(slot.toWarmRest);
    slot.warming = true;
    slot.warmingRest = true;
    slot.warmingRef = ref;
    slot.worker.postMessage({ warm: ref, whole: false, restBytesPerRow: bytesPerRow } satisfies WorkerWarm);
  }

  /** Warming waits (a load runs): the slot tries again WARM_RETRY_MS later. */
  private warmLater(slot: Slot): void {
    slot.warming = true;
    const worker = slot.worker;
    setTimeout(() => {
      if (slot.worker !== worker) return; // replaced meanwhile: spawn() reset the flag
      slot.warming = false;
      this.pump(slot);
    }, WARM_RETRY_MS).unref();
  }

  /** Runs one task on the least loaded worker: `prefer` (whose cache holds what it reads first) when none is less loaded. */
  async run(task: QueryTask, prefer?: number): Promise<Record<string, unknown>> {
    let best = 0;
    const load = (slot: Slot) => slot.queue.length + (slot.current === null ? 0 : 1);
    for (let s = 1; s < this.slots.length; s++) if (load(this.slots[s]) < load(this.slots[best])) best = s;
    if (prefer !== undefined && prefer < this.slots.length && load(this.slots[prefer]) <= load(this.slots[best])) best = prefer;
    const tasks: (QueryTask | null)[] = this.slots.map((_, s) => (s === best ? task : null));
    return (await this.runAll(tasks, task.timeoutMs))[best]!;
  }

  /**
   * Runs tasks[s] on worker s (null: none) as one query: resolves with every body once all
   * succeed, rejects on the first failure or at the timeout (cancelling the other tasks).
   */
  async runAll(tasks: readonly (QueryTask | null)[], timeoutMs: number): Promise<(Record<string, unknown> | null)[]> {
    assert(tasks.length <= this.slots.length, 'one task per worker at most');
    await Promise.all(tasks.map((task, s) => (task === null ? undefined : this.slots[s].ready)));
    const deadlineMs = Date.now() + timeoutMs;
    const bodies: (Record<string, unknown> | null)[] = tasks.map(() => null);
    const jobs: { slot: Slot; job: Job }[] = [];
    return new Promise((resolve, reject) => {
      let pending = 0;
      let settled = false;
      const cancel = () => {
        settled = true;
        clearTimeout(timer);
        for (const { slot, job } of jobs) {
          const queued = slot.queue.indexOf(job);
          if (queued >= 0) slot.queue.splice(queued, 1);
        }
      };
      const timer = setTimeout(() => {
        if (settled) return;
        cancel();
        for (const { slot, job } of jobs) {
          if (slot.current !== job) continue;
          slot.current = null;
          this.replace(slot);
          this.pump(slot);
        }
        reject(queryIncomplete(timeoutMs));
      }, timeoutMs);
      tasks.forEach((task, s) => {
        if (task === null) return;
        pending++;
        const slot = this.slots[s];
        const job: Job = {
          id: this.nextId++,
          task: { ...task, deadlineMs },
          settle: (reply) => {
            if (settled) return;
            if (reply instanceof Error) {
              cancel();
              reject(reply);
            } else if (!reply.ok) {
              cancel();
              reject(reply.code !== null ? new ApiError(reply.code as ErrorCode, reply.message)
                : new Error(`query worker failed: ${reply.message}`));
            } else {
              bodies[s] = reply.body;
              if (--pending === 0) {
                settled = true;
                clearTimeout(timer);
                resolve(bodies);
              }
            }
          },
        };
        jobs.push({ slot, job });
        slot.queue.push(job);
      });
      if (pending === 0) {
        settled = true;
        clearTimeout(timer);
        resolve(bodies);
        return;
      }
      for (const { slot } of jobs) this.pump(slot);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot.worker.terminate()));
  }
}

/**
 * The task as posted to a worker: buffer snapshots the worker already holds go as their version
 * only. After a load, every query reads the same snapshot; cloning its rows into a worker for each
 * one cost more than the scan itself. Likewise a segment whose footer the worker holds goes as its
 * file name (footer null): segments are immutable, and cloning ninety footers into each worker
 * cost ~0.9 ms a query.
 */
function withoutSent(task: QueryTask, sent: KeptSnapshots<true>, footers: Set<string>): QueryTask {
  const strip = (source: ScanSource): ScanSource => {
    const segments = source.segments.map((ref): SegmentRef => {
      if (footers.has(ref.file)) return { file: ref.file, footer: null as unknown as SegmentFooter };
      footers.add(ref.file);
      return ref;
    });
    if (source.memory === null || source.memoryVersion === 0) return { ...source, segments };
    if (sent.get(source.idKey, source.memoryVersion)) return { ...source, segments, memory: null };
    sent.keep(source.idKey, source.memoryVersion, true);
    return { ...source, segments };
  };
  const sources = task.sources.map(strip);
  return task.whole === undefined ? { ...task, sources } : { ...task, sources, whole: strip(task.whole) };
}

/** The folder of a segment's collection: segment files are <collection>/<day>/<name>.arrow (storage/collection.ts). */
function collectionOf(file: string): string {
  return path.dirname(path.dirname(file));
}

/** Removes and returns the segment added to `queue` last (the newest: warmed first). */
function takeNewest(queue: Map<string, SegmentRef>): SegmentRef {
  const file = [...queue.keys()].pop()!;
  const ref = queue.get(file)!;
  queue.delete(file);
  return ref;
}
