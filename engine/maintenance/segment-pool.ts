/**
 * The main thread's side of segment-worker.ts: one worker, jobs answered in order as promises.
 * With `inline` (tests, or no worker threads wanted) jobs run synchronously on the calling thread.
 * Given the queries' activity, the worker's merges and delete rewrites pause while queries run
 * (base/query-activity.ts); inline jobs never pause (the queries' ends are counted on this thread).
 */
import { JobWorker } from '../base/job-worker.js';
import { SEGMENT_INLINE_ROWS_MAX, WORKER_YOUNG_GENERATION_MB } from '../base/limits.js';
import type { QueryActivity } from '../base/query-activity.js';
import type { ColumnChunk, SegmentFooter } from '../storage/chunk.js';
import { runSegmentJob, type SegmentJob, type SegmentJobResult } from './segment-worker.js';

type JobInput = SegmentJob extends infer J ? (J extends SegmentJob ? Omit<J, 'id'> : never) : never;

export class SegmentPool {
  private readonly worker: JobWorker<SegmentJobResult, SegmentFooter[]>;
  private nextId = 1;
  /** Milliseconds the worker's merges and rewrites have stood still for queries, over every worker started. */
  pausedMs = 0;
  private urgent = false;

  constructor(private readonly inline: boolean, private readonly activity: QueryActivity | null = null) {
    this.worker = new JobWorker<SegmentJobResult, SegmentFooter[]>('segment',
      new URL('./segment-worker.js', import.meta.url), (result) => {
        if (result.error !== undefined) throw new Error(`segment job failed: ${result.error}`);
        this.pausedMs += result.pausedMs; // per job: a restarted worker counts from 0
        return result.footers;
      }, {
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
        workerData: { queryActivity: activity?.shared ?? null },
      });
  }

  /** Someone waits for the flush under way: its merges and rewrites stop pausing until relax(). */
  urge(): void {
    this.urgent = true;
    this.activity?.urge();
  }

  /** The flush ended: the next one's merges and rewrites may pause again. */
  relax(): void {
    this.urgent = false;
  }

  run(input: JobInput): Promise<SegmentFooter[]> {
    const job = { ...input, id: this.nextId++ } as SegmentJob;
    // The flusher sends one job at a time (flushes, merges and rewrites never overlap): this one
    // starts now, and may pause unless someone waits for the flush it belongs to.
    if (job.op !== 'write' && !this.urgent) this.activity?.calm();
    // A small flush with no worker started yet is written here: starting the worker (~0.4 s, and
    // its own heap) cost more than the write, and made an embedded open-write-close take seconds.
    const small = job.op === 'write' && !this.worker.running && job.chunk.rows <= SEGMENT_INLINE_ROWS_MAX;
    if (this.inline || small) {
      try {
        return Promise.resolve(runSegmentJob(job));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const transfer = job.op === 'write' ? transferablesOf(job.chunk) : [];
    if (job.op === 'write') for (const part of job.parts) if (part.indices) transfer.push(part.indices.buffer as ArrayBuffer);
    return this.worker.run(job.id, job, transfer);
  }

  close(): Promise<void> {
    return this.worker.close();
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
  for (const column of chunk.columns.values()) {
    add(column.tags);
    add(column.num);
    add(column.str);
  }
  return [...buffers];
}
