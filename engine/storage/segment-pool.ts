/**
 * The main thread's side of segment-worker.ts: one worker, jobs answered in order as promises.
 * With `inline` (tests, or no worker threads wanted) jobs run synchronously on the calling thread.
 */
import { Worker } from 'node:worker_threads';
import type { ColumnChunk, SegmentFooter } from './chunk.js';
import { runSegmentJob, type SegmentJob, type SegmentJobResult } from './segment-worker.js';

type JobInput = SegmentJob extends infer J ? (J extends SegmentJob ? Omit<J, 'id'> : never) : never;

export class SegmentPool {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (f: SegmentFooter) => void; reject: (e: Error) => void }>();

  constructor(private readonly inline: boolean) {}

  run(input: JobInput): Promise<SegmentFooter> {
    const job = { ...input, id: this.nextId++ } as SegmentJob;
    if (this.inline) {
      try {
        return Promise.resolve(runSegmentJob(job));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return new Promise((resolve, reject) => {
      this.waiting.set(job.id, { resolve, reject });
      const worker = this.ensureWorker();
      worker.ref(); // keep the process alive while a job is pending
      worker.postMessage(job, job.op === 'write' ? transferablesOf(job.chunk) : []);
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./segment-worker.js', import.meta.url));
    worker.unref();
    worker.on('message', (result: SegmentJobResult) => {
      const waiter = this.waiting.get(result.id);
      this.waiting.delete(result.id);
      if (this.waiting.size === 0) worker.unref();
      if (!waiter) return;
      if (result.error !== undefined) waiter.reject(new Error(`segment job failed: ${result.error}`));
      else waiter.resolve(result.footer);
    });
    worker.on('error', (error) => this.failAll(error));
    worker.on('exit', () => {
      this.worker = null;
      this.failAll(new Error('segment worker exited'));
    });
    this.worker = worker;
    return worker;
  }

  private failAll(error: Error): void {
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}

/**
 * The memory of a chunk handed to the worker: moved, not copied, so a flush costs the thread that
 * serves writes no serialization. The caller must not use the chunk afterwards.
 */
function transferablesOf(chunk: ColumnChunk): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  const add = (array: ArrayBufferView | null) => {
    if (array && array.buffer instanceof ArrayBuffer && array.byteLength === array.buffer.byteLength) {
      buffers.add(array.buffer);
    }
  };
  add(chunk.ts);
  add(chunk.createdAt);
  add(chunk.seq);
  add(chunk.raw.bytes);
  add(chunk.raw.offsets);
  for (const column of chunk.columns.values()) {
    add(column.tags);
    add(column.num);
    add(column.str);
  }
  return [...buffers];
}
