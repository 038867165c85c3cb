/**
 * The in-memory columnar shape every reader of stored events sees: a chunk of rows of one
 * collection, from a segment file or from the in-memory write buffer. Everything here is plain
 * data (typed arrays, arrays, maps of them) so a chunk can be posted to a worker thread.
 * This file owns the shape only; segment/writer.ts and segment/reader.ts convert it to Arrow.
 */
import { assert } from '../base/assert.js';
import { DICTIONARY_STRINGS_AT_ONCE_MAX } from '../base/limits.js';
import type { DeleteEntry } from './delete-entry.js';

export type { SchemaType } from '../schema/dictionary.js';
import type { SchemaType } from '../schema/dictionary.js';

/** A list element or a scalar as stored. */
export type Primitive = number | string | boolean | null;

/** Per-row type tag of a column: what the row holds at this path. */
export const TAG_MISSING = 0;
export const TAG_NULL = 1;
export const TAG_NUM = 2;
export const TAG_STR = 3;
export const TAG_BOOL = 4;
export const TAG_LIST = 5;
export type Tag = 0 | 1 | 2 | 3 | 4 | 5;

/**
 * One property path over the rows of a chunk. `tags[i]` says which member holds row i:
 * TAG_NUM → num[i]; TAG_BOOL → num[i] is 0 or 1; TAG_STR → dict[str[i]]; TAG_LIST → lists[i].
 * A member is null when no row of the chunk uses it. Values of other rows are unspecified.
 */
export interface Column {
  readonly path: string;
  readonly tags: Uint8Array;
  /** Numbers and booleans; a column read from a segment with booleans and no numbers keeps bytes. */
  readonly num: Float64Array | Uint8Array | null;
  /** Dictionary codes, in the narrowest width the segment stored them (a view, not a copy). */
  readonly str: Codes | null;
  readonly dict: readonly string[] | null;
  /**
   * True when `dict` may hold a string more than once: a write buffer's column of near-unique
   * strings skips interning (buffer.ts). Readers go by the strings a code stands for, never by the
   * code alone; a segment write interns such a column (maintenance/segment-worker.ts), so segments never repeat.
   */
  readonly repeats?: boolean;
  readonly lists: readonly (readonly Primitive[] | null)[] | null;
  /**
   * A column read from a segment keeps its dictionary as the stored UTF-8 (dict.length + 1
   * offsets) and makes `dict`'s JS strings only when something asks for them: distinct counts
   * hash the bytes, so a high-cardinality column never costs a JS string per value.
   */
  readonly utf8?: Utf8Column | null;
  /** With `utf8`: how many entries the dictionary has, known without reading `utf8`. */
  readonly dictSize?: number;
  /** With `utf8`: dictionary entry `code` alone, without making every string (SegmentColumn). */
  stringAt?(code: number): string;
  /**
   * A column read from a segment whose numbers are all in one field of scaled integers keeps
   * them as stored, and makes `num`'s Float64 values only when something asks for them: range
   * filters and extremes read the integers, and so do sums, averages and gathers
   * (storedNumbers), so a scan never makes them.
   */
  readonly scaled?: ScaledNumbers | null;
  /** With `scaled`: false until `num`'s Float64 values are made (SegmentColumn). */
  readonly numMade?: boolean;
}

/**
 * Numbers as a segment stores them (segment/layout.ts): row i's number is values[i] / factor,
 * the double `num` holds (factor 1: values[i] itself). Values of rows that are not numbers are
 * unspecified, as `num`'s are.
 */
export interface ScaledNumbers {
  readonly values: Int8Array | Int16Array | Int32Array;
  /** 10^scale. */
  readonly factor: number;
}

/**
 * The stored integers a pass over a column's numbers (a sum, an average, a gather) reads,
 * dividing each by factor as it goes (the very double `num` holds; factor 1: the integer itself):
 * unless `num`'s Float64 values were made for another reader, when those are read. A division a
 * row costs less than making them (8 bytes a row, page by page) in a first run, and about 1 ns a
 * row in the next ones; the cache keeps 1-4 bytes a row, not 8. Null: read `num`.
 */
export function storedNumbers(column: Column): ScaledNumbers | null {
  const scaled = column.scaled;
  return scaled && (scaled.factor === 1 || column.numMade === false) ? scaled : null;
}

/** Per tag, a long run of that tag; uniformTags hands out views of it. */
const uniformRuns: (Uint8Array | undefined)[] = [];
/** The buffers of those runs (a grown run replaces the old one; views of the old stay valid). */
const uniformBuffers = new WeakSet<ArrayBufferLike>();

/**
 * The tags of a column whose every row has `tag`: a view of one run shared by every such column
 * of the thread, so a column of numbers read from a segment costs no byte a row for its tags.
 * Read-only: whoever needs other tags copies them first (`tags.slice()`), as every writer does.
 * The run is always longer than the view, so a view is never moved to another thread whole
 * (maintenance/segment-pool.ts transfers only buffers a view covers entirely).
 */
export function uniformTags(tag: Tag, rows: number): Uint8Array {
  let run = uniformRuns[tag];
  if (run === undefined || run.length <= rows) {
    run = new Uint8Array(Math.max(rows + 1, 2 * (run?.length ?? 32_768))).fill(tag);
    uniformRuns[tag] = run;
    uniformBuffers.add(run.buffer);
  }
  return run.subarray(0, rows);
}

/** True for tags from uniformTags: they hold one tag throughout, and cost their column nothing. */
export function isUniformTags(tags: Uint8Array): boolean {
  return uniformBuffers.has(tags.buffer);
}

/**
 * The numbers of a column some of whose rows are numbers (TAG_NUM): then `num` is Float64. Only a
 * column of booleans without numbers holds its 0s and 1s as bytes (a byte a row in the caches).
 */
export function numbersOf(column: Column): Float64Array {
  const num = column.num;
  assert(num instanceof Float64Array, `${column.path}: numbers are Float64`);
  return num;
}

/** Dictionary codes of a string column: all non-negative, whatever the width. */
export type Codes = Int32Array | Int16Array | Int8Array;

/** Entry `code` of a string column's dictionary; a segment column decodes just that entry. */
export function stringAt(column: Column, code: number): string {
  return column.stringAt !== undefined ? column.stringAt(code) : column.dict![code];
}

/**
 * How a reader that meets many codes of a chunk (grouping, select_unique), having selected `rows`
 * rows, reads the column's dictionary: a small one's strings, or a large one's that rows may
 * touch an eighth of, made at once and kept with the column, so later queries find them; a large
 * one's (ids: about an entry a row) under a selective filter one entry at a time, only those rows
 * select (one user's sessions: a few of 250,000).
 */
export function entryReader(column: Column, rows: number): (code: number) => string {
  const size = dictLength(column);
  if (size <= DICTIONARY_STRINGS_AT_ONCE_MAX || 8 * rows >= size) {
    const dict = column.dict!;
    return (code) => dict[code];
  }
  return (code) => stringAt(column, code);
}

/**
 * Row `row`'s number (TAG_NUM); a column that keeps its numbers as stored gives this one without
 * making Float64 values for all of them (an extraction reads a few rows of a segment).
 */
export function numberAt(column: Column, row: number): number {
  const stored = storedNumbers(column);
  if (stored === null) return column.num![row];
  return stored.factor === 1 ? stored.values[row] : stored.values[row] / stored.factor;
}

/** How many entries a string column's dictionary has (without making a segment column's strings). */
export function dictLength(column: Column): number {
  if (column.dictSize !== undefined) return column.dictSize;
  return column.utf8 != null ? column.utf8.offsets.length - 1 : column.dict!.length;
}

/** UTF-8 strings in Arrow's layout: value i is bytes[offsets[i] .. offsets[i + 1]). */
export interface Utf8Column {
  readonly bytes: Uint8Array;
  readonly offsets: Int32Array;
}

/**
 * Rows of one collection. `ts` is svc.timestamp and `createdAt` svc.created_at, in ms since the
 * epoch (UTC); `seq` is each row's position in the collection's log (the Kafka offset), strictly
 * increasing within a chunk, from which svc.id derives (storage/event-ids.ts). `columns` holds every flattened
 * property path, structural leaves included (schema/flatten.ts), except svc.id, svc.timestamp and
 * svc.created_at. Columns are the only copy of an event: event-json.ts rebuilds its JSON.
 */
export interface ColumnChunk {
  readonly rows: number;
  readonly ts: Float64Array;
  /**
   * The greatest ts of each TIME_BLOCK_ROWS rows, where the reader made them with ts (a segment:
   * segment/reader.ts): an extraction of the latest events reads only the blocks that can hold one.
   */
  readonly tsBlockMaxima?: Float64Array;
  readonly createdAt: Float64Array;
  readonly seq: Float64Array;
  readonly columns: ReadonlyMap<string, Column>;
}

/** Rows of a block whose greatest time a segment chunk keeps (ColumnChunk.tsBlockMaxima). */
export const TIME_BLOCK_ROWS = 4_096;

/** The greatest of values[0 .. rows) in each block of TIME_BLOCK_ROWS. */
export function blockMaxima(values: Float64Array, rows: number): Float64Array {
  const maxima = new Float64Array(Math.ceil(rows / TIME_BLOCK_ROWS));
  for (let block = 0; block < maxima.length; block++) {
    let max = -Infinity;
    const end = Math.min(rows, (block + 1) * TIME_BLOCK_ROWS);
    for (let i = block * TIME_BLOCK_ROWS; i < end; i++) if (values[i] > max) max = values[i];
    maxima[block] = max;
  }
  return maxima;
}

/** Min/max of the values of one column in a segment, per kind; absent when no row has that kind. */
export interface ColumnStats {
  readonly numMin?: number;
  readonly numMax?: number;
  /**
   * When every row is a number: their sum, added as a scan of the whole segment adds them
   * (cell-sums.ts sumLoop), so a sum or average answered from it is the scan's to the last bit.
   * Absent from footers written before 2026-11-28.
   */
  readonly numSum?: number;
  readonly strMin?: string;
  readonly strMax?: string;
  /** Rows whose tag is not TAG_MISSING. */
  readonly present: number;
}

/** What a segment's footer says about it: enough to prune it without reading it. */
export interface SegmentFooter {
  readonly rows: number;
  readonly tsMin: number;
  readonly tsMax: number;
  readonly seqMin: number;
  readonly seqMax: number;
  readonly columns: Readonly<Record<string, ColumnStats>>;
}

/** A stored, immutable segment file and its footer. */
export interface SegmentRef {
  /** Absolute path of the Arrow IPC file. */
  readonly file: string;
  readonly footer: SegmentFooter;
}

/**
 * Everything a scan of one collection over [startMs, endMs) must read: the segments whose footer
 * overlaps the range (already pruned by tsMin/tsMax) and a snapshot of the write buffer (rows not
 * yet in any segment), or null when the buffer holds none in range. `schema` is the collection's
 * schema dictionary (path → type).
 */
export interface ScanSource {
  /** The collection's id key: svc.id of a row is eventId(idKey, seq) (storage/event-ids.ts). */
  readonly idKey: number;
  readonly segments: readonly SegmentRef[];
  readonly memory: ColumnChunk | null;
  /**
   * Names `memory`'s rows (a buffer snapshot version): a query worker that was sent these rows
   * once keeps them, and later tasks are posted without them (query/exec/pool.ts). 0 = not named.
   */
  readonly memoryVersion: number;
  readonly schema: Readonly<Record<string, SchemaType>>;
  /** Pending deletes of the collection (engine/deletes): rows and properties readers must skip. */
  readonly deletes?: readonly DeleteEntry[];
}

/** A chunk whose system values are decoded on demand (a segment as read): its own way to swap columns. */
interface LazyChunk extends ColumnChunk {
  withColumns(columns: ReadonlyMap<string, Column>): ColumnChunk;
}

/**
 * The chunk with `columns` in place of its own. A segment chunk's ts/createdAt/seq are getters
 * (segment/reader.ts) that an object spread would drop, so this, not `{ ...chunk }`, is how
 * a chunk gets new columns.
 */
export function replaceColumns(chunk: ColumnChunk, columns: ReadonlyMap<string, Column>): ColumnChunk {
  if (typeof (chunk as Partial<LazyChunk>).withColumns === 'function') return (chunk as LazyChunk).withColumns(columns);
  return { rows: chunk.rows, ts: chunk.ts, createdAt: chunk.createdAt, seq: chunk.seq, columns };
}

/** A plain-data copy of the chunk's shape (no getters): what may cross threads or leave the engine. */
export function plainChunk(chunk: ColumnChunk): ColumnChunk {
  return { rows: chunk.rows, ts: chunk.ts, createdAt: chunk.createdAt, seq: chunk.seq, columns: chunk.columns };
}
