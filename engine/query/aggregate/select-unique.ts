/**
 * select_unique: the distinct present, non-null values per cell, sorted ascending (compare.ts).
 * Values get query-wide ids (group-by.ts ValueIds); (cell, id) pairs are deduplicated in a
 * TripleSet, so each value is materialized once however many rows hold it.
 */
import { TAG_BOOL, TAG_LIST, TAG_NUM, TAG_STR, dictLength, entryReader } from '../../storage/chunk.js';
import { compareValues } from '../eval/compare.js';
import { ValueIds, type GroupValue } from '../eval/group-by.js';
import { TripleSet } from '../eval/hash-table.js';
import { PartialStateError, type StateReader, type StateWriter } from '../eval/state-io.js';
import { AggregateTag, type Aggregator, type UpdateInput } from './types.js';

export class SelectUniqueAggregator implements Aggregator {
  readonly codecTag = AggregateTag.select_unique;
  readonly ids = new ValueIds(Number.MAX_SAFE_INTEGER);
  set = new TripleSet();
  pairs: number[] = [];
  private byCell: Map<number, GroupValue[]> | null = null;

  /** values (ValueIds), pairs: i32[] ([cell, value id] per distinct pair). */
  encode(writer: StateWriter): void {
    this.ids.encode(writer);
    writer.i32Array(Int32Array.from(this.pairs));
  }

  static decode(reader: StateReader): SelectUniqueAggregator {
    const state = new SelectUniqueAggregator();
    state.ids.decodeInto(reader);
    const pairs = reader.i32Array('select_unique pairs');
    if (pairs.length % 2 !== 0) throw new PartialStateError('select_unique pairs of odd length');
    const values = state.ids.values.length;
    for (let p = 0; p < pairs.length; p += 2) {
      if (pairs[p] < 0 || pairs[p + 1] < 0 || pairs[p + 1] >= values) {
        throw new PartialStateError(`select_unique pair ${p / 2} is out of range`);
      }
      if (!state.set.add(pairs[p], pairs[p + 1], 0)) throw new PartialStateError(`select_unique pair ${p / 2} repeats`);
      state.pairs.push(pairs[p], pairs[p + 1]);
    }
    return state;
  }

  update({ column, idx, n, cells }: UpdateInput): void {
    if (column === undefined) return;
    const { tags, num, str, lists } = column;
    // Without groups or buckets, a string row only marks its dictionary code: each distinct code
    // is looked up once per chunk, not once per row, and only those codes' strings are made.
    const seen = cells === null && str !== null ? new Uint8Array(dictLength(column)) : null;
    const entry = str === null ? null : entryReader(column, n);
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      const t = tags[i];
      let id: number;
      if (t === TAG_STR && seen !== null) {
        seen[str![i]] = 1;
        continue;
      }
      if (t === TAG_STR) id = this.ids.idOfString(entry!(str![i]));
      else if (t === TAG_NUM) id = this.ids.idOfNumber(num![i]);
      else if (t === TAG_BOOL) id = this.ids.idOfBool(num![i]);
      else if (t === TAG_LIST && lists![i] !== null) id = this.ids.idOfList(lists![i]);
      else continue;
      const cell = cells === null ? 0 : cells[k];
      if (this.set.add(cell, id, 0)) this.pairs.push(cell, id);
    }
    for (let code = 0; seen !== null && code < seen.length; code++) {
      if (seen[code] === 0) continue;
      const id = this.ids.idOfString(entry!(code));
      if (this.set.add(0, id, 0)) this.pairs.push(0, id);
    }
  }

  merge(other: Aggregator): void {
    const source = other as SelectUniqueAggregator;
    for (let p = 0; p < source.pairs.length; p += 2) {
      const value = source.ids.values[source.pairs[p + 1]];
      const id = this.idOf(value);
      if (this.set.add(source.pairs[p], id, 0)) this.pairs.push(source.pairs[p], id);
      this.byCell = null;
    }
  }

  private idOf(value: GroupValue): number {
    if (typeof value === 'string') return this.ids.idOfString(value);
    if (typeof value === 'number') return this.ids.idOfNumber(value);
    if (typeof value === 'boolean') return this.ids.idOfBool(value ? 1 : 0);
    return this.ids.idOfList(value as readonly (string | number | boolean | null)[]);
  }

  finalize(cell: number): GroupValue[] {
    if (this.byCell === null) {
      this.byCell = new Map();
      for (let p = 0; p < this.pairs.length; p += 2) {
        const list = this.byCell.get(this.pairs[p]);
        const value = this.ids.values[this.pairs[p + 1]];
        if (list) list.push(value);
        else this.byCell.set(this.pairs[p], [value]);
      }
    }
    return (this.byCell.get(cell) ?? []).slice().sort(compareValues);
  }

  check(): void {}

  remap(map: Int32Array): void {
    this.set = new TripleSet();
    for (let p = 0; p < this.pairs.length; p += 2) {
      this.pairs[p] = map[this.pairs[p]];
      this.set.add(this.pairs[p], this.pairs[p + 1], 0);
    }
    this.byCell = null;
  }
}
