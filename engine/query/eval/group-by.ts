/**
 * group_by: maps selected rows to dense group ids. Each property's values get query-wide ids
 * (ValueIds: strings through a per-chunk dictionary-code translation table, numbers through a
 * typed NumberMap); several properties combine pairwise into tuple ids. Missing and null share
 * the null group. Over `groupsMax` groups → TooManyGroupsError.
 */
import { ApiError } from '../../base/errors.js';
import {
  TAG_BOOL, TAG_LIST, TAG_NUM, TAG_STR, dictLength, entryReader, type Column, type ColumnChunk, type Primitive,
} from '../../storage/chunk.js';
import type { ColumnViews } from './columns.js';
import { NumberMap } from './number-map.js';
import { PartialStateError, type StateReader, type StateWriter } from './state-io.js';

export type GroupValue = Primitive | readonly Primitive[];

/** Value kinds on the wire (writeValue). */
const V_NULL = 0;
const V_FALSE = 1;
const V_TRUE = 2;
const V_NUMBER = 3;
const V_STRING = 4;
const V_LIST = 5;

/** A value as kind: u8 then, by kind, f64, string, or (count: u32, primitive*). */
function writeValue(writer: StateWriter, value: GroupValue): void {
  if (value === null) writer.u8(V_NULL);
  else if (value === false) writer.u8(V_FALSE);
  else if (value === true) writer.u8(V_TRUE);
  else if (typeof value === 'number') {
    writer.u8(V_NUMBER);
    writer.f64(value);
  } else if (typeof value === 'string') {
    writer.u8(V_STRING);
    writer.string(value);
  } else {
    writer.u8(V_LIST);
    writer.u32(value.length);
    for (const item of value) {
      if (typeof item === 'object' && item !== null) throw new Error('a list value holds a list');
      writeValue(writer, item);
    }
  }
}

function readValue(reader: StateReader, inList = false): GroupValue {
  const kind = reader.u8('a value kind');
  switch (kind) {
    case V_NULL: return null;
    case V_FALSE: return false;
    case V_TRUE: return true;
    case V_NUMBER: return reader.f64('a number value');
    case V_STRING: return reader.string('a string value');
    case V_LIST: {
      if (inList) throw new PartialStateError('a list value inside a list value');
      const length = reader.u32('a list length');
      reader.need(length, 'a list');
      const list: Primitive[] = new Array(length);
      for (let k = 0; k < length; k++) list[k] = readValue(reader, true) as Primitive;
      return list;
    }
    default: throw new PartialStateError(`unknown value kind ${kind} at offset ${reader.offset - 1}`);
  }
}

/** Ids of single values above this cannot be packed into pair keys. */
const VALUE_IDS_MAX = 1 << 26;

/** Query-wide ids of the values of one property. */
export class ValueIds {
  readonly values: GroupValue[] = [];
  private readonly strings = new Map<string, number>();
  private readonly numbers = new NumberMap();
  private readonly listKeys = new Map<string, number>();
  private readonly boolIds = [-1, -1];
  private nullId = -1;
  private readonly translations = new WeakMap<Column, Int32Array>();

  constructor(private readonly limit: number) {}

  /** count: u32, then each value (writeValue), in id order. */
  encode(writer: StateWriter): void {
    writer.u32(this.values.length);
    for (const value of this.values) writeValue(writer, value);
  }

  /** Gives the values encode wrote their ids again, into this fresh ValueIds. */
  decodeInto(reader: StateReader): void {
    const count = reader.u32('a value count');
    reader.need(count, 'values');
    for (let id = 0; id < count; id++) {
      if (this.idOfValue(readValue(reader)) !== id) throw new PartialStateError(`value ${id} repeats an earlier one`);
    }
  }

  private add(value: GroupValue): number {
    const id = this.values.length;
    if (id >= this.limit) throw tooManyGroups(this.limit);
    this.values.push(value);
    return id;
  }

  idOfString(value: string): number {
    let id = this.strings.get(value);
    if (id === undefined) this.strings.set(value, (id = this.add(value)));
    return id;
  }

  idOfNumber(value: number): number {
    const key = value + 0;
    let id = this.numbers.get(key);
    if (id === -1) this.numbers.set(key, (id = this.add(key)));
    return id;
  }

  idOfNull(): number {
    if (this.nullId === -1) this.nullId = this.add(null);
    return this.nullId;
  }

  idOfBool(value: number): number {
    if (this.boolIds[value] === -1) this.boolIds[value] = this.add(value === 1);
    return this.boolIds[value];
  }

  idOfList(list: readonly Primitive[] | null): number {
    if (list === null) return this.idOfNull();
    const key = JSON.stringify(list);
    let id = this.listKeys.get(key);
    if (id === undefined) this.listKeys.set(key, (id = this.add(list.slice())));
    return id;
  }

  /** The id of a value as tuple() returns it (null, boolean, number, string or list). */
  idOfValue(value: GroupValue): number {
    if (value === null) return this.idOfNull();
    if (typeof value === 'string') return this.idOfString(value);
    if (typeof value === 'number') return this.idOfNumber(value);
    if (typeof value === 'boolean') return this.idOfBool(value ? 1 : 0);
    return this.idOfList(value as readonly Primitive[]);
  }

  /** Writes the value id of row idx[k] into out[k]. */
  mapRows(
    column: Column | undefined, idx: Int32Array, n: number, out: Int32Array, stringsOnly = false,
  ): void {
    if (column === undefined) {
      out.fill(this.idOfNull(), 0, n);
      return;
    }
    const { tags, num, str } = column;
    const table = str === null ? null : this.translation(column);
    const entry = str === null ? null : entryReader(column, n);
    if (table !== null && stringsOnly) {
      for (let k = 0; k < n; k++) {
        const code = str![idx[k]];
        let id = table[code];
        if (id === -1) id = table[code] = this.idOfString(entry!(code));
        out[k] = id;
      }
      return;
    }
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      const t = tags[i];
      if (t === TAG_STR) {
        const code = str![i];
        let id = table![code];
        if (id === -1) id = table![code] = this.idOfString(entry!(code));
        out[k] = id;
      } else if (t === TAG_NUM) out[k] = this.idOfNumber(num![i]);
      else if (t === TAG_BOOL) out[k] = this.idOfBool(num![i]);
      else if (t === TAG_LIST) out[k] = this.idOfList(column.lists![i]);
      else out[k] = this.idOfNull();
    }
  }

  /** The id of the string at `code` of the column's dictionary, read by `entry` (entryReader). */
  idOfCode(column: Column, code: number, entry: (code: number) => string): number {
    const table = this.translation(column);
    let id = table[code];
    if (id === -1) id = table[code] = this.idOfString(entry(code));
    return id;
  }

  private translation(column: Column): Int32Array {
    let table = this.translations.get(column);
    if (!table) this.translations.set(column, (table = new Int32Array(dictLength(column)).fill(-1)));
    return table;
  }
}

/** Group ids over one or several properties; group g's values are tuple(g). */
export class GroupTable {
  readonly props: ValueIds[];
  private readonly pairs: NumberMap[] = [];
  /** Per level ≥ 1: for each combined id, [previous combined id, value id]. */
  private readonly parents: number[][] = [];
  private scratch = new Int32Array(0);

  constructor(readonly paths: readonly string[], private readonly limit: number) {
    this.props = paths.map(() => new ValueIds(VALUE_IDS_MAX));
    for (let p = 1; p < paths.length; p++) {
      this.pairs.push(new NumberMap());
      this.parents.push([]);
    }
  }

  get size(): number {
    return this.paths.length === 1 ? this.props[0].values.length
      : this.parents[this.parents.length - 1].length / 2;
  }

  /** Writes the group id of row idx[k] into out[k]. */
  mapRows(chunk: ColumnChunk, views: ColumnViews, idx: Int32Array, n: number, out: Int32Array): void {
    const first = views.column(chunk, this.paths[0]);
    const stringsOnly = first !== undefined && views.tagMask(first) === 1 << TAG_STR;
    this.props[0].mapRows(first, idx, n, out, stringsOnly);
    if (this.paths.length === 1) {
      if (this.props[0].values.length > this.limit) throw tooManyGroups(this.limit);
      return;
    }
    if (this.scratch.length < n) this.scratch = new Int32Array(Math.max(n, 1024));
    const ids = this.scratch;
    for (let p = 1; p < this.paths.length; p++) {
      this.props[p].mapRows(views.column(chunk, this.paths[p]), idx, n, ids);
      const pairs = this.pairs[p - 1];
      const parents = this.parents[p - 1];
      for (let k = 0; k < n; k++) {
        const key = out[k] * VALUE_IDS_MAX + ids[k];
        let id = pairs.get(key);
        if (id === -1) {
          id = parents.length / 2;
          if (id >= this.limit) throw tooManyGroups(this.limit);
          pairs.set(key, id);
          parents.push(out[k], ids[k]);
        }
        out[k] = id;
      }
    }
  }

  /** With one group_by property: the group of the string at `code` of the column's dictionary. */
  idOfCode(column: Column, code: number, entry: (code: number) => string): number {
    const id = this.props[0].idOfCode(column, code, entry);
    if (this.props[0].values.length > this.limit) throw tooManyGroups(this.limit);
    return id;
  }

  /** The group id of a tuple of property values (as tuple() returns them), added if new. */
  idOfTuple(values: readonly GroupValue[]): number {
    let id = this.props[0].idOfValue(values[0]);
    if (this.paths.length === 1) {
      if (this.props[0].values.length > this.limit) throw tooManyGroups(this.limit);
      return id;
    }
    for (let p = 1; p < this.paths.length; p++) {
      const value = this.props[p].idOfValue(values[p]);
      const pairs = this.pairs[p - 1];
      const parents = this.parents[p - 1];
      const key = id * VALUE_IDS_MAX + value;
      let next = pairs.get(key);
      if (next === -1) {
        next = parents.length / 2;
        if (next >= this.limit) throw tooManyGroups(this.limit);
        pairs.set(key, next);
        parents.push(id, value);
      }
      id = next;
    }
    return id;
  }

  /**
   * paths: (count: u32, string*), limit: f64, each property's ValueIds, then per level past the
   * first: parents: i32[2 × groups of the level] ([previous level's id, value id] per group).
   */
  encode(writer: StateWriter): void {
    writer.u32(this.paths.length);
    for (const path of this.paths) writer.string(path);
    writer.f64(this.limit);
    for (const ids of this.props) ids.encode(writer);
    for (const parents of this.parents) writer.i32Array(Int32Array.from(parents));
  }

  static decode(reader: StateReader): GroupTable {
    const count = reader.u32('group_by property count');
    if (count === 0) throw new PartialStateError('a group table without properties');
    reader.need(count * 4, 'group_by properties');
    const paths: string[] = [];
    for (let p = 0; p < count; p++) paths.push(reader.string('a group_by property'));
    const table = new GroupTable(paths, reader.f64('group limit'));
    for (const ids of table.props) ids.decodeInto(reader);
    let previous = table.props[0].values.length;
    for (let p = 1; p < count; p++) {
      const parents = reader.i32Array('group parents');
      const values = table.props[p].values.length;
      const pairs = table.pairs[p - 1];
      const list = table.parents[p - 1];
      if (parents.length % 2 !== 0) throw new PartialStateError('group parents of odd length');
      for (let at = 0; at < parents.length; at += 2) {
        const parent = parents[at];
        const value = parents[at + 1];
        if (parent < 0 || parent >= previous || value < 0 || value >= values) {
          throw new PartialStateError(`group ${at / 2} of level ${p} points past its level's ids`);
        }
        const key = parent * VALUE_IDS_MAX + value;
        if (pairs.get(key) !== -1) throw new PartialStateError(`group ${at / 2} of level ${p} repeats an earlier one`);
        pairs.set(key, at / 2);
        list.push(parent, value);
      }
      previous = parents.length / 2;
    }
    return table;
  }

  /** The property values of group `group`, in group_by order. */
  tuple(group: number): GroupValue[] {
    const values: GroupValue[] = new Array(this.paths.length);
    let id = group;
    for (let p = this.paths.length - 1; p >= 1; p--) {
      const parents = this.parents[p - 1];
      values[p] = this.props[p].values[parents[2 * id + 1]];
      id = parents[2 * id];
    }
    values[0] = this.props[0].values[id];
    return values;
  }
}

function tooManyGroups(limit: number): ApiError {
  return new ApiError('TooManyGroupsError',
    `the query has more than ${limit} groups; group by fewer or lower-cardinality properties, ` +
    'or add filters');
}
