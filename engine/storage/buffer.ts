/**
 * The in-memory write buffer of one collection: acknowledged rows not yet in a segment, kept as
 * growing typed arrays so a scan snapshot is a few copies, not a re-encoding. Rows arrive in log
 * order (seq increasing). The buffer knows nothing of files; storage/collection.ts flushes it.
 */
import { assert } from '../base/assert.js';
import { SNAPSHOT_STEP_CELLS } from '../base/limits.js';
import type { Leaves } from '../schema/flatten.js';
import {
  CompactCursor, KIND_FALSE, KIND_FRAGMENT, KIND_LIST, KIND_NUM, KIND_STR, KIND_TRUE, type CompactLeaves, type LeafView,
} from '../schema/leaf-codec.js';
import {
  TAG_BOOL, TAG_LIST, TAG_NULL, TAG_NUM, TAG_STR,
  type Column, type ColumnChunk, type Primitive,
} from './chunk.js';

const INITIAL_ROWS = 1024;
/**
 * A column whose first UNIQUE_CHECK_ROWS strings hold more than UNIQUE_SHARE distinct values (an
 * id per user, session or request) stops interning: its next strings are appended to the
 * dictionary as they come, repeats and all. A lookup in a Map of 250,000 fresh strings is most of
 * what a row of such a column costs the write thread (250,000 rows of bench/scale's events, two
 * such columns: 1.05 -> 0.36 µs a row), and the flush interns them anyway, off that thread
 * (maintenance/segment-worker.ts).
 */
const UNIQUE_CHECK_ROWS = 4096;
const UNIQUE_SHARE = 0.5;

class ColumnBuilder {
  tags: Uint8Array;
  num: Float64Array | null = null;
  str: Int32Array | null = null;
  readonly dict: string[] = [];
  private readonly dictIndex = new Map<string, number>();
  /** What `dict` costs, kept as it grows: the budget check asks often, a dict can hold 250,000. */
  private dictBytes = 0;
  lists: (Primitive[] | null)[] | null = null;
  /** The dictionary may hold a string more than once (UNIQUE_CHECK_ROWS; chunk.ts Column.repeats). */
  private repeats = false;
  /** Strings written since the last reset, up to the uniqueness check. */
  private strings = 0;
  /** num and str of the rows before the last reset, for the next rows (members stay null until used). */
  private spareNum: Float64Array | null = null;
  private spareStr: Int32Array | null = null;

  constructor(readonly path: string, capacity: number) {
    this.tags = new Uint8Array(capacity);
  }

  /** About how many bytes the column holds. */
  get bytes(): number {
    let bytes = this.tags.length + (this.num?.byteLength ?? 0) + (this.str?.byteLength ?? 0);
    bytes += this.dictBytes;
    if (this.lists) bytes += 8 * this.lists.length + 48 * this.lists.length;
    return bytes;
  }

  /** Empties the column for reuse; `rows` rows were written since the last reset. */
  reset(rows: number): void {
    this.tags.fill(0, 0, rows);
    this.dict.length = 0;
    this.dictIndex.clear();
    this.dictBytes = 0;
    this.repeats = false;
    this.strings = 0;
    this.lists = null;
    this.spareNum = this.num ?? this.spareNum;
    this.spareStr = this.str ?? this.spareStr;
    this.num = null;
    this.str = null;
  }

  grow(capacity: number): void {
    this.tags = growU8(this.tags, capacity);
    if (this.num) this.num = growF64(this.num, capacity);
    if (this.str) this.str = growI32(this.str, capacity);
    this.spareNum = null;
    this.spareStr = null;
  }

  private newNum(): Float64Array {
    const spare = this.spareNum;
    this.spareNum = null;
    return spare ?? new Float64Array(this.tags.length);
  }

  private newStr(): Int32Array {
    const spare = this.spareStr;
    this.spareStr = null;
    return spare ?? new Int32Array(this.tags.length);
  }

  set(row: number, value: unknown): void {
    switch (typeof value) {
      case 'number':
        (this.num ??= this.newNum())[row] = value;
        this.tags[row] = TAG_NUM;
        return;
      case 'boolean':
        (this.num ??= this.newNum())[row] = value ? 1 : 0;
        this.tags[row] = TAG_BOOL;
        return;
      case 'string':
        (this.str ??= this.newStr())[row] = this.code(value);
        this.tags[row] = TAG_STR;
        return;
      default:
        if (Array.isArray(value)) {
          const lists = (this.lists ??= []);
          while (lists.length < row) lists.push(null);
          lists[row] = value as Primitive[];
          this.tags[row] = TAG_LIST;
        } else {
          this.tags[row] = TAG_NULL;
        }
    }
  }

  /**
   * Sets a row from a leaf of a view: its kind and ref (LeafView's, or CompactLeaves'); a string's
   * code comes from `codes` when this column (path index `column`) set it.
   */
  setLeaf(row: number, view: LeafView, kind: number, ref: number, column: number, codes: ViewCodes): void {
    if (kind === KIND_STR) {
      let code: number;
      if (codes.column[ref] === column && this.strings + 1 !== UNIQUE_CHECK_ROWS) {
        code = codes.code[ref];
        this.strings++; // as code() counts it; the uniqueness check itself stays with code()
      } else {
        code = this.code(view.strings[ref]);
        codes.column[ref] = column;
        codes.code[ref] = code;
      }
      (this.str ??= this.newStr())[row] = code;
      this.tags[row] = TAG_STR;
    } else if (kind === KIND_NUM) {
      this.setNumber(row, view.nums[ref]);
    } else if (kind === KIND_TRUE || kind === KIND_FALSE) {
      (this.num ??= this.newNum())[row] = kind === KIND_TRUE ? 1 : 0;
      this.tags[row] = TAG_BOOL;
    } else if (kind === KIND_LIST) {
      // One array per distinct list of the batch, shared by its rows: nothing writes a stored list.
      this.set(row, codes.lists[ref] ??= JSON.parse(view.strings[ref]) as Primitive[]);
    } else {
      this.tags[row] = TAG_NULL;
    }
  }

  setNumber(row: number, value: number): void {
    (this.num ??= this.newNum())[row] = value;
    this.tags[row] = TAG_NUM;
  }

  /**
   * Sets a row to string `code` of this column's dictionary, as setLeaf does with a code it kept,
   * and returns true; false when the next string is the one the uniqueness check looks at, which
   * only code() (setLeaf) may write.
   */
  setCode(row: number, code: number): boolean {
    if (this.strings + 1 === UNIQUE_CHECK_ROWS) return false;
    this.strings++;
    this.str![row] = code;
    this.tags[row] = TAG_STR;
    return true;
  }

  private code(value: string): number {
    if (this.repeats) {
      this.dict.push(value);
      this.dictBytes += 40 + 2 * value.length;
      return this.dict.length - 1;
    }
    if (++this.strings === UNIQUE_CHECK_ROWS && this.dict.length > UNIQUE_SHARE * UNIQUE_CHECK_ROWS) {
      this.repeats = true;
      this.dictIndex.clear(); // Let its memory go: it is not asked again until the next reset.
    }
    let code = this.dictIndex.get(value);
    if (code === undefined) {
      code = this.dict.length;
      this.dict.push(value);
      this.dictIndex.set(value, code);
      this.dictBytes += 40 + 2 * value.length;
    }
    return code;
  }

  /** Takes rows [0, rows) of a snapshot of this column as its own, on an empty column. */
  take(column: Column, rows: number): void {
    const tags = column.tags.subarray(0, rows);
    this.tags.set(tags);
    // Members that no kept row uses stay null, as a chunk's do (chunk.ts).
    let numbers = false;
    let strings = false;
    let lists = false;
    for (let row = 0; row < rows; row++) {
      const tag = tags[row];
      if (tag === TAG_NUM || tag === TAG_BOOL) numbers = true;
      else if (tag === TAG_STR) strings = true;
      else if (tag === TAG_LIST) lists = true;
    }
    if (numbers) (this.num ??= this.newNum()).set(column.num!.subarray(0, rows));
    if (strings) {
      const str = (this.str ??= this.newStr());
      const codes = new Int32Array(column.dict!.length).fill(-1);
      for (let row = 0; row < rows; row++) {
        if (tags[row] !== TAG_STR) continue;
        const code = column.str![row];
        if (codes[code] === -1) codes[code] = this.code(column.dict![code]);
        str[row] = codes[code];
      }
    }
    if (lists) this.lists = column.lists!.slice(0, rows) as (Primitive[] | null)[];
  }

  /** A copy of rows [from, to). */
  snapshot(from: number, to: number): Column {
    let lists: (Primitive[] | null)[] | null = null;
    if (this.lists) {
      lists = this.lists.slice(from, to);
      while (lists.length < to - from) lists.push(null);
    }
    return {
      path: this.path,
      tags: this.tags.slice(from, to),
      num: this.num ? this.num.slice(from, to) : null,
      str: this.str ? this.str.slice(from, to) : null,
      dict: this.str ? this.dict.slice() : null,
      lists,
      ...(this.repeats && { repeats: true }),
    };
  }
}

/** Per string of a view: the column (path index) that last coded it, and that code. */
interface ViewCodes {
  readonly column: Int32Array;
  readonly code: Int32Array;
  /** Per string that is a list's JSON text: the list, parsed once. */
  readonly lists: (Primitive[] | undefined)[];
}

/** What appendView finds once per batch, for one buffer and one view. */
export interface ViewCache {
  readonly columns: (ColumnBuilder | undefined)[];
  readonly codes: ViewCodes;
  /**
   * Per leaf of the view's fragment table (LeafView.compact, from its first entry): a string's code
   * in its leaf's column once a row set it, else -1. A row using a result then costs a write per
   * leaf, with no path or string to look up.
   */
  readonly tableCodes: Int32Array;
  /** Finds each row's leaves in LeafView.compact (null without one). */
  readonly cursor: CompactCursor | null;
}

const NO_CODES = new Int32Array(0);

function tableCodes(compact: CompactLeaves): Int32Array {
  return new Int32Array(compact.kinds.length - compact.eventLeaves).fill(-1);
}

export function newViewCache(view: LeafView): ViewCache {
  return {
    columns: new Array<ColumnBuilder | undefined>(view.paths.length),
    codes: { column: new Int32Array(view.strings.length).fill(-1), code: new Int32Array(view.strings.length), lists: [] },
    tableCodes: view.compact === null ? NO_CODES : tableCodes(view.compact),
    cursor: view.compact === null ? null : new CompactCursor(view.compact),
  };
}

/** Snapshot versions are unique across buffers, so a worker never confuses two collections' rows. */
let nextSnapshotVersion = 1;

export class WriteBuffer {
  private capacity = INITIAL_ROWS;
  private count = 0;
  private ts: Float64Array = new Float64Array(INITIAL_ROWS);
  private createdAt: Float64Array = new Float64Array(INITIAL_ROWS);
  private seq: Float64Array = new Float64Array(INITIAL_ROWS);
  private readonly columns = new Map<string, ColumnBuilder>();
  /** Emptied columns of the rows before the last flush, taken again when their path comes back. */
  private spare = new Map<string, ColumnBuilder>();
  private cached: ColumnChunk | null = null;
  tsMin = Infinity;
  tsMax = -Infinity;

  get rows(): number {
    return this.count;
  }

  /** About how many bytes the buffer holds: its arrays at their capacity, dictionaries, lists. */
  get bytes(): number {
    let bytes = this.capacity * 24;
    for (const column of this.columns.values()) bytes += column.bytes;
    return bytes;
  }

  get firstSeq(): number {
    return this.count === 0 ? -1 : this.seq[0];
  }

  get lastSeq(): number {
    return this.count === 0 ? -1 : this.seq[this.count - 1];
  }

  /** Appends one row whose leaves are leaves[from, to). */
  append(tsMs: number, createdAtMs: number, seq: number, leaves: Leaves, from: number, to: number): void {
    const row = this.startRow(tsMs, createdAtMs, seq);
    for (let i = from; i < to; i++) {
      const path = leaves.paths[i];
      const column = this.columns.get(path) ?? this.addColumn(path);
      column.set(row, leaves.values[i]);
    }
    this.endRow(tsMs);
  }

  /** The next row, its system fields written; endRow makes it part of the buffer. */
  private startRow(tsMs: number, createdAtMs: number, seq: number): number {
    assert(this.count === 0 || seq > this.seq[this.count - 1], 'buffer rows arrive in log order');
    if (this.count === this.capacity) this.grow(this.capacity * 2);
    const row = this.count;
    this.ts[row] = tsMs;
    this.createdAt[row] = createdAtMs;
    this.seq[row] = seq;
    return row;
  }

  private endRow(tsMs: number): void {
    this.count++;
    if (tsMs < this.tsMin) this.tsMin = tsMs;
    if (tsMs > this.tsMax) this.tsMax = tsMs;
    this.cached = null;
  }

  /**
   * Appends one row whose leaves are the view's [from, to). `cache` is this buffer's for this view:
   * the columns of the view's paths and its strings' codes, found once for the whole batch.
   */
  appendView(tsMs: number, createdAtMs: number, seq: number, view: LeafView, from: number, to: number, cache: ViewCache): void {
    const row = this.startRow(tsMs, createdAtMs, seq);
    if (view.compact !== null) this.setCompact(row, view, view.compact, from, to, cache);
    else {
      const { pathOf, kinds, refs } = view;
      const columns = cache.columns;
      for (let i = from; i < to; i++) {
        const p = pathOf[i];
        const column = columns[p] ?? (columns[p] = this.columnOf(view.paths[p]));
        column.setLeaf(row, view, kinds[i], refs[i], p, cache.codes);
      }
    }
    this.endRow(tsMs);
  }

  /**
   * appendView's row from a view's leaves as stored (LeafView.compact), each add-on result read
   * from the record's table, so the view is never expanded. [from, to) index the expanded leaves;
   * a batch gives a store its rows in leaf order, which the cache's cursor walks.
   */
  private setCompact(row: number, view: LeafView, compact: CompactLeaves, from: number, to: number, cache: ViewCache): void {
    const { pathOf, kinds, refs, starts } = compact;
    const columns = cache.columns;
    for (let c = cache.cursor!.seek(from), end = cache.cursor!.seek(to); c < end; c++) {
      const kind = kinds[c];
      if (kind === KIND_FRAGMENT) {
        this.setEntry(row, view, compact, starts[refs[c]], starts[refs[c] + 1], cache);
        continue;
      }
      const p = pathOf[c];
      const column = columns[p] ?? (columns[p] = this.columnOf(view.paths[p]));
      column.setLeaf(row, view, kind, refs[c], p, cache.codes);
    }
  }

  /** A row's leaves of one add-on result (compact leaves [start, end)), as setLeaf would set them one by one. */
  private setEntry(row: number, view: LeafView, compact: CompactLeaves, start: number, end: number, cache: ViewCache): void {
    const { pathOf, kinds, refs, eventLeaves } = compact;
    const { columns, tableCodes } = cache;
    const nums = view.nums;
    for (let j = start; j < end; j++) {
      const p = pathOf[j];
      const column = columns[p] ?? (columns[p] = this.columnOf(view.paths[p]));
      const kind = kinds[j];
      if (kind === KIND_NUM) column.setNumber(row, nums[refs[j]]);
      else if (kind !== KIND_STR || tableCodes[j - eventLeaves] === -1 || !column.setCode(row, tableCodes[j - eventLeaves])) {
        column.setLeaf(row, view, kind, refs[j], p, cache.codes);
        if (kind === KIND_STR) tableCodes[j - eventLeaves] = column.str![row];
      }
    }
  }

  private columnOf(path: string): ColumnBuilder {
    return this.columns.get(path) ?? this.addColumn(path);
  }

  private addColumn(path: string): ColumnBuilder {
    let column = this.spare.get(path);
    if (column === undefined) {
      column = new ColumnBuilder(path, this.capacity);
    } else {
      this.spare.delete(path);
      if (column.tags.length < this.capacity) column.grow(this.capacity);
    }
    this.columns.set(path, column);
    return column;
  }

  private grow(capacity: number): void {
    this.capacity = capacity;
    this.ts = growF64(this.ts, capacity);
    this.createdAt = growF64(this.createdAt, capacity);
    this.seq = growF64(this.seq, capacity);
    for (const column of this.columns.values()) column.grow(capacity);
  }

  /**
   * Drops the first `count` rows (they are now in segments) and keeps the rest, re-encoding their
   * strings so the dictionaries shrink to what remaining rows use. The buffer empties itself and
   * takes the kept rows again from a snapshot (a copy), so its arrays are written over rather than
   * allocated anew: fresh memory costs a page fault per 4 KB touched.
   */
  dropPrefix(count: number): WriteBuffer {
    const chunk = count >= this.count ? null : this.copyRows(count);
    this.reset(false);
    if (chunk === null) return this;
    const rows = chunk.rows;
    let capacity = this.capacity;
    while (capacity < rows) capacity *= 2;
    if (capacity !== this.capacity) this.grow(capacity);
    this.ts.set(chunk.ts);
    this.createdAt.set(chunk.createdAt);
    this.seq.set(chunk.seq);
    for (let row = 0; row < rows; row++) {
      if (chunk.ts[row] < this.tsMin) this.tsMin = chunk.ts[row];
      if (chunk.ts[row] > this.tsMax) this.tsMax = chunk.ts[row];
    }
    for (const column of chunk.columns.values()) {
      if (column.tags.some((tag) => tag !== 0)) this.addColumn(column.path).take(column, rows);
    }
    this.count = rows;
    return this;
  }

  /**
   * Lets an empty buffer's memory go: a collection that went quiet keeps no busy hour's arrays.
   * Returns the rows of capacity it let go (0 when there were none to let go).
   */
  trim(): number {
    if (this.count !== 0 || this.capacity <= INITIAL_ROWS) return 0;
    const rows = this.capacity;
    this.reset(true);
    return rows;
  }

  /** Empties the buffer; its memory is kept for the next rows unless `release`. */
  private reset(release: boolean): void {
    const rows = this.count;
    this.count = 0;
    this.tsMin = Infinity;
    this.tsMax = -Infinity;
    this.cached = null;
    if (release) {
      this.capacity = INITIAL_ROWS;
      this.ts = new Float64Array(INITIAL_ROWS);
      this.createdAt = new Float64Array(INITIAL_ROWS);
      this.seq = new Float64Array(INITIAL_ROWS);
      this.columns.clear();
      this.spare = new Map();
      return;
    }
    this.spare = new Map();
    for (const column of this.columns.values()) {
      column.reset(rows);
      this.spare.set(column.path, column);
    }
    this.columns.clear();
  }

  /**
   * A copy of the buffered rows that no one else holds (a flush moves it to another thread), made
   * a few columns at a time, with a turn of the event loop after every
   * SNAPSHOT_STEP_CELLS cells copied, so queries and writes are served while a flush copies a large
   * buffer (250,000 rows of bench/scale's events took the write thread 45 ms at once). It holds the
   * rows there were when it began: rows appended meanwhile come after them, and nothing else
   * changes the buffer until the flush has ended (dropPrefix, trim). Never the cached snapshot,
   * even when there is one: a scan may hold that one (scanSource) and post it to a query worker
   * later, which fails on buffers transferred meanwhile ("An ArrayBuffer is detached"), and an
   * in-process scan would read emptied arrays.
   */
  async detachedSnapshotInSteps(): Promise<ColumnChunk> {
    const to = this.count;
    const ts = this.ts.slice(0, to);
    const createdAt = this.createdAt.slice(0, to);
    const seq = this.seq.slice(0, to);
    const columns = new Map<string, Column>();
    let cells = 0;
    for (const builder of [...this.columns.values()]) {
      if (cells >= SNAPSHOT_STEP_CELLS) {
        cells = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      columns.set(builder.path, builder.snapshot(0, to));
      cells += to;
    }
    return { rows: to, ts, createdAt, seq, columns };
  }

  /** A copy of the buffered rows as a chunk; reused until the next append. */
  snapshot(): ColumnChunk {
    if (this.cached === null) {
      this.cached = this.copyRows(0);
      this.version = nextSnapshotVersion++;
    }
    return this.cached;
  }

  /** Tells snapshots apart: the same number means the same rows (query workers keep the last one). */
  version = 0;

  /** A copy of rows [from, rows) as a chunk. */
  private copyRows(from: number): ColumnChunk {
    const to = this.count;
    const columns = new Map<string, Column>();
    for (const [path, builder] of this.columns) columns.set(path, builder.snapshot(from, to));
    return {
      rows: to - from,
      ts: this.ts.slice(from, to),
      createdAt: this.createdAt.slice(from, to),
      seq: this.seq.slice(from, to),
      columns,
    };
  }
}

function growU8(array: Uint8Array, length: number): Uint8Array {
  const next = new Uint8Array(length);
  next.set(array);
  return next;
}

function growF64(array: Float64Array, length: number): Float64Array {
  const next = new Float64Array(length);
  next.set(array);
  return next;
}

function growI32(array: Int32Array, length: number): Int32Array {
  const next = new Int32Array(length);
  next.set(array);
  return next;
}
