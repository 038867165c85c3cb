/**
 * The in-memory write buffer of one collection: acknowledged rows not yet in a segment, kept as
 * growing typed arrays so a scan snapshot is a few copies, not a re-encoding. Rows arrive in log
 * order (seq increasing). The buffer knows nothing of files; storage/collection.ts flushes it.
 */
import { assert } from '../assert.js';
import { BUFFER_RAW_KEPT_BYTES_MAX } from '../limits.js';
import type { Leaves } from '../schema/flatten.js';
import {
  TAG_BOOL, TAG_LIST, TAG_NULL, TAG_NUM, TAG_STR,
  type Column, type ColumnChunk, type Primitive, type Tag,
} from './chunk.js';

const INITIAL_ROWS = 1024;

class ColumnBuilder {
  tags: Uint8Array;
  num: Float64Array | null = null;
  str: Int32Array | null = null;
  readonly dict: string[] = [];
  private readonly dictIndex = new Map<string, number>();
  lists: (Primitive[] | null)[] | null = null;

  constructor(readonly path: string, capacity: number) {
    this.tags = new Uint8Array(capacity);
  }

  grow(capacity: number): void {
    this.tags = growU8(this.tags, capacity);
    if (this.num) this.num = growF64(this.num, capacity);
    if (this.str) this.str = growI32(this.str, capacity);
  }

  set(row: number, value: unknown): void {
    switch (typeof value) {
      case 'number':
        (this.num ??= new Float64Array(this.tags.length))[row] = value;
        this.tags[row] = TAG_NUM;
        return;
      case 'boolean':
        (this.num ??= new Float64Array(this.tags.length))[row] = value ? 1 : 0;
        this.tags[row] = TAG_BOOL;
        return;
      case 'string':
        (this.str ??= new Int32Array(this.tags.length))[row] = this.code(value);
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

  private code(value: string): number {
    let code = this.dictIndex.get(value);
    if (code === undefined) {
      code = this.dict.length;
      this.dict.push(value);
      this.dictIndex.set(value, code);
    }
    return code;
  }

  snapshot(rows: number): Column {
    let lists: (Primitive[] | null)[] | null = null;
    if (this.lists) {
      lists = this.lists.slice(0, rows);
      while (lists.length < rows) lists.push(null);
    }
    return {
      path: this.path,
      tags: this.tags.slice(0, rows),
      num: this.num ? this.num.slice(0, rows) : null,
      str: this.str ? this.str.slice(0, rows) : null,
      dict: this.str ? this.dict.slice() : null,
      lists,
    };
  }
}

export class WriteBuffer {
  private capacity = INITIAL_ROWS;
  private count = 0;
  private ts: Float64Array = new Float64Array(INITIAL_ROWS);
  private createdAt: Float64Array = new Float64Array(INITIAL_ROWS);
  private seq: Float64Array = new Float64Array(INITIAL_ROWS);
  private rawBytes: Buffer;
  private rawOffsets: Int32Array = new Int32Array(INITIAL_ROWS + 1);
  private readonly columns = new Map<string, ColumnBuilder>();
  private cached: ColumnChunk | null = null;
  tsMin = Infinity;
  tsMax = -Infinity;

  /** `rawBytes`: memory for the rows' JSON that no one else uses any more, to write over. */
  constructor(rawBytes?: Buffer) {
    this.rawBytes = rawBytes ?? Buffer.allocUnsafe(1 << 20);
  }

  get rows(): number {
    return this.count;
  }

  get firstSeq(): number {
    return this.count === 0 ? -1 : this.seq[0];
  }

  get lastSeq(): number {
    return this.count === 0 ? -1 : this.seq[this.count - 1];
  }

  /** Appends one row whose leaves are leaves[from, to). */
  append(
    tsMs: number, createdAtMs: number, seq: number, rawJson: string | Uint8Array, leaves: Leaves, from: number, to: number,
  ): void {
    assert(this.count === 0 || seq > this.seq[this.count - 1], 'buffer rows arrive in log order');
    if (this.count === this.capacity) this.grow(this.capacity * 2);
    const row = this.count;
    this.ts[row] = tsMs;
    this.createdAt[row] = createdAtMs;
    this.seq[row] = seq;
    this.appendRaw(row, rawJson);
    for (let i = from; i < to; i++) {
      const path = leaves.paths[i];
      let column = this.columns.get(path);
      if (column === undefined) {
        column = new ColumnBuilder(path, this.capacity);
        this.columns.set(path, column);
      }
      column.set(row, leaves.values[i]);
    }
    this.count++;
    if (tsMs < this.tsMin) this.tsMin = tsMs;
    if (tsMs > this.tsMax) this.tsMax = tsMs;
    this.cached = null;
  }

  /** Appends a row's JSON, as text or as its UTF-8 bytes. */
  private appendRaw(row: number, rawJson: string | Uint8Array): void {
    const start = this.rawOffsets[row];
    const bytes = typeof rawJson === 'string' ? rawJson.length * 3 : rawJson.length; // ≤ 3 bytes per UTF-16 unit
    const needed = start + bytes;
    if (needed > this.rawBytes.length) {
      const next = Buffer.allocUnsafe(Math.max(needed, this.rawBytes.length * 2));
      this.rawBytes.copy(next, 0, 0, start);
      this.rawBytes = next;
    }
    if (typeof rawJson === 'string') {
      this.rawOffsets[row + 1] = start + this.rawBytes.write(rawJson, start, 'utf8');
    } else {
      this.rawBytes.set(rawJson, start);
      this.rawOffsets[row + 1] = start + rawJson.length;
    }
  }

  private grow(capacity: number): void {
    this.capacity = capacity;
    this.ts = growF64(this.ts, capacity);
    this.createdAt = growF64(this.createdAt, capacity);
    this.seq = growF64(this.seq, capacity);
    this.rawOffsets = growI32(this.rawOffsets, capacity + 1);
    for (const column of this.columns.values()) column.grow(capacity);
  }

  /**
   * Drops the first `count` rows (they are now in segments) and keeps the rest, re-encoding their
   * strings so the dictionaries shrink to what remaining rows use.
   */
  dropPrefix(count: number): WriteBuffer {
    const chunk = count >= this.count ? null : this.snapshot();
    // The next buffer takes over this one's raw bytes (the snapshot holds a copy): memory that
    // has been touched once costs no page faults when rows are written to it again. Up to a bound,
    // so an idle collection does not keep the memory of its busiest moment.
    const next = new WriteBuffer(this.rawBytes.length <= BUFFER_RAW_KEPT_BYTES_MAX ? this.rawBytes : undefined);
    if (chunk === null) return next;
    const leaves: Leaves = { paths: [], values: [], start: 0, count: 0 };
    const columns = [...chunk.columns.values()];
    for (let row = count; row < chunk.rows; row++) {
      leaves.count = 0;
      for (const column of columns) {
        const tag = column.tags[row];
        if (tag === 0) continue;
        leaves.paths[leaves.count] = column.path;
        leaves.values[leaves.count++] = valueAt(column, row);
      }
      const raw = chunk.raw.bytes.subarray(chunk.raw.offsets[row], chunk.raw.offsets[row + 1]);
      next.append(chunk.ts[row], chunk.createdAt[row], chunk.seq[row], raw, leaves, 0, leaves.count);
    }
    return next;
  }

  /** A copy of the buffered rows that no one else holds (a flush moves it to another thread). */
  detachedSnapshot(): ColumnChunk {
    const chunk = this.snapshot();
    this.cached = null;
    return chunk;
  }

  /** A copy of the buffered rows as a chunk; reused until the next append. */
  snapshot(): ColumnChunk {
    if (this.cached) return this.cached;
    const rows = this.count;
    const columns = new Map<string, Column>();
    for (const [path, builder] of this.columns) columns.set(path, builder.snapshot(rows));
    this.cached = {
      rows,
      ts: this.ts.slice(0, rows),
      createdAt: this.createdAt.slice(0, rows),
      seq: this.seq.slice(0, rows),
      raw: { bytes: new Uint8Array(this.rawBytes.subarray(0, this.rawOffsets[rows])), offsets: this.rawOffsets.slice(0, rows + 1) },
      columns,
    };
    return this.cached;
  }
}

function valueAt(column: Column, row: number): unknown {
  switch (column.tags[row]) {
    case TAG_NUM: return column.num![row];
    case TAG_BOOL: return column.num![row] === 1;
    case TAG_STR: return column.dict![column.str![row]];
    case TAG_LIST: return column.lists![row];
    default: return null;
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

export type { Tag };
