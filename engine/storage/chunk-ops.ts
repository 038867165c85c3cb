/**
 * Row-level operations on chunks used by flushes and compaction: take a subset of rows (one
 * partition of a buffer) and concatenate chunks (merging their string dictionaries). Not used in
 * query scans, which read chunks in place.
 */
import { TAG_LIST, TAG_MISSING, TAG_STR, type Column, type ColumnChunk, type Primitive } from './chunk.js';
import { StringInterner } from './string-interner.js';

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
    if (indices === null) {
      ts.set(chunk.ts.subarray(0, chunk.rows), out);
      createdAt.set(chunk.createdAt.subarray(0, chunk.rows), out);
      seq.set(chunk.seq.subarray(0, chunk.rows), out);
      out += chunk.rows;
      continue;
    }
    for (let k = 0; k < indices.length; k++, out++) {
      const i = indices[k];
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

/**
 * Column `path` over the rows of `parts`, one pass per member: tags, numbers (copied whatever the
 * tag: a number of a row that holds none is unspecified), string codes re-interned into one
 * dictionary (each source entry looked up once), lists. Null when no row holds the path.
 */
function concatColumn(path: string, parts: readonly Part[], rows: number): Column | null {
  const tags = new Uint8Array(rows);
  let num: Float64Array | null = null;
  let str: Int32Array | null = null;
  let lists: (readonly Primitive[] | null)[] | null = null;
  let interner: StringInterner | null = null;
  let out = 0;
  let present = 0;
  for (const part of parts) {
    const { chunk, indices } = part;
    const column = chunk.columns.get(path);
    const n = rowsOf(part);
    if (!column) {
      out += n;
      continue;
    }
    const source = column.tags;
    if (indices === null) tags.set(source.subarray(0, n), out);
    else for (let k = 0; k < n; k++) tags[out + k] = source[indices[k]];
    let strings = 0;
    let listed = 0;
    for (let k = out; k < out + n; k++) {
      const tag = tags[k];
      if (tag !== TAG_MISSING) present++;
      if (tag === TAG_STR) strings++;
      else if (tag === TAG_LIST) listed++;
    }
    const values = column.num;
    if (values) {
      num ??= new Float64Array(rows);
      if (indices === null) num.set(values.subarray(0, n), out);
      else for (let k = 0; k < n; k++) num[out + k] = values[indices[k]];
    }
    const codes = column.str;
    const dict = strings > 0 && codes ? column.dict : null; // a segment's strings are made when asked for
    if (codes && dict) {
      str ??= new Int32Array(rows);
      interner ??= new StringInterner(dict.length);
      const remap = new Int32Array(dict.length).fill(-1);
      for (let k = 0; k < n; k++) {
        if (tags[out + k] !== TAG_STR) continue;
        const code = codes[indices === null ? k : indices[k]];
        let mapped = remap[code];
        if (mapped < 0) mapped = remap[code] = interner.intern(dict[code]);
        str[out + k] = mapped;
      }
    }
    const sourceLists = column.lists;
    if (listed > 0 && sourceLists) {
      lists ??= new Array<readonly Primitive[] | null>(rows).fill(null);
      for (let k = 0; k < n; k++) {
        if (tags[out + k] === TAG_LIST) lists[out + k] = sourceLists[indices === null ? k : indices[k]];
      }
    }
    out += n;
  }
  if (present === 0) return null;
  return { path, tags, num, str, dict: str ? interner!.strings : null, lists };
}
