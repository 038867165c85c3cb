/**
 * The main thread's side of ingest/worker.ts: a few workers, started on first use, each answering
 * its jobs in order. A job goes to the worker with the fewest jobs waiting. A batch-level refusal
 * (bad JSON, bad shape) rejects with the ApiError the in-thread path would throw.
 */
import { Worker } from 'node:worker_threads';
import type { WriteContext } from '../api.js';
import type { EnricherOptions } from '../enrich/pipeline.js';
import { ApiError } from '../errors.js';
import type { PackedBatch } from './batch.js';
import type { IngestJob, IngestReply } from './worker.js';

interface Waiter {
  readonly resolve: (packed: PackedBatch) => void;
  readonly reject: (error: Error) => void;
}

interface Slot {
  worker: Worker | null;
  readonly waiting: Map<number, Waiter>;
}

export class IngestPool {
  private readonly slots: Slot[];
  private nextId = 1;

  constructor(size: number, private readonly enricher: EnricherOptions) {
    this.slots = Array.from({ length: size }, () => ({ worker: null, waiting: new Map() }));
  }

  /** True when some worker has no job: a batch sent now starts at once. */
  get idle(): boolean {
    return this.slots.some((slot) => slot.waiting.size === 0);
  }

  /** Parses and prepares a batch body on a worker. The body's memory is moved there when it can be. */
  run(body: Uint8Array, ctx: WriteContext, now: number, nowIso: string): Promise<PackedBatch> {
    let slot = this.slots[0];
    for (const candidate of this.slots) if (candidate.waiting.size < slot.waiting.size) slot = candidate;
    const owned = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
    const sent = owned ? body : new Uint8Array(body);
    const job: IngestJob = { id: this.nextId++, body: sent, ctx: { ip: ctx.ip, userAgent: ctx.userAgent }, now, nowIso };
    return new Promise((resolve, reject) => {
      slot.waiting.set(job.id, { resolve, reject });
      const worker = this.ensureWorker(slot);
      worker.ref();
      worker.postMessage(job, [sent.buffer as ArrayBuffer]);
    });
  }

  private ensureWorker(slot: Slot): Worker {
    if (slot.worker) return slot.worker;
    const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: this.enricher });
    worker.unref();
    worker.on('message', (reply: IngestReply) => {
      const waiter = slot.waiting.get(reply.id);
      slot.waiting.delete(reply.id);
      if (slot.waiting.size === 0) worker.unref();
      if (!waiter) return;
      if ('packed' in reply) waiter.resolve(reply.packed);
      else if ('refused' in reply) waiter.reject(new ApiError(reply.refused.code, reply.refused.message));
      else waiter.reject(new Error(`ingest worker failed: ${reply.failure}`));
    });
    const fail = (error: Error) => {
      if (slot.worker === worker) slot.worker = null;
      for (const waiter of slot.waiting.values()) waiter.reject(error);
      slot.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`ingest worker exited with code ${code}`)));
    slot.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const workers = this.slots.flatMap((slot) => (slot.worker ? [slot.worker] : []));
    for (const slot of this.slots) slot.worker = null;
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
