/**
 * Column lookup for the scan: a chunk's stored columns plus virtual numeric columns for
 * svc.timestamp and svc.created_at (their ms values, so filters, group_by and aggregates treat
 * them as instants), and the set of tags each column uses. Both are cached per chunk/column in
 * weak maps owned by one ColumnViews (one per worker or service), never at module level.
 */
import { isUniformTags, TAG_NUM, TAG_STR, uniformTags, type Column, type ColumnChunk, type Utf8Column } from '../../storage/chunk.js';
import { paddedKeys, utf8Keys } from './value-key.js';
import { SegmentColumn, type PaddedUtf8 } from '../../storage/segment/decode-column.js';
import type { ValueCounts } from '../../storage/segment/sketches.js';
import type { KeyIds } from './key-ids.js';

export interface DictKeys {
  readonly hi: Int32Array;
  readonly lo: Int32Array;
  /** 1 once hi/lo of that code are computed; null when all are. */
  readonly done: Uint8Array | null;
}

/** A segment's value counts as a column of distinct values and their weights (value-counts.ts). */
export interface Summary {
  readonly chunk: ColumnChunk;
  readonly column: Column;
  readonly weights: Float64Array;
}

export class ColumnViews {
  private readonly virtual = new WeakMap<ColumnChunk, Map<string, Column>>();
  private readonly masks = new WeakMap<Column, number>();
  private readonly ranges = new WeakMap<ColumnChunk, [number, number]>();
  private readonly keys = new WeakMap<readonly string[] | Utf8Column | PaddedUtf8, DictKeys>();
  private readonly summaries = new WeakMap<ValueCounts, Summary>();
  /** Segment columns every row of which is a string and every dictionary entry of which is used. */
  private readonly allUsed = new WeakSet<Column>();
  private readonly ids = new WeakMap<Utf8Column | PaddedUtf8, { readonly generation: number; readonly ids: Int32Array }>();

  /** @param keyIds the worker's dense ids of distinct keys (key-ids.ts); null where there is none. */
  constructor(readonly keyIds: KeyIds | null = null) {}

  /**
   * Per dictionary code, the 64-bit distinct key of that string (value-key.ts), filled
   * lazily; kept with the chunk, so repeated count_unique queries hash each string once.
   */
  dictKeys(dict: readonly string[]): DictKeys {
    let keys = this.keys.get(dict);
    if (!keys) {
      const size = dict.length;
      keys = { hi: new Int32Array(size), lo: new Int32Array(size), done: new Uint8Array(size) };
      this.keys.set(dict, keys);
    }
    return keys;
  }

  /**
   * dictKeys of a segment column's dictionary as stored (padded or with offsets): all computed at
   * once from its bytes, and counted with the column's decoded bytes, so the chunk cache's budget
   * covers them.
   */
  storedKeys(column: SegmentColumn): DictKeys {
    const stored = column.padded ?? column.utf8!;
    let keys = this.keys.get(stored);
    if (!keys) {
      const size = column.dictSize;
      keys = hashStored(column);
      this.keys.set(stored, keys);
      column.decodedBytes += 8 * size;
    }
    return keys;
  }

  /**
   * Gives each entry of the column's stored dictionary its dense id (key-ids.ts): done as the ids
   * are warmed (worker.ts), never by a query. The ids (4 bytes an entry) are kept instead of the
   * keys (8; storedKeys hashes them again if a grouped count needs them) and counted with the
   * column's decoded bytes. Without a table, or when the dictionary does not fit in it, its keys
   * are kept instead.
   */
  assignIds(column: SegmentColumn): void {
    if (column.dictSize === 0) return;
    const stored = column.padded ?? column.utf8!;
    if (this.keyIds === null) {
      this.storedKeys(column);
      return;
    }
    if (this.denseIds(column) !== null) return;
    const keys = this.keys.get(stored) ?? hashStored(column);
    const ids = this.keyIds.assign(keys.hi, keys.lo, column.dictSize);
    if (ids === null) {
      this.storedKeys(column);
      return;
    }
    this.ids.set(stored, { generation: this.keyIds.generation, ids });
    column.decodedBytes += 4 * ids.length;
    // A distinct count of all its rows then sets the ids of its codes, read in order, rather
    // than those of its rows' codes, read at random (~3x the time).
    if (this.tagMask(column) !== 1 << TAG_STR || column.str === null) return;
    const seen = new Uint8Array(column.dictSize);
    const str = column.str;
    for (let i = 0; i < str.length; i++) seen[str[i]] = 1;
    if (seen.indexOf(0) === -1) this.markAllUsed(column);
  }

  /** The dense id of each code of a stored dictionary, when assignIds gave them in the table's present generation. */
  denseIds(column: SegmentColumn): Int32Array | null {
    const stored = column.padded ?? column.utf8;
    const entry = stored === null ? undefined : this.ids.get(stored);
    if (entry === undefined || this.keyIds === null) return null;
    if (entry.generation === this.keyIds.generation) return entry.ids;
    this.ids.delete(stored!);
    return null;
  }

  /**
   * Whether each entry of the column's dictionary is some row's value: then a distinct count of
   * all its rows takes the dictionary's keys without reading the rows (count-unique.ts). Known
   * once a scan of all its rows has found so (markAllUsed); a rewritten segment can keep entries
   * no row uses (deletes), so it is never assumed.
   */
  allCodesUsed(column: Column): boolean {
    return this.allUsed.has(column);
  }

  markAllUsed(column: Column): void {
    this.allUsed.add(column);
  }

  /** A segment column's summary (value-counts.ts), kept with the sidecar counts it is made of. */
  summary(counts: ValueCounts, make: () => Summary): Summary {
    let summary = this.summaries.get(counts);
    if (!summary) this.summaries.set(counts, (summary = make()));
    return summary;
  }

  /** [min, max] of the chunk's svc.timestamp values. */
  tsRange(chunk: ColumnChunk): [number, number] {
    let range = this.ranges.get(chunk);
    if (!range) {
      let min = Infinity;
      let max = -Infinity;
      const ts = chunk.ts;
      for (let i = 0; i < chunk.rows; i++) {
        const t = ts[i];
        if (t < min) min = t;
        if (t > max) max = t;
      }
      this.ranges.set(chunk, (range = [min, max]));
    }
    return range;
  }

  column(chunk: ColumnChunk, path: string): Column | undefined {
    if (path !== 'svc.timestamp' && path !== 'svc.created_at') return chunk.columns.get(path);
    let byPath = this.virtual.get(chunk);
    if (!byPath) this.virtual.set(chunk, (byPath = new Map()));
    let column = byPath.get(path);
    if (!column) {
      const tags = uniformTags(TAG_NUM, chunk.rows);
      const num = path === 'svc.timestamp' ? chunk.ts : chunk.createdAt;
      column = { path, tags, num, str: null, dict: null, lists: null };
      byPath.set(path, column);
    }
    return column;
  }

  /** Bit t is set when some row of the column has tag t. */
  tagMask(column: Column): number {
    let mask = this.masks.get(column);
    if (mask === undefined && isUniformTags(column.tags)) {
      mask = column.tags.length === 0 ? 0 : 1 << column.tags[0];
      this.masks.set(column, mask);
    } else if (mask === undefined) {
      const seen = new Uint8Array(8);
      const tags = column.tags;
      for (let i = 0; i < tags.length; i++) seen[tags[i]] = 1;
      mask = 0;
      for (let t = 0; t < 8; t++) if (seen[t]) mask |= 1 << t;
      this.masks.set(column, mask);
    }
    return mask;
  }
}

/** The keys of every entry of a stored dictionary, hashed from its bytes. */
function hashStored(column: SegmentColumn): DictKeys {
  const size = column.dictSize;
  const keys = { hi: new Int32Array(size), lo: new Int32Array(size), done: null };
  if (column.padded !== null) paddedKeys(column.padded, keys.hi, keys.lo);
  else utf8Keys(column.utf8!, keys.hi, keys.lo);
  return keys;
}
