/**
 * The main thread's side of ingest/worker.ts: a few workers, started on first use, each answering
 * its jobs in order. A job goes to the worker with the fewest jobs waiting. A batch-level refusal
 * (bad JSON, bad shape) rejects with the ApiError the in-thread path would throw.
 */
import type { WriteContext } from './event-preparer.js';
import type { EnricherOptions } from '../enrich/pipeline.js';
import { ApiError } from '../base/errors.js';
import { JobWorker } from '../base/job-worker.js';
import type { PackedBatch } from './batch.js';
import type { CollectJob, IngestJob, IngestReply } from './worker.js';

export class IngestPool {
  private readonly workers: JobWorker<IngestReply, PackedBatch | null>[];
  private nextId = 1;

  constructor(size: number, enricher: EnricherOptions) {
    const url = new URL('./worker.js', import.meta.url);
    this.workers = Array.from({ length: size }, () => new JobWorker<IngestReply, PackedBatch | null>('ingest', url, settle,
      { workerData: enricher }));
  }

  /** True when some worker has no job: a batch sent now starts at once. */
  get idle(): boolean {
    return this.workers.some((worker) => worker.pending < 2);
  }

  /** Parses and prepares a batch body on a worker. The body's memory is moved there when it can be. */
  run(body: Uint8Array, ctx: WriteContext, now: number, nowIso: string): Promise<PackedBatch> {
    let worker = this.workers[0]!;
    for (const candidate of this.workers) if (candidate.pending < worker.pending) worker = candidate;
    const owned = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
    const sent = owned ? body : new Uint8Array(body);
    const job: IngestJob = { id: this.nextId++, body: sent, ctx: { ip: ctx.ip, userAgent: ctx.userAgent }, now, nowIso };
    // A batch job is answered with its packed batch (null answers a collect job only).
    return worker.run(job.id, job, [sent.buffer as ArrayBuffer]) as Promise<PackedBatch>;
  }

  /** Workers started and not stopped. */
  get running(): number {
    return this.workers.filter((worker) => worker.running).length;
  }

  /**
   * Asks each started worker without a job to let go of its last batch and collect its heap: an
   * idle worker's garbage otherwise stays until its next batch (writes have stopped).
   */
  collectIdle(): Promise<unknown> {
    const idle = this.workers.filter((worker) => worker.running && worker.pending === 0);
    return Promise.all(idle.map((worker) => {
      const job: CollectJob = { id: this.nextId++, collect: true };
      return worker.run(job.id, job).catch(() => undefined);
    }));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()));
  }
}

function settle(reply: IngestReply): PackedBatch | null {
  if ('packed' in reply) return reply.packed;
  if ('collected' in reply) return null;
  if ('refused' in reply) throw new ApiError(reply.refused.code, reply.refused.message);
  throw new Error(`ingest worker failed: ${reply.failure}`);
}
