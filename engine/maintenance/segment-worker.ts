/**
 * Worker thread that writes segment files (flushes) and merges them (compaction), so the thread
 * serving writes never spends its time encoding Arrow, compressing and fsyncing. Stateless: each
 * message names its files; the main thread owns the manifest and decides what the results mean.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BACKGROUND_PAUSE_MAX_MS } from '../base/limits.js';
import { QueryPause } from '../base/query-activity.js';
import type { ColumnChunk, SchemaType, SegmentFooter } from '../storage/chunk.js';
import { concatChunks, gatherChunk, internRepeats } from '../storage/chunk-ops.js';
import { readSegment } from '../storage/segment/reader.js';
import { writeSegment } from '../storage/segment/writer.js';
import type { DeleteEntry } from '../deletes/predicate.js';
import { rewriteSegment } from '../deletes/rewrite.js';

export type SegmentJob =
  | { readonly op: 'write'; readonly id: number; readonly chunk: ColumnChunk;
      /** One segment per part: the chunk's rows at `indices` (all of them when null). */
      readonly parts: readonly { readonly file: string; readonly indices: Int32Array | null }[];
      readonly schema: Readonly<Record<string, SchemaType>> }
  | { readonly op: 'compact'; readonly id: number; readonly file: string; readonly sources: readonly string[];
      readonly schema: Readonly<Record<string, SchemaType>> }
  | { readonly op: 'rewrite'; readonly id: number; readonly file: string; readonly source: string;
      readonly deletes: readonly DeleteEntry[]; readonly schema: Readonly<Record<string, SchemaType>> };

export type SegmentJobResult =
  | { readonly id: number; readonly footers: SegmentFooter[]; readonly error?: undefined;
      /** Milliseconds this job stood still for queries (QueryPause). */
      readonly pausedMs: number }
  | { readonly id: number; readonly error: string };

/**
 * Footers of the segments written: one per part of a flush, one for a compaction. A merge and a
 * delete rewrite are background work: they call `pause` between their steps (QueryPause.point),
 * which returns once no query runs. A flush never pauses: writes wait for it.
 */
export function runSegmentJob(job: SegmentJob, pause?: () => void): SegmentFooter[] {
  if (job.op === 'write') {
    // Splitting a flush into per-day parts (a copy, dictionaries re-interned) happens here, off
    // the thread that serves writes.
    // A buffer's column with repeated dictionary entries (chunk.ts Column.repeats) is interned
    // by the same copy, or alone when the flush is one part, so a segment's dictionaries hold
    // each string once.
    return job.parts.map(({ file, indices }) => writeSegment(file,
      indices !== null ? gatherChunk(job.chunk, indices) : hasRepeats(job.chunk) ? internRepeats(job.chunk) : job.chunk,
      job.schema));
  }
  if (job.op === 'rewrite') return [rewriteSegment(job.source, job.file, job.deletes, job.schema, pause)];
  const chunks = job.sources.map((file) => {
    pause?.();
    return readSegment(file);
  });
  pause?.();
  return [writeSegment(job.file, mergeBySeq(chunks), job.schema, pause)];
}

function hasRepeats(chunk: ColumnChunk): boolean {
  for (const column of chunk.columns.values()) if (column.repeats === true) return true;
  return false;
}

/** Concatenates chunks and orders rows by seq, so a segment's seq column stays increasing. */
export function mergeBySeq(chunks: readonly ColumnChunk[]): ColumnChunk {
  const merged = concatChunks(chunks);
  let sorted = true;
  for (let i = 1; i < merged.rows && sorted; i++) sorted = merged.seq[i] > merged.seq[i - 1];
  if (sorted) return merged;
  const order = Int32Array.from({ length: merged.rows }, (_, i) => i);
  order.sort((a, b) => merged.seq[a] - merged.seq[b]);
  return gatherChunk(merged, order);
}

if (parentPort) {
  const port = parentPort;
  const shared = (workerData as { queryActivity?: unknown } | null)?.queryActivity;
  const pause = shared instanceof SharedArrayBuffer ? new QueryPause(shared) : null;
  port.on('message', (job: SegmentJob) => {
    let result: SegmentJobResult;
    try {
      pause?.begin(BACKGROUND_PAUSE_MAX_MS);
      const pausedBefore = pause?.pausedMs ?? 0;
      const footers = runSegmentJob(job, job.op === 'write' ? undefined : pause?.point);
      result = { id: job.id, footers, pausedMs: (pause?.pausedMs ?? 0) - pausedBefore };
    } catch (error) {
      result = { id: job.id, error: (error as Error)?.stack ?? String(error) };
    }
    port.postMessage(result);
  });
}
