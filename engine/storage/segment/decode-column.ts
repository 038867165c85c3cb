/**
 * Arrow fields of one property path → the chunk's Column (layout.ts is the format). Each field
 * fills the rows its validity bitmap marks: tags in a tight loop, numbers and dictionary codes by
 * bulk copy or a view, so only lists and dictionary strings allocate (they are JS values).
 */
import type { FieldData as Data } from './ipc-read.js';
import { assert } from '../../base/assert.js';
import {
  TAG_BOOL,
  TAG_LIST,
  TAG_NULL,
  TAG_NUM,
  TAG_STR,
  type Codes,
  type Column,
  type Primitive,
  type ScaledNumbers,
  type SchemaType,
  type Tag,
  type Utf8Column,
  uniformTags,
} from '../chunk.js';
import { unpadded } from './arrow-data.js';
import { decodeStrings, decodeUtf8, isValid, readTimestamps } from './arrow-values.js';
import { mainKindOf, type Role } from './layout.js';

/** One stored field of a path: its role, the main field's schema type, and its data. */
export interface StoredField {
  readonly role: Role;
  readonly type: SchemaType | null;
  readonly data: Data;
  /** Numbers stored as integers × 10^scale (layout.ts), or null. */
  readonly scale: number | null;
}

/** What a SegmentColumn is made of (shared-chunk.ts copies them). */
export interface Members {
  tags: Uint8Array;
  num: Float64Array | Uint8Array | null;
  scaled: ScaledNumbers | null;
  str: Codes | null;
  utf8: Utf8Column | null;
  padded: PaddedUtf8 | null;
  lists: (readonly Primitive[] | null)[] | null;
}

/**
 * A dictionary as stored when it is sorted (arrow-data.ts dictionaryData): FixedSizeBinary, each
 * entry `width` bytes, its UTF-8 followed by zero bytes. Ids and other long dictionaries are kept
 * so; distinct counts hash them as they lie (query/eval/value-key.ts paddedKeys).
 */
export interface PaddedUtf8 {
  readonly bytes: Uint8Array;
  readonly width: number;
  readonly count: number;
}

/**
 * A column as read from a segment: its dictionary stays the stored UTF-8 until `dict` is first
 * read (then its strings are made once and kept). Distinct counts hash the stored bytes. `dict`
 * is an own enumerable accessor, so a copy made with spread (`{ ...column, tags }`, as deletes
 * and the writer do) gets the strings, not undefined.
 */
export class SegmentColumn implements Column {
  readonly tags: Uint8Array;
  /**
   * Numbers and booleans. A column that keeps its numbers as stored (`scaled`) makes these
   * Float64 values when this is first read (then keeps them, counted in decodedBytes).
   */
  declare readonly num: Float64Array | Uint8Array | null;
  readonly scaled: ScaledNumbers | null;
  readonly str: Codes | null;
  /**
   * The dictionary with offsets. A padded dictionary is unpadded when this is first read (then
   * kept), so a distinct count, which hashes `padded`, never copies it.
   */
  declare readonly utf8: Utf8Column | null;
  /** The dictionary as stored when it is padded (else null); see PaddedUtf8. */
  readonly padded: PaddedUtf8 | null;
  /** Entries in the dictionary (0 without one), known without unpadding it. */
  readonly dictSize: number;
  /** Bytes of the dictionary as stored (its unpadded copy, once made, counts in decodedBytes). */
  readonly dictBytes: number;
  readonly lists: readonly (readonly Primitive[] | null)[] | null;
  declare readonly dict: readonly string[] | null;
  /**
   * What was made from the stored column since it was read: its strings, the distinct keys of
   * its dictionary (query/eval/columns.ts). The cache counts it (chunk-bytes.ts).
   */
  decodedBytes = 0;
  /** The strings once made; stringAt reads them, or decodes one entry while there are none. */
  private strings: readonly string[] | null = null;
  private offsetUtf8: Utf8Column | null;
  private numbers: Float64Array | Uint8Array | null;

  constructor(readonly path: string, members: Members) {
    this.tags = members.tags;
    this.numbers = members.num;
    this.scaled = members.scaled;
    this.str = members.str;
    this.offsetUtf8 = members.utf8;
    this.padded = members.padded;
    this.lists = members.lists;
    const padded = members.padded;
    this.dictSize = padded !== null ? padded.count : members.utf8 !== null ? members.utf8.offsets.length - 1 : 0;
    this.dictBytes = padded !== null ? padded.bytes.byteLength
      : members.utf8 !== null ? members.utf8.bytes.byteLength + members.utf8.offsets.byteLength : 0;
    // Own enumerable accessors, so a copy made with spread (`{ ...column, tags }`) gets values.
    Object.defineProperty(this, 'num', {
      enumerable: true,
      get: (): Float64Array | Uint8Array | null => {
        if (this.numbers !== null || this.scaled === null) return this.numbers;
        this.numbers = readScaled(this.scaled, this.tags.length);
        this.decodedBytes += this.numbers.byteLength;
        return this.numbers;
      },
    });
    Object.defineProperty(this, 'utf8', {
      enumerable: true,
      get: (): Utf8Column | null => {
        if (this.offsetUtf8 !== null || padded === null) return this.offsetUtf8;
        this.offsetUtf8 = unpadded(padded.bytes, padded.width, padded.count);
        this.decodedBytes += this.offsetUtf8.bytes.byteLength + this.offsetUtf8.offsets.byteLength;
        return this.offsetUtf8;
      },
    });
    Object.defineProperty(this, 'dict', {
      enumerable: true,
      get: (): readonly string[] | null => {
        if (this.strings !== null || this.utf8 === null) return this.strings;
        const { bytes, offsets } = this.utf8;
        const count = offsets.length - 1;
        this.strings = decodeUtf8(bytes, offsets, count);
        this.decodedBytes += 32 * count + 2 * (offsets[count] - offsets[0]);
        return this.strings;
      },
    });
  }

  /** The column as read, without what was made from it since (numbers from `scaled`, strings, an unpadded dictionary). */
  stored(): Members {
    return {
      tags: this.tags, num: this.scaled === null ? this.numbers : null, scaled: this.scaled, str: this.str,
      utf8: this.padded === null ? this.offsetUtf8 : null, padded: this.padded,
      lists: this.lists as (readonly Primitive[] | null)[] | null,
    };
  }

  /** With `scaled`: whether `num` has made its Float64 values (chunk.ts storedNumbers). */
  get numMade(): boolean {
    return this.numbers !== null;
  }

  /** Bytes of the numbers as read: the stored integers, or Float64 values (those made from the integers are in decodedBytes). */
  get numBytes(): number {
    return this.scaled !== null ? this.scaled.values.byteLength : this.numbers?.byteLength ?? 0;
  }

  /** Entry `code` of the dictionary: an extraction of a few rows decodes a few strings, not all. */
  stringAt(code: number): string {
    if (this.strings !== null) return this.strings[code];
    const padded = this.padded;
    if (padded !== null && this.offsetUtf8 === null) {
      const start = code * padded.width;
      let end = start + padded.width;
      while (end > start && padded.bytes[end - 1] === 0) end--;
      return Buffer.from(padded.bytes.buffer, padded.bytes.byteOffset, padded.bytes.byteLength).toString('utf8', start, end);
    }
    const { bytes, offsets } = this.utf8!;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8', offsets[code], offsets[code + 1]);
  }
}

export function decodeColumn(path: string, fields: readonly StoredField[], rows: number): Column {
  // Float64 fields first: they are copied whole, and later fields overwrite only their rows.
  const ordered = fields.filter((field) => {
    assert(field.data.length === rows, 'a field has a slot per row');
    assert(field.data.offset === 0, 'a freshly read field is not sliced');
    return !(field.role === 'main' && field.type === 'null') && field.data.length - field.data.nullCount > 0;
  }).sort((a, b) => Number(isFloat64(b)) - Number(isFloat64(a)));
  // One field valid on every row (the usual case: a property always of one type) → shared tags.
  const whole = ordered.length === 1 && ordered[0].data.nullCount === 0;
  const tags = whole ? uniformTags(tagOf(kindOf(ordered[0])), rows) : new Uint8Array(rows);
  // Booleans with no numbers beside them (no num or datetime field) are kept as a byte a row.
  const numbers = ordered.some((field) => kindOf(field) === 'num' || kindOf(field) === 'timestamp');
  // Numbers all in one field of scaled integers are kept as stored (a byte or two a row, not 8):
  // the scan reads them so, and `num` makes Float64 values only for readers that ask for them.
  const stored = ordered.length === 1 && kindOf(ordered[0]) === 'num' && ordered[0].scale !== null;
  const members: Members = {
    tags, num: numbers && !stored ? new Float64Array(rows) : null, scaled: null, str: null, utf8: null, padded: null, lists: null,
  };
  for (const field of ordered) decodeField(members, field, rows, !whole);
  return new SegmentColumn(path, members);
}

function isFloat64(field: StoredField): boolean {
  return field.role === 'num' || (field.role === 'main' && field.type === 'num');
}

/** The tag a field's valid rows get, and how its values are read. */
function kindOf(field: StoredField): 'num' | 'timestamp' | 'str' | 'bool' | 'list' | 'null' {
  if (field.role !== 'main') {
    if (field.role.startsWith('list_')) return 'list';
    return field.role as 'num' | 'str' | 'bool' | 'null';
  }
  const main = mainKindOf(field.type!);
  assert(main !== 'null', 'a null-typed main field holds no rows');
  return main === 'datetime' ? 'timestamp' : main;
}

function tagOf(kind: ReturnType<typeof kindOf>): Tag {
  return kind === 'num' || kind === 'timestamp' ? TAG_NUM
    : kind === 'str' ? TAG_STR
    : kind === 'bool' ? TAG_BOOL
    : kind === 'list' ? TAG_LIST
    : TAG_NULL;
}

/** Reads a field's values into `members`, and marks its rows' tags when `mark` (not shared tags). */
function decodeField(members: Members, field: StoredField, rows: number, mark: boolean): void {
  const kind = kindOf(field);
  const data = field.data;
  if (mark) markTags(members.tags, data, tagOf(kind));
  if (kind === 'num' && members.num === null) {
    // No Float64 array: the column's only field is this one of scaled integers (decodeColumn).
    const values = own((data.values as Int8Array | Int16Array | Int32Array).subarray(0, rows));
    members.scaled = { values, factor: 10 ** field.scale! };
  } else if (kind === 'num') {
    const num = members.num as Float64Array; // made Float64 by decodeColumn: the column has numbers
    if (field.scale === null) num.set((data.values as Float64Array).subarray(0, rows));
    else readScaledInto(data.values as Int8Array | Int16Array | Int32Array, 10 ** field.scale, num, rows);
  } else if (kind === 'timestamp') {
    readTimestamps(data, members.num as Float64Array);
  } else if (kind === 'bool') {
    members.num ??= new Uint8Array(rows);
    readBools(data, members.num);
  } else if (kind === 'str') {
    // Kept in the stored width (Int8 for up to 128 entries, Int16 up to 32,768): a country or a
    // device costs a byte a row in the caches, not four, and reading it copies nothing.
    members.str = own((data.values as Codes).subarray(0, rows));
    const dictionary = data.dictionary!.data[0];
    if (dictionary.valueOffsets === undefined) members.padded = ownPadded(dictionary);
    else members.utf8 = ownUtf8(dictionary);
  } else if (kind === 'list') {
    members.lists ??= new Array<readonly Primitive[] | null>(rows).fill(null);
    readLists(data, members.lists);
  }
}

/**
 * A dictionary's bytes and offsets, copied when they are views into a much larger buffer (a file
 * read whole), so keeping the column does not keep the rest of that buffer.
 */
function ownUtf8(data: Data): Utf8Column {
  const count = data.length;
  const offsets = own((data.valueOffsets as Int32Array).subarray(0, count + 1));
  return { bytes: own((data.values as Uint8Array).subarray(0, offsets[count])), offsets };
}

/** A FixedSizeBinary dictionary (arrow-data.ts dictionaryData), its bytes owned as ownUtf8's are. */
function ownPadded(data: Data): PaddedUtf8 {
  // apache-arrow's Data carries the width in its type, ipc-read.ts's in byteWidth.
  const width = data.byteWidth ?? (data as { type?: { byteWidth?: number } }).type?.byteWidth;
  assert(width !== undefined && width > 0, 'a dictionary without offsets is FixedSizeBinary');
  const count = data.length;
  return { bytes: own((data.values as Uint8Array).subarray(0, width * count)), width, count };
}

/** `view` itself, or a copy of it when it is a view into a much larger buffer (a file read whole). */
function own<T extends Uint8Array | Codes>(view: T): T {
  return view.buffer.byteLength > 2 * view.byteLength + 4096 ? view.slice() as T : view;
}

/** tags[row] = tag on every valid row, a byte of the validity bitmap at a time. */
function markTags(tags: Uint8Array, data: Data, tag: Tag): void {
  const bitmap = data.nullBitmap;
  if (data.nullCount === 0 || bitmap === undefined || bitmap.length === 0) {
    tags.fill(tag);
    return;
  }
  const rows = tags.length;
  for (let byte = 0; byte < bitmap.length; byte++) {
    const bits = bitmap[byte];
    if (bits === 0) continue;
    const base = byte << 3;
    for (let bit = 0; bit < 8 && base + bit < rows; bit++) {
      if ((bits >>> bit) & 1) tags[base + bit] = tag;
    }
  }
}

/** Numbers stored as integers × factor; every slot is written, so this may run first (whole copy). */
function readScaledInto(values: Int8Array | Int16Array | Int32Array, factor: number, target: Float64Array, rows: number): void {
  if (factor === 1) for (let row = 0; row < rows; row++) target[row] = values[row];
  else for (let row = 0; row < rows; row++) target[row] = values[row] / factor;
}

/** The Float64 values of numbers kept as stored: what readScaledInto makes of them. */
function readScaled(scaled: ScaledNumbers, rows: number): Float64Array {
  const target = new Float64Array(rows);
  readScaledInto(scaled.values, scaled.factor, target, rows);
  return target;
}

/** The valid rows' booleans as 0/1, a byte of the bitmaps at a time (a flag column is read often). */
function readBools(data: Data, target: Float64Array | Uint8Array): void {
  const values = data.values as Uint8Array;
  const rows = target.length;
  const bitmap = data.nullCount === 0 || data.nullBitmap === undefined || data.nullBitmap.length === 0 ? null : data.nullBitmap;
  const whole = rows >>> 3;
  for (let byte = 0; byte < whole; byte++) {
    const bits = values[byte];
    const base = byte << 3;
    if (bitmap === null || bitmap[byte] === 0xff) {
      target[base] = bits & 1;
      target[base + 1] = (bits >>> 1) & 1;
      target[base + 2] = (bits >>> 2) & 1;
      target[base + 3] = (bits >>> 3) & 1;
      target[base + 4] = (bits >>> 4) & 1;
      target[base + 5] = (bits >>> 5) & 1;
      target[base + 6] = (bits >>> 6) & 1;
      target[base + 7] = (bits >>> 7) & 1;
    } else {
      const valid = bitmap[byte];
      for (let bit = 0; bit < 8; bit++) if ((valid >>> bit) & 1) target[base + bit] = (bits >>> bit) & 1;
    }
  }
  for (let row = whole << 3; row < rows; row++) {
    if (isValid(data, row)) target[row] = (values[row >>> 3] >>> (row & 7)) & 1;
  }
}

function readLists(data: Data, target: (readonly Primitive[] | null)[]): void {
  const offsets = data.valueOffsets as Int32Array;
  const child = data.children[0];
  const elements = readElements(child);
  for (let row = 0; row < target.length; row++) {
    if (!isValid(data, row)) continue;
    target[row] = elements.slice(offsets[row], offsets[row + 1]);
  }
}

/** Every element of a list field's child as a JS value (null where the child is invalid). */
function readElements(child: Data): Primitive[] {
  const length = child.length;
  const elements = new Array<Primitive>(length);
  const strings = child.valueOffsets === undefined ? null : decodeStrings(child);
  const values = child.values as Float64Array | Uint8Array;
  for (let index = 0; index < length; index++) {
    if (!isValid(child, index)) elements[index] = null;
    else if (strings !== null) elements[index] = strings[index];
    else if (values instanceof Float64Array) elements[index] = values[index];
    else elements[index] = ((values[index >>> 3] >>> (index & 7)) & 1) === 1;
  }
  return elements;
}
