/**
 * One property path of a chunk → its Arrow fields (layout.ts): route every row to the one field
 * that can hold it, then build each field's Data. Routing is a byte per row, so each field is
 * built in one tight pass over the typed arrays. Lists are the exception: a list row is a JS array.
 */
import { Bool, Data, DataType, Field, FixedSizeList, Null, makeData, type Dictionary } from 'apache-arrow';
import { assert } from '../../base/assert.js';
import {
  numbersOf,
  TAG_BOOL,
  TAG_LIST,
  TAG_MISSING,
  TAG_NULL,
  TAG_NUM,
  TAG_STR,
  type Column,
  type Primitive,
  type SchemaType,
} from '../chunk.js';
import {
  boolData,
  dictionaryData,
  float64Data,
  listData,
  scaledIntegerData,
  selectRows,
  timestampData,
  utf8Data,
  encodeUtf8,
  type Validity,
} from './arrow-data.js';
import { presetCompression, zstdCompress } from './arrow.js';
import { PACKED_BITS_MAX, bitsFor, packCodes, packedBytes } from './bitpack.js';
import { blockDictionary } from './dict-blocks.js';
import {
  CODES_BITPACKED,
  ENCODING_PADDED,
  META_BITS,
  META_BLOCKS,
  META_CODES,
  META_ENCODING,
  META_PATH,
  META_ROLE,
  META_SCALE,
  META_TYPE,
  extraName,
  mainKindOf,
  type ListKind,
  type MainKind,
  type Role,
} from './layout.js';

/** Route codes: which field of the path holds a row. 0 = none (the path is missing there). */
const ROUTE_CODES: readonly Role[] = [
  'main', 'num', 'str', 'bool', 'list_num', 'list_str', 'list_bool', 'null',
];
const LIST_KINDS: readonly ListKind[] = ['none', 'num', 'str', 'bool'];

/** The scale of number Data stored as scaled integers (arrow-data.ts scaledIntegerData). */
const scales = new WeakMap<Data, number>();

export interface EncodedField {
  readonly field: Field;
  readonly data: Data;
}

/** Arrow fields of one path, main first; `nextDictionaryId` hands out file-unique ids. */
export function encodeColumn(
  column: Column,
  type: SchemaType,
  nextDictionaryId: () => number,
): EncodedField[] {
  assertMembers(column);
  const mainKind = mainKindOf(type);
  const listKinds = column.lists === null ? null : classifyLists(column);
  const mainElement = type === 'geo' ? 'num' : dominantListKind(column.tags, listKinds);
  const route = routeRows(column, mainKind, mainElement, listKinds);
  const fields: EncodedField[] = [];
  const main = encodeMain(column, type, mainKind, mainElement, route, nextDictionaryId);
  fields.push(...(mainKind === 'str' ? packedOrNot(main, column.path) : [main]));
  const routed = new Uint32Array(ROUTE_CODES.length + 1);
  for (let row = 0; row < route.length; row++) routed[route[row]]++;
  for (let code = 2; code <= ROUTE_CODES.length; code++) {
    if (routed[code] === 0) continue;
    const validity = selectRows(route, code);
    const role = ROUTE_CODES[code - 1];
    const data = encodeRole(column, role, validity, nextDictionaryId);
    fields.push({ field: fieldOf(extraName(column.path, role), column.path, role, data), data });
  }
  return fields;
}

/** Each member a row's tag reads must exist (chunk.ts); a missing one would lose data silently. */
function assertMembers(column: Column): void {
  const counts = new Uint32Array(256);
  for (let row = 0; row < column.tags.length; row++) counts[column.tags[row]]++;
  assert(counts.subarray(TAG_LIST + 1).every((count) => count === 0), 'tags are known');
  assert(column.num !== null || counts[TAG_NUM] + counts[TAG_BOOL] === 0, 'num rows have num');
  assert(column.str !== null || counts[TAG_STR] === 0, 'string rows have str');
  assert(column.dict !== null || counts[TAG_STR] === 0, 'string rows have dict');
  assert(column.lists !== null || counts[TAG_LIST] === 0, 'list rows have lists');
}

/** Per list row: index into LIST_KINDS of its elements' kind (ingest rejects mixed lists). */
function classifyLists(column: Column): Uint8Array {
  const kinds = new Uint8Array(column.tags.length);
  const lists = column.lists!;
  for (let row = 0; row < kinds.length; row++) {
    if (column.tags[row] !== TAG_LIST) continue;
    const list = lists[row];
    assert(list !== null, 'a TAG_LIST row has a list');
    let kind = 0;
    for (let index = 0; index < list.length; index++) {
      const element = list[index];
      if (element === null) continue;
      const elementKind = typeof element === 'number' ? 1 : typeof element === 'string' ? 2 : 3;
      assert(kind === 0 || kind === elementKind, 'list elements share one type');
      kind = elementKind;
    }
    kinds[row] = kind;
  }
  return kinds;
}

/** The element kind most list rows have; it becomes the main field's (or home extra's) kind. */
function dominantListKind(tags: Uint8Array, listKinds: Uint8Array | null): ListKind {
  if (listKinds === null) return 'num';
  const counts = [0, 0, 0, 0];
  for (let row = 0; row < tags.length; row++) if (tags[row] === TAG_LIST) counts[listKinds[row]]++;
  let best = 1;
  for (let kind = 2; kind <= 3; kind++) if (counts[kind] > counts[best]) best = kind;
  return LIST_KINDS[best];
}

function routeRows(
  column: Column,
  mainKind: MainKind,
  mainElement: ListKind,
  listKinds: Uint8Array | null,
): Uint8Array {
  const { tags, num } = column;
  const route = new Uint8Array(tags.length);
  const mainListCode = mainKind === 'list' ? 1 : 4 + LIST_KINDS.indexOf(mainElement);
  for (let row = 0; row < tags.length; row++) {
    const tag = tags[row];
    if (tag === TAG_MISSING) continue;
    if (tag === TAG_NUM) {
      // A Timestamp holds whole ms only; other numbers of a datetime path go to `:num`.
      const fitsMain = mainKind === 'num' || (mainKind === 'datetime' && isWholeMs(num![row]));
      route[row] = fitsMain ? 1 : 2;
    } else if (tag === TAG_STR) route[row] = mainKind === 'str' ? 1 : 3;
    else if (tag === TAG_BOOL) route[row] = mainKind === 'bool' ? 1 : 4;
    else if (tag === TAG_NULL) route[row] = 8;
    else {
      const kind = listKinds![row];
      const home = kind === 0 || LIST_KINDS[kind] === mainElement;
      route[row] = home ? mainListCode : 4 + kind;
    }
  }
  return route;
}

function isWholeMs(value: number): boolean {
  return Number.isSafeInteger(value) && !Object.is(value, -0);
}

function encodeMain(
  column: Column,
  type: SchemaType,
  mainKind: MainKind,
  mainElement: ListKind,
  route: Uint8Array,
  nextDictionaryId: () => number,
): EncodedField {
  const validity = selectRows(route, 1);
  let data: Data;
  if (mainKind === 'null') data = makeData({ type: new Null(), length: route.length });
  else if (mainKind === 'datetime') {
    data = timestampData(column.num === null ? zeros(route.length) : numbersOf(column), validity);
  }
  else if (mainKind === 'list') data = listOf(column, mainElement, validity);
  else data = encodeRole(column, mainKind, validity, nextDictionaryId);
  const field = fieldOf(column.path, column.path, 'main', data);
  field.metadata.set(META_TYPE, type);
  return { field, data };
}

/**
 * A main string field as stored: as it is when ZSTD makes its codes smaller than bit-packing
 * would (that frame is then kept for the writer), else the field with no valid row and its codes,
 * bit-packed and stored raw, in a `:codes` field after it (layout.ts).
 */
function packedOrNot(main: EncodedField, path: string): EncodedField[] {
  const data = main.data as Data<Dictionary>;
  const entries = data.dictionary?.length ?? 0;
  const rows = data.length;
  if (entries === 0 || rows === 0 || data.nullCount === rows) return [main];
  const bits = bitsFor(entries);
  if (bits > PACKED_BITS_MAX) return [main];
  const codes = data.values as Int8Array | Int16Array | Int32Array;
  const bytes = new Uint8Array(codes.buffer, codes.byteOffset, rows * codes.BYTES_PER_ELEMENT);
  const frame = zstdCompress(bytes);
  if (frame.byteLength < packedBytes(rows, bits)) {
    presetCompression(bytes, frame);
    return [main];
  }
  const packed = packCodes(codes, bits);
  presetCompression(packed, null);
  const bitsData = makeData({ type: new Bool(), length: rows * bits, nullCount: 0, data: packed });
  const listType = new FixedSizeList(bits, new Field('bits', new Bool(), false));
  const codesData = makeData({
    type: listType, length: rows, nullCount: data.nullCount, nullBitmap: data.nullBitmap, child: bitsData,
  });
  const empty = makeData({
    type: data.type, length: rows, nullCount: rows, nullBitmap: new Uint8Array(Math.ceil(rows / 8)),
    data: new (codes.constructor as Int8ArrayConstructor)(rows), dictionary: data.dictionary,
  });
  const field = new Field(main.field.name, main.field.type, true, new Map([...main.field.metadata, [META_CODES, CODES_BITPACKED]]));
  const codesField = new Field(extraName(path, 'codes'), listType, true, new Map([[META_ROLE, 'codes'], [META_BITS, String(bits)]]));
  return [{ field, data: empty }, { field: codesField, data: codesData }];
}

function encodeRole(
  column: Column,
  role: Role,
  validity: Validity,
  nextDictionaryId: () => number,
): Data {
  switch (role) {
    case 'num': {
      const values = column.num === null ? zeros(validity.rows) : numbersOf(column);
      const scaled = scaledIntegerData(values, validity);
      if (scaled === null) return float64Data(values, validity);
      scales.set(scaled.data, scaled.scale);
      return scaled.data;
    }
    case 'bool':
      return boolData(column.num ?? zeros(validity.rows), validity);
    case 'null':
      return boolData(null, validity);
    case 'str':
      return dictionaryData(column.str, column.dict ?? [], validity, nextDictionaryId());
    case 'list_num':
      return listOf(column, 'num', validity);
    case 'list_str':
      return listOf(column, 'str', validity);
    case 'list_bool':
      return listOf(column, 'bool', validity);
  }
  assert(false, `role ${role} is not a value role`);
}

/** An all-zero stand-in for a member the chunk left null (no row reads it: all are invalid). */
function zeros(rows: number): Float64Array {
  return new Float64Array(rows);
}

function fieldOf(name: string, path: string, role: Role, data: Data): Field {
  const metadata = new Map([
    [META_PATH, path],
    [META_ROLE, role],
  ]);
  const scale = scales.get(data);
  if (scale !== undefined) metadata.set(META_SCALE, String(scale));
  if (DataType.isDictionary(data.type) && DataType.isFixedSizeBinary(data.type.dictionary)) {
    metadata.set(META_ENCODING, ENCODING_PADDED);
    const values = (data as Data<Dictionary>).dictionary?.data[0];
    const width = data.type.dictionary.byteWidth;
    const blocks = values === undefined ? null : blockDictionary(values.values as Uint8Array, width, values.length);
    if (blocks !== null) metadata.set(META_BLOCKS, blocks);
  }
  return new Field(name, data.type, true, metadata);
}

/**
 * List<element kind> of the selected rows' lists; null elements become invalid child slots. Rows
 * mostly share list objects (an add-on's result, a batch's repeated `tags`), so each distinct list
 * object's elements are made into child values once (its UTF-8 for strings) and copied per row.
 */
function listOf(column: Column, kind: ListKind, validity: Validity): Data {
  const rows = validity.rows;
  const offsets = new Int32Array(rows + 1);
  const lists = column.lists;
  const made = new Map<readonly Primitive[], MadeList>();
  let elements = 0;
  let bytes = 0;
  for (let row = 0; row < rows; row++) {
    if (lists !== null && (validity.bitmap[row >>> 3] >>> (row & 7)) & 1) {
      const list = lists[row]!;
      let one = made.get(list);
      if (one === undefined) made.set(list, one = makeList(list, kind));
      elements += list.length;
      bytes += one.utf8 === null ? 0 : one.utf8.length;
    }
    offsets[row + 1] = elements;
  }
  assert(bytes < 2 ** 31, 'Utf8 offsets are int32');
  const valid = new Uint8Array(elements);
  const numbers = kind === 'str' ? null : new Float64Array(elements);
  const utf8 = kind === 'str' ? new Uint8Array(bytes) : null;
  const ends = kind === 'str' ? new Int32Array(elements + 1) : null;
  let at = 0;
  let byte = 0;
  for (let row = 0; row < rows; row++) {
    if (offsets[row + 1] === offsets[row]) continue;
    const one = made.get(lists![row]!)!;
    valid.set(one.valid, at);
    if (numbers !== null) numbers.set(one.numbers!, at);
    else {
      utf8!.set(one.utf8!, byte);
      for (let index = 0; index < one.valid.length; index++) ends![at + index + 1] = byte + one.ends![index];
      byte += one.utf8!.length;
    }
    at += one.valid.length;
  }
  const childValidity = selectRows(valid, 1);
  let child: Data;
  if (kind === 'str') child = utf8Data(utf8!, ends!, childValidity);
  else child = kind === 'bool' ? boolData(numbers!, childValidity) : float64Data(numbers!, childValidity);
  return listData(child, offsets, validity);
}

/** One list's elements as child values: validity (1: present), numbers, or UTF-8 with ends. */
interface MadeList {
  readonly valid: Uint8Array;
  readonly numbers: Float64Array | null;
  readonly utf8: Uint8Array | null;
  /** Per element: where its UTF-8 ends in `utf8`. */
  readonly ends: Int32Array | null;
}

function makeList(list: readonly Primitive[], kind: ListKind): MadeList {
  const valid = new Uint8Array(list.length);
  for (let index = 0; index < list.length; index++) valid[index] = list[index] === null ? 0 : 1;
  if (kind !== 'str') {
    const numbers = new Float64Array(list.length);
    for (let index = 0; index < list.length; index++) numbers[index] = Number(list[index]);
    return { valid, numbers, utf8: null, ends: null };
  }
  const { bytes, offsets } = encodeUtf8(list as readonly (string | null)[]);
  return { valid, numbers: null, utf8: bytes, ends: offsets.subarray(1) };
}
