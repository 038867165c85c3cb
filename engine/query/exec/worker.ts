/**
 * The query worker thread: receives QueryTasks, runs them against its own chunk cache of
 * decoded segments, and posts back the response body or the ApiError. Runs nothing else, so a
 * query never executes on the thread that serves writes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { isApiError } from '../../base/errors.js';
import { ChunkCache, type Warmed } from './chunk-cache.js';
import { KeyIds } from '../eval/key-ids.js';
import { ColumnViews } from '../eval/columns.js';
import { loadNativeBytes, loadSegmentFiles, type SegmentFiles } from './segment-reader.js';
import type { ColumnChunk, ScanSource, SegmentFooter, SegmentRef } from '../../storage/chunk.js';
import type { SharedChunk } from '../../storage/segment/shared-chunk.js';
import { transferablesOf } from './partial.js';
import { warmPairSummaries } from './value-counts.js';
import { Primer } from './prime.js';
import { KeptSnapshots, runTaskPaced, type QueryTask } from './task.js';
import { KEY_IDS_SHARE, NATIVE_YIELD_BYTES } from '../../base/limits.js';
import { niceThread } from '../../base/thread-priority.js';

/**
 * The nice value of a query thread: when queries and writes want the same cores, the thread that
 * serves writes (nice 0) gets about three times a query thread's share (CFS weights 1024 and 335),
 * so a query mix costs writes less latency; an idle core still runs a query at full speed.
 */
const QUERY_THREAD_NICE = 5;
niceThread(QUERY_THREAD_NICE);

export interface WorkerRequest {
  readonly id: number;
  /** Segments whose footer this worker was sent before come with footer null (pool.ts). */
  readonly task: QueryTask;
  /** Forget every kept footer before this task (the pool does the same). */
  readonly resetFooters: boolean;
}

/** A segment to decode into the cache now, if it has room (pool.ts warm); answered 'warmed'. */
export interface WorkerWarm {
  readonly warm: SegmentRef;
  /** Every column, ids too (chunk-cache.ts warm). */
  readonly whole: boolean;
  /** Only its footer (chunk-cache.ts warmFooter): a segment another worker scans. */
  readonly footerOnly?: boolean;
  /** Only the columns a first warm left out (ids), within these bytes a row (chunk-cache.ts warmRest). */
  readonly restBytesPerRow?: number;
}

/** The answer to a WorkerWarm: whether it decoded the segment, and whether the cache had room. */
export interface WorkerWarmed {
  readonly warmed: boolean;
  readonly full: boolean;
  /** It stopped for a task that waits: the pool posts it again after the task. */
  readonly paused: boolean;
  /** The bytes its columns without ids took in the cache (chunk-cache.ts warmedCompactBytes). */
  readonly bytes: number;
}

/** Segment files gone (replaced or deleted): dropped from the cache. */
export interface WorkerForget {
  readonly forget: readonly string[];
}

/**
 * From a worker: a segment its cache holds in shared memory (chunk-cache.ts share), or the ones it
 * no longer holds. The pool passes them on to the other workers as WorkerPeers.
 */
export type WorkerShared = { readonly shared: SharedChunk } | { readonly unshared: readonly string[] };

/** To a worker: a segment another worker shares, to read from there (chunk-cache.ts setPeers), or ones no longer shared. */
export type WorkerPeers = { readonly peer: SharedChunk } | { readonly unpeer: readonly string[] };

export type WorkerReply =
  | {
    readonly id: number; readonly ok: true; readonly body: Record<string, unknown>;
    /** Segments the task read from other workers' shared memory (chunk-cache.ts peerReads). */
    readonly peerReads: number;
  }
  | { readonly id: number; readonly ok: false; readonly code: string | null; readonly message: string };

const port = parentPort;
if (port === null) throw new Error('engine/query/exec/worker.js runs only as a worker thread');
const { cacheBytes, footerCacheBytes, waiting, prime, sharing } = workerData as {
  cacheBytes: number; footerCacheBytes: number; waiting: Int32Array; prime: boolean; sharing: boolean;
};
/** Opened on the first task that reads segment files. */
let cache: ChunkCache | null = null;
/** Bytes the key ids take (counted in the cache once there is one). */
let keyIdsBytes = 0;
/** Dense ids of the warmed ids' keys (key-ids.ts), within KEY_IDS_SHARE of the cache's budget. */
const keyIds = new KeyIds(Math.floor(cacheBytes * KEY_IDS_SHARE), (bytes) => {
  keyIdsBytes += bytes;
  cache?.hold(bytes);
});
const views = new ColumnViews(keyIds);
let files: Promise<SegmentFiles> | null = null;

/** The segment reader; its import (apache-arrow, ~150 ms) starts once the worker is ready. */
function segmentFiles(): Promise<SegmentFiles> {
  return (files ??= loadSegmentFiles());
}

/** Buffer snapshots the pool posted once; later tasks name only their version (pool.ts). */
const memories = new KeptSnapshots<ColumnChunk>();

/** Footers the pool posted once, by segment file; later tasks name only the file. */
const footers = new Map<string, SegmentFooter>();

function withKept(source: ScanSource): ScanSource {
  const segments = source.segments.map((ref) => {
    if (ref.footer !== null) {
      footers.set(ref.file, ref.footer);
      return ref;
    }
    const footer = footers.get(ref.file);
    if (footer === undefined) throw new Error(`the footer of ${ref.file} was never sent to this worker`);
    return { file: ref.file, footer };
  });
  return withMemory({ ...source, segments });
}

function withMemory(source: ScanSource): ScanSource {
  if (source.memoryVersion === 0) return source;
  if (source.memory !== null) {
    memories.keep(source.idKey, source.memoryVersion, source.memory);
    return source;
  }
  const kept = memories.get(source.idKey, source.memoryVersion);
  if (kept === undefined) throw new Error(`buffer snapshot ${source.memoryVersion} was never sent to this worker`);
  return { ...source, memory: kept };
}

/** The native decoder's output since the last turn (segment-reader.ts); loaded with the first segment read. */
let native: Promise<() => number> | null = null;

/**
 * This worker's cache. The dictionaries of the columns warmed last (ids, warmRest) are hashed as
 * they go in, with the distinct keys a count_unique reads (columns.ts storedKeys, counted in the
 * cache's bytes): hashing ~8M user ids took a first distinct count at 10M ~150 ms a worker. Their
 * keys get dense ids too (columns.ts assignIds), so a distinct count of them sets bits instead of
 * inserting ~4.5M keys a worker into a hash set (~275 of a ~400 ms query at 10M).
 */
async function newCache(): Promise<ChunkCache> {
  const made = new ChunkCache(await segmentFiles(), cacheBytes, footerCacheBytes, (column) => {
    if (column.dictSize > 0) views.assignIds(column);
  }, sharing);
  made.hold(keyIdsBytes);
  return made;
}

/** Tasks run one at a time, in arrival order (the first one may wait for Arrow's import). */
let queue: Promise<void> = Promise.resolve();

port.on('message', (request: WorkerRequest | WorkerWarm | WorkerForget | WorkerPeers) => {
  if ('forget' in request) queue = queue.then(() => cache?.forget(request.forget));
  else if ('warm' in request) queue = queue.then(() => warm(request));
  else if ('peer' in request) queue = queue.then(async () => (cache ??= await newCache()).setPeers([request.peer]));
  else if ('unpeer' in request) queue = queue.then(() => cache?.setPeers([], request.unpeer));
  else queue = queue.then(() => handle(request));
  queue = queue.then(postUnshared);
});

/** Tells the pool of the shared segments the cache dropped (evicted, forgotten): the other workers let go of them. */
function postUnshared(): void {
  const files = cache?.takeUnshared() ?? [];
  if (files.length > 0) port!.postMessage({ unshared: files } satisfies WorkerShared);
}

/** A warm that stopped in its segment's pair tables: what its columns' warming answered. */
let summariesLeft: { file: string; outcome: 'warmed' | 'cached'; bytes: number } | null = null;

/**
 * Whether a task waits behind the warming under way: the pool sets it when it posts a task while
 * a warm is with this worker (pool.ts pump), each task clears it as it starts (handle).
 */
const taskWaits = () => Atomics.load(waiting, 0) !== 0;

/**
 * Decodes a fresh segment into the cache when it has room; a failure only leaves it cold. Stops
 * between columns (and pair tables) when a task waits, answering 'paused': the pool posts the
 * same warm again after the task, and it goes on where it stopped (chunk-cache.ts warm).
 */
async function warm({ warm: ref, whole, footerOnly, restBytesPerRow }: WorkerWarm): Promise<void> {
  let outcome: Warmed | 'failed' = 'failed';
  let bytes = 0;
  try {
    cache ??= await newCache();
    if (footerOnly === true) outcome = cache.warmFooter(ref);
    else if (restBytesPerRow !== undefined) outcome = cache.warmRest(ref, restBytesPerRow, taskWaits);
    else {
      if (summariesLeft?.file === ref.file) {
        // Stopped in its pair tables: the columns were warmed already.
        ({ outcome, bytes } = summariesLeft);
      } else {
        outcome = cache.warm(ref, whole, taskWaits);
        bytes = cache.warmedCompactBytes;
      }
      summariesLeft = null;
      // Its pair tables' summaries after its columns, in the room they leave (value-counts.ts).
      if (outcome !== 'full' && outcome !== 'paused' && warmPairSummaries(cache, ref, taskWaits) === 'paused') {
        summariesLeft = { file: ref.file, outcome, bytes };
        outcome = 'paused';
      }
    }
    // Warmed: the other workers read its columns from this worker's memory (chunk-cache.ts share).
    const shared = outcome === 'warmed' && footerOnly !== true ? cache.share(ref.file) : null;
    if (shared !== null) port!.postMessage({ shared } satisfies WorkerShared);
  } catch {
    // The file may be gone already (replaced, deleted): the query that needs it reads it.
  }
  port!.postMessage({ warmed: outcome === 'warmed', full: outcome === 'full', paused: outcome === 'paused', bytes } satisfies WorkerWarmed);
}

async function handle({ id, task: posted, resetFooters }: WorkerRequest): Promise<void> {
  Atomics.store(waiting, 0, 0);
  const peerReadsBefore = cache?.peerReads ?? 0;
  let reply: WorkerReply;
  let transfer: ArrayBuffer[] = [];
  try {
    if (resetFooters) footers.clear();
    const task: QueryTask = {
      ...posted,
      sources: posted.sources.map(withKept),
      ...(posted.whole !== undefined && { whole: withKept(posted.whole) }),
    };
    if (cache === null && (task.sources.some((source) => source.segments.length > 0) ||
      (task.whole !== undefined && task.whole.segments.length > 0))) {
      cache = await newCache();
    }
    // Paced (steps.ts): the native decoder's garbage is freed between segments, not at the end.
    const nativeBytes = cache === null ? null : await (native ??= loadNativeBytes());
    const body = await runTaskPaced(task, { views, cache }, () => nativeBytes !== null && nativeBytes() >= NATIVE_YIELD_BYTES);
    // A fan-out share's partial state is one ArrayBuffer (partial-codec.ts): moved, not copied.
    if (task.whole !== undefined || task.funnelSteps !== undefined || task.funnelKeys === true) transfer = transferablesOf(body);
    reply = { id, ok: true, body, peerReads: (cache?.peerReads ?? 0) - peerReadsBefore };
  } catch (error) {
    reply = isApiError(error)
      ? { id, ok: false, code: error.error_code, message: error.message }
      : { id, ok: false, code: null, message: error instanceof Error ? error.stack ?? error.message : String(error) };
  }
  port!.postMessage(reply, transfer);
}
port.postMessage('ready');
// Load the reader now, while no query waits, then run its sidecar decoding over a made-up
// sidecar (~20-30 ms): the first query after startup pays for neither. A task that needs segment
// files and comes before the import resolves waits for the import, as it always did.
setImmediate(() => void segmentFiles().then(async (loaded) => {
  const { warmSidecarDecoding } = await import('../../storage/segment/footer.js');
  warmSidecarDecoding();
  if (prime) queue = queue.then(() => startPriming(loaded));
}, () => undefined)); // a reader that fails to load fails the first task that needs it

/**
 * Compiles the scan code before the first query (prime.ts), a step at a time on the task queue
 * (a made-up segment written, or a request run): a task that comes meanwhile runs before the
 * next step. A folder that cannot be written leaves the worker unprimed, as it was before.
 */
async function startPriming(loaded: SegmentFiles): Promise<void> {
  let primer: Primer;
  try {
    primer = new Primer(loaded, (await import('../../storage/segment/writer.js')).writeSegment);
  } catch {
    return; // no temporary folder: unprimed
  }
  const step = (): void => {
    let more = false;
    try {
      more = primer.step();
    } catch {
      primer.close();
    }
    if (more) queue = queue.then(step);
  };
  queue = queue.then(step);
}
