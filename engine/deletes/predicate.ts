/**
 * What a pending delete means for rows already read: the delete entries (docs/api.md §7) as plain
 * data that travels with a ScanSource to the query workers, and the pure functions that drop the
 * deleted rows from a selection and hide deleted properties. Entries bind by log offset
 * (`seq < seqBefore`), so events written after the delete are never touched. Filters are evaluated
 * by the query engine's own filter-eval.ts, so a delete matches exactly what a query would.
 */
import { TAG_MISSING, replaceColumns, type Column, type ColumnChunk } from '../storage/chunk.js';
import type { ColumnViews } from '../query/eval/columns.js';
import { compileFilters, type Scratch } from '../query/eval/filter-eval.js';
import type { FilterNode } from '../query/plan/plan.js';

export type { DeleteEntry } from '../storage/delete-entry.js';
import type { DeleteEntry } from '../storage/delete-entry.js';

/** True when `column` is `path` itself or a path below it (deleting "user" deletes "user.id"). */
export function underPath(column: string, path: string): boolean {
  return column === path || (column.startsWith(path) && column.charCodeAt(path.length) === 46);
}

/** True when some row of a chunk whose seqs start at `seqMin` may be hit by an entry. */
export function touches(entry: DeleteEntry, seqMin: number): boolean {
  return seqMin < entry.seqBefore;
}

/**
 * The chunk as a reader must see it: columns of deleted properties removed (or, where only part of
 * the chunk predates the delete, those rows' values turned missing). Returns `chunk` itself when no
 * entry applies, so caches keyed by chunk keep working.
 */
export function hideProperties(chunk: ColumnChunk, entries: readonly DeleteEntry[]): ColumnChunk {
  if (chunk.rows === 0) return chunk;
  let columns: Map<string, Column> | null = null;
  for (const entry of entries) {
    if (entry.kind !== 'property' || !touches(entry, chunk.seq[0])) continue;
    for (const [name, column] of columns ?? chunk.columns) {
      if (!underPath(name, entry.path)) continue;
      columns ??= new Map(chunk.columns);
      if (chunk.seq[chunk.rows - 1] < entry.seqBefore) {
        columns.delete(name);
        continue;
      }
      const tags = column.tags.slice();
      for (let i = 0; i < chunk.rows && chunk.seq[i] < entry.seqBefore; i++) tags[i] = TAG_MISSING;
      columns.set(name, { ...column, tags });
    }
  }
  return columns === null ? chunk : replaceColumns(chunk, columns);
}

/** Reused buffers of dropDeleted. */
export class DeleteScratch {
  hit = new Int32Array(0);
  ensure(rows: number): void {
    if (this.hit.length < rows) this.hit = new Int32Array(rows);
  }
}

/**
 * Removes the rows some RowsDelete entry matches from the selection src[0 .. n), writing the kept
 * rows to dst (which may be src) in order; returns their count. Both selections are ascending.
 */
export function dropDeleted(
  chunk: ColumnChunk,
  src: Int32Array,
  dst: Int32Array,
  n: number,
  entries: readonly DeleteEntry[],
  views: ColumnViews,
  scratch: Scratch,
  own: DeleteScratch,
): number {
  if (chunk.rows === 0) return n;
  let from = src;
  for (const entry of entries) {
    if (n === 0) break;
    if (entry.kind !== 'rows' || !touches(entry, chunk.seq[0])) continue;
    own.ensure(n);
    const hit = own.hit;
    let m = 0;
    const { startMs, endMs } = entry.range;
    for (let k = 0; k < n; k++) {
      const i = from[k];
      hit[m] = i;
      m += chunk.seq[i] < entry.seqBefore && chunk.ts[i] >= startMs && chunk.ts[i] < endMs ? 1 : 0;
    }
    if (m > 0 && entry.filters.length > 0) {
      m = compileFilters(entry.filters, chunk, views, scratch)(hit, hit, m);
    }
    if (m === 0) continue;
    let kept = 0;
    let h = 0;
    for (let k = 0; k < n; k++) {
      const i = from[k];
      while (h < m && hit[h] < i) h++;
      if (h < m && hit[h] === i) continue;
      dst[kept++] = i;
    }
    n = kept;
    from = dst;
  }
  if (from !== dst) dst.set(from.subarray(0, n));
  return n;
}

/** Row indexes of `chunk` no entry deletes (for rewriting a segment and reading the log). */
export function keptRows(
  chunk: ColumnChunk,
  entries: readonly DeleteEntry[],
  views: ColumnViews,
  scratch: Scratch,
): Int32Array {
  const all = Int32Array.from({ length: chunk.rows }, (_, i) => i);
  const n = dropDeleted(chunk, all, all, chunk.rows, entries, views, scratch, new DeleteScratch());
  return all.slice(0, n);
}
