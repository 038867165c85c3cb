/**
 * The background rewrite of one segment without its deleted rows and properties, so disk space
 * comes back (spec/api.md §7). Runs on the segment worker (storage/segment-worker.ts, op
 * "rewrite") through the same reader and writer as flushes and compaction; the main thread swaps
 * the result into the manifest. A segment whose every row is deleted produces no file (rows 0);
 * one the entries do not change produces no file either (its row count, and no file at target).
 */
import type { ColumnChunk, SchemaType, SegmentFooter, Utf8Column } from '../storage/chunk.js';
import { rawAt } from '../storage/chunk.js';
import { gatherChunk } from '../storage/chunk-ops.js';
import { readSegment } from '../storage/segment/reader.js';
import { writeSegment } from '../storage/segment/writer.js';
import { ColumnViews } from '../query/columns.js';
import { Scratch } from '../query/filter-eval.js';
import { hideProperties, keptRows, stripEvent, stripsAny, type DeleteEntry } from './predicate.js';

const UNCHANGED = { rows: 0, tsMin: 0, tsMax: 0, seqMin: 0, seqMax: 0, columns: {} };

export function rewriteSegment(
  source: string,
  target: string,
  entries: readonly DeleteEntry[],
  schema: Readonly<Record<string, SchemaType>>,
): SegmentFooter {
  const original = readSegment(source);
  const chunk = applyDeletes(original, entries);
  if (chunk === original) return { ...UNCHANGED, rows: original.rows };
  if (chunk.rows === 0) {
    return { rows: 0, tsMin: 0, tsMax: 0, seqMin: 0, seqMax: 0, columns: {} };
  }
  return writeSegment(target, chunk, schema);
}

/** The chunk without its deleted rows, columns and raw JSON properties (a copy when any apply). */
export function applyDeletes(original: ColumnChunk, entries: readonly DeleteEntry[]): ColumnChunk {
  if (entries.length === 0) return original;
  const kept = keptRows(original, entries, new ColumnViews(), new Scratch());
  let chunk = kept.length === original.rows ? original : gatherChunk(original, kept);
  chunk = hideProperties(chunk, entries);
  if (chunk === original) return original;
  if (chunk.rows > 0 && entries.some((entry) => entry.kind === 'property')) {
    chunk = { ...chunk, raw: strippedRaw(chunk, entries) };
  }
  return chunk;
}

/** The raw JSON of every row with deleted properties removed. */
function strippedRaw(chunk: ColumnChunk, entries: readonly DeleteEntry[]): Utf8Column {
  const encoder = new TextEncoder();
  const parts: Uint8Array[] = [];
  const offsets = new Int32Array(chunk.rows + 1);
  let bytes = 0;
  for (let i = 0; i < chunk.rows; i++) {
    let part = chunk.raw.bytes.subarray(chunk.raw.offsets[i], chunk.raw.offsets[i + 1]);
    if (stripsAny(chunk.seq[i], entries)) {
      const event = JSON.parse(rawAt(chunk, i)) as Record<string, unknown>;
      stripEvent(event, chunk.seq[i], entries);
      part = encoder.encode(JSON.stringify(event));
    }
    parts.push(part);
    bytes += part.length;
    offsets[i + 1] = bytes;
  }
  const out = new Uint8Array(bytes);
  parts.forEach((part, i) => out.set(part, offsets[i]));
  return { bytes: out, offsets };
}
