/**
 * The query worker thread: receives QueryTasks, runs them against its own chunk cache of
 * decoded segments, and posts back the response body or the ApiError. Runs nothing else, so a
 * query never executes on the thread that serves writes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { isApiError } from '../errors.js';
import { ChunkCache } from './chunk-cache.js';
import { ColumnViews } from './columns.js';
import { loadSegmentFiles } from './segment-reader.js';
import type { ColumnChunk, ScanSource } from '../storage/chunk.js';
import { KeptSnapshots, runTask, type QueryTask } from './task.js';

export interface WorkerRequest {
  readonly id: number;
  readonly task: QueryTask;
}

export type WorkerReply =
  | { readonly id: number; readonly ok: true; readonly body: Record<string, unknown> }
  | { readonly id: number; readonly ok: false; readonly code: string | null; readonly message: string };

const port = parentPort;
if (port === null) throw new Error('engine/query/worker.js runs only as a worker thread');
const { cacheBytes, footerCacheBytes } = workerData as { cacheBytes: number; footerCacheBytes: number };
const views = new ColumnViews();
/** Opened on the first task that reads segment files: Arrow's import is slow to load. */
let cache: ChunkCache | null = null;

/** Buffer snapshots the pool posted once; later tasks name only their version (pool.ts). */
const memories = new KeptSnapshots<ColumnChunk>();

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

/** Tasks run one at a time, in arrival order (the first one may wait for Arrow's import). */
let queue: Promise<void> = Promise.resolve();

port.on('message', (request: WorkerRequest) => {
  queue = queue.then(() => handle(request));
});

async function handle({ id, task: posted }: WorkerRequest): Promise<void> {
  let reply: WorkerReply;
  try {
    const task: QueryTask = {
      ...posted,
      sources: posted.sources.map(withMemory),
      ...(posted.whole !== undefined && { whole: withMemory(posted.whole) }),
    };
    if (cache === null && (task.sources.some((source) => source.segments.length > 0) ||
      (task.whole !== undefined && task.whole.segments.length > 0))) {
      cache = new ChunkCache(await loadSegmentFiles(), cacheBytes, footerCacheBytes);
    }
    reply = { id, ok: true, body: runTask(task, { views, cache }) };
  } catch (error) {
    reply = isApiError(error)
      ? { id, ok: false, code: error.error_code, message: error.message }
      : { id, ok: false, code: null, message: error instanceof Error ? error.stack ?? error.message : String(error) };
  }
  port!.postMessage(reply);
}
port.postMessage('ready');
