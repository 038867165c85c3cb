/**
 * Row-level operations on chunks used by flushes and compaction: take a subset of rows (one
 * partition of a buffer) and concatenate chunks (merging their string dictionaries). Not used in
 * query scans, which read chunks in place.
 */
import { TAG_LIST, TAG_MISSING, TAG_STR, type Column, type ColumnChunk, type Primitive } from './chunk.js';

/** The rows of `chunk` at `indices` (ascending), as a new chunk with compacted dictionaries. */
export function gatherChunk(chunk: ColumnChunk, indices: Int32Array): ColumnChunk {
  return concatParts([{ chunk, indices }]);
}

/** The rows of all chunks, in order. */
export function concatChunks(chunks: readonly ColumnChunk[]): ColumnChunk {
  return concatParts(chunks.map((chunk) => ({ chunk, indices: null })));
}

/**
 * `chunk` with each column whose dictionary may repeat strings (Column.repeats) interned, so it
 * holds each string once; the other columns are taken as they are.
 */
export function internRepeats(chunk: ColumnChunk): ColumnChunk {
  const parts: Part[] = [{ chunk, indices: null }];
  const columns = new Map<string, Column>();
  for (const [path, column] of chunk.columns) {
    if (column.repeats !== true) {
      columns.set(path, column);
      continue;
    }
    const interned = concatColumn(path, parts, chunk.rows);
    if (interned !== null) columns.set(path, interned);
  }
  return { ...chunk, columns };
}

interface Part {
  readonly chunk: ColumnChunk;
  readonly indices: Int32Array | null;
}

function rowsOf(part: Part): number {
  return part.indices ? part.indices.length : part.chunk.rows;
}

function concatParts(parts: readonly Part[]): ColumnChunk {
  const rows = parts.reduce((sum, part) => sum + rowsOf(part), 0);
  const ts = new Float64Array(rows);
  const createdAt = new Float64Array(rows);
  const seq = new Float64Array(rows);
  let out = 0;
  for (const { chunk, indices } of parts) {
    const n = indices ? indices.length : chunk.rows;
    for (let k = 0; k < n; k++, out++) {
      const i = indices ? indices[k] : k;
      ts[out] = chunk.ts[i];
      createdAt[out] = chunk.createdAt[i];
      seq[out] = chunk.seq[i];
    }
  }
  const paths = new Set<string>();
  for (const { chunk } of parts) for (const path of chunk.columns.keys()) paths.add(path);
  const columns = new Map<string, Column>();
  for (const path of paths) {
    const column = concatColumn(path, parts, rows);
    if (column) columns.set(path, column);
  }
  return { rows, ts, createdAt, seq, columns };
}

function concatColumn(path: string, parts: readonly Part[], rows: number): Column | null {
  const tags = new Uint8Array(rows);
  let num: Float64Array | null = null;
  let str: Int32Array | null = null;
  let lists: (readonly Primitive[] | null)[] | null = null;
  const dict: string[] = [];
  const dictIndex = new Map<string, number>();
  let out = 0;
  let present = 0;
  for (const { chunk, indices } of parts) {
    const column = chunk.columns.get(path);
    const n = indices ? indices.length : chunk.rows;
    if (!column) {
      out += n;
      continue;
    }
    const remap = column.dict ? new Int32Array(column.dict.length).fill(-1) : null;
    for (let k = 0; k < n; k++, out++) {
      const i = indices ? indices[k] : k;
      const tag = column.tags[i];
      if (tag === TAG_MISSING) continue;
      present++;
      tags[out] = tag;
      if (column.num) (num ??= new Float64Array(rows))[out] = column.num[i];
      if (tag === TAG_STR && column.str && column.dict && remap) {
        const code = column.str[i];
        if (remap[code] < 0) remap[code] = internString(column.dict[code], dict, dictIndex);
        (str ??= new Int32Array(rows))[out] = remap[code];
      } else if (tag === TAG_LIST && column.lists) {
        lists ??= new Array<readonly Primitive[] | null>(rows).fill(null);
        lists[out] = column.lists[i];
      }
    }
  }
  if (present === 0) return null;
  return { path, tags, num, str, dict: str ? dict : null, lists };
}

function internString(value: string, dict: string[], index: Map<string, number>): number {
  let code = index.get(value);
  if (code === undefined) {
    code = dict.length;
    dict.push(value);
    index.set(value, code);
  }
  return code;
}
