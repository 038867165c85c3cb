/**
 * The background rewrite of one segment without its deleted rows and properties, so disk space
 * comes back (docs/api.md §7). Runs on the segment worker (maintenance/segment-worker.ts, op
 * "rewrite") through the same reader and writer as flushes and compaction; the main thread swaps
 * the result into the manifest. A segment whose every row is deleted produces no file (rows 0);
 * one the entries do not change produces no file either (its row count, and no file at target).
 */
import type { ColumnChunk, SchemaType, SegmentFooter } from '../storage/chunk.js';
import { gatherChunk } from '../storage/chunk-ops.js';
import { readSegment } from '../storage/segment/reader.js';
import { writeSegment } from '../storage/segment/writer.js';
import { ColumnViews } from '../query/eval/columns.js';
import { Scratch } from '../query/eval/filter-eval.js';
import { hideProperties, keptRows, type DeleteEntry } from './predicate.js';

const UNCHANGED = { rows: 0, tsMin: 0, tsMax: 0, seqMin: 0, seqMax: 0, columns: {} };

export function rewriteSegment(
  source: string,
  target: string,
  entries: readonly DeleteEntry[],
  schema: Readonly<Record<string, SchemaType>>,
  pause?: () => void,
): SegmentFooter {
  const original = readSegment(source);
  pause?.();
  const chunk = applyDeletes(original, entries);
  if (chunk === original) return { ...UNCHANGED, rows: original.rows };
  if (chunk.rows === 0) {
    return { rows: 0, tsMin: 0, tsMax: 0, seqMin: 0, seqMax: 0, columns: {} };
  }
  return writeSegment(target, chunk, schema, pause);
}

/**
 * The chunk without its deleted rows and properties (a copy when any apply). Columns are the only
 * copy of an event, so hiding a property's columns removes it from the rebuilt events too.
 */
export function applyDeletes(original: ColumnChunk, entries: readonly DeleteEntry[]): ColumnChunk {
  if (entries.length === 0) return original;
  const kept = keptRows(original, entries, new ColumnViews(), new Scratch());
  let chunk = kept.length === original.rows ? original : gatherChunk(original, kept);
  return hideProperties(chunk, entries);
}
