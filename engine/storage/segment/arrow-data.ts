/**
 * Leaf builders of Arrow `Data` from typed arrays, for the segment writer. Each selects the rows
 * whose `route` byte equals `code` (storage/segment/encode-column.ts decides routes) and marks the
 * others invalid. Building Data directly rather than through Arrow's Builders keeps the write
 * path to a few tight loops with no per-row objects.
 */
import {
  Bool,
  Data,
  Dictionary,
  Field,
  FixedSizeBinary,
  Float64,
  Int8,
  Int16,
  Int32,
  List,
  TimestampMillisecond,
  Utf8,
  makeData,
  makeVector,
} from 'apache-arrow';
import { assert } from '../../base/assert.js';
import type { Codes } from '../chunk.js';

const TWO_POW_32 = 4294967296;

/** Validity bitmap (bit i set = row i valid) and how many rows it leaves null. */
export interface Validity {
  readonly rows: number;
  readonly bitmap: Uint8Array;
  readonly nullCount: number;
}

export function selectRows(route: Uint8Array, code: number): Validity {
  const rows = route.length;
  const bitmap = new Uint8Array((rows + 7) >>> 3);
  let valid = 0;
  for (let row = 0; row < rows; row++) {
    if (route[row] !== code) continue;
    bitmap[row >>> 3] |= 1 << (row & 7);
    valid++;
  }
  return { rows, bitmap, nullCount: rows - valid };
}

/** Arrow wants no bitmap at all when nothing is null; readers then skip validity checks. */
function nullBitmapOf(validity: Validity): Uint8Array | undefined {
  return validity.nullCount === 0 ? undefined : validity.bitmap;
}

/** Float64 of `values` on the selected rows; other rows read 0 (their value is unspecified). */
export function float64Data(values: Float64Array, validity: Validity): Data<Float64> {
  const rows = validity.rows;
  assert(values.length >= rows, 'a value per row');
  const data = new Float64Array(rows);
  const bitmap = validity.bitmap;
  for (let row = 0; row < rows; row++) {
    if ((bitmap[row >>> 3] >>> (row & 7)) & 1) data[row] = values[row];
  }
  const nullBitmap = nullBitmapOf(validity);
  const type = new Float64();
  return makeData({ type, length: rows, nullCount: validity.nullCount, nullBitmap, data });
}

/**
 * Timestamp(ms) of whole milliseconds held as float64; the int64 halves are written through an
 * Int32Array view so no BigInt is made per row.
 */
export function timestampData(
  values: Float64Array,
  validity: Validity,
): Data<TimestampMillisecond> {
  const rows = validity.rows;
  assert(values.length >= rows, 'a value per row');
  const words = new Int32Array(rows * 2);
  const bitmap = validity.bitmap;
  for (let row = 0; row < rows; row++) {
    if (!((bitmap[row >>> 3] >>> (row & 7)) & 1)) continue;
    const ms = values[row];
    assert(Number.isSafeInteger(ms), 'timestamps are whole milliseconds');
    const high = Math.floor(ms / TWO_POW_32);
    words[row * 2] = ms - high * TWO_POW_32;
    words[row * 2 + 1] = high;
  }
  const data = new BigInt64Array(words.buffer);
  const nullBitmap = nullBitmapOf(validity);
  const type = new TimestampMillisecond();
  return makeData({ type, length: rows, nullCount: validity.nullCount, nullBitmap, data });
}

/**
 * Bool on the selected rows: `values[row] !== 0` (a Column keeps bools as 0/1 in `num`), or true
 * on every selected row when `values` is null (the `:null` marker field).
 */
export function boolData(values: Float64Array | Uint8Array | null, validity: Validity): Data<Bool> {
  const data = validity.bitmap.slice();
  for (let row = 0; values !== null && row < validity.rows; row++) {
    if (values[row] === 0) data[row >>> 3] &= ~(1 << (row & 7));
  }
  return makeData({
    type: new Bool(),
    length: validity.rows,
    nullCount: validity.nullCount,
    nullBitmap: nullBitmapOf(validity),
    data,
  });
}

/** UTF-8 bytes and Arrow offsets of `strings`; a null entry is an empty slot. */
export function encodeUtf8(strings: readonly (string | null)[]): {
  bytes: Uint8Array;
  offsets: Int32Array;
} {
  const offsets = new Int32Array(strings.length + 1);
  let total = 0;
  for (let index = 0; index < strings.length; index++) {
    const value = strings[index];
    total += value === null ? 0 : Buffer.byteLength(value, 'utf8');
    offsets[index + 1] = total;
  }
  assert(total < 2 ** 31, 'Utf8 offsets are int32');
  const bytes = Buffer.allocUnsafe(total);
  for (let index = 0; index < strings.length; index++) {
    const value = strings[index];
    if (value !== null) bytes.write(value, offsets[index], 'utf8');
  }
  return { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, total), offsets };
}

export function utf8Data(bytes: Uint8Array, offsets: Int32Array, validity?: Validity): Data<Utf8> {
  return makeData({
    type: new Utf8(),
    length: offsets.length - 1,
    nullCount: validity?.nullCount ?? 0,
    nullBitmap: validity === undefined ? undefined : nullBitmapOf(validity),
    valueOffsets: offsets,
    data: bytes,
  });
}

/** Dictionaries of at least this many entries are stored sorted, and padded where that is smaller. */
const SORTED_DICTIONARY_ENTRIES_MIN = 256;
/** A sorted dictionary is ordered by its values' first this many UTF-8 bytes (ties keep their order). */
export const SORT_PREFIX_BYTES = 16;
/** A padded dictionary's width at most: wider values stay Utf8 (a few long ones would pad all). */
const PADDED_WIDTH_MAX = 64;
/** Padded bytes at most this many times Utf8's values plus offsets (zeros compress to little). */
const PADDED_GROWTH_MAX = 1.5;

/**
 * Dictionary<Int8|Int16|Int32, Utf8> of `codes` into `dict` on the selected rows; others hold code
 * 0. The codes take the narrowest signed width the dictionary's size allows (a 5-value property
 * costs a byte a row before compression, not four). A dictionary of SORTED_DICTIONARY_ENTRIES_MIN
 * entries or more is stored in the byte order of its values' first SORT_PREFIX_BYTES bytes
 * (neighbours share prefixes, which ZSTD finds), and as FixedSizeBinary values padded with zero
 * bytes when that is smaller than Utf8's bytes and int32 offsets (layout.ts: ENCODING_PADDED):
 * on ids of 7-8 characters the offsets cost more after compression than the strings.
 */
export function dictionaryData(
  codes: Codes | null,
  dict: readonly string[],
  validity: Validity,
  id: number,
): Data<Dictionary<Utf8 | FixedSizeBinary, Int8 | Int16 | Int32>> {
  const data = dict.length <= 0x80 ? new Int8Array(validity.rows)
    : dict.length <= 0x8000 ? new Int16Array(validity.rows) : new Int32Array(validity.rows);
  const indexType = data instanceof Int8Array ? new Int8() : data instanceof Int16Array ? new Int16() : new Int32();
  let { bytes, offsets } = encodeUtf8(dict);
  let remap: Int32Array | null = null;
  if (dict.length >= SORTED_DICTIONARY_ENTRIES_MIN) {
    const order = prefixOrder(bytes, offsets);
    remap = new Int32Array(order.length);
    for (let index = 0; index < order.length; index++) remap[order[index]] = index;
    ({ bytes, offsets } = gatherUtf8(bytes, offsets, order));
  }
  const bitmap = validity.bitmap;
  for (let row = 0; codes !== null && row < validity.rows; row++) {
    if ((bitmap[row >>> 3] >>> (row & 7)) & 1) data[row] = remap === null ? codes[row] : remap[codes[row]];
  }
  const values = (remap === null ? null : paddedData(bytes, offsets)) ?? utf8Data(bytes, offsets);
  return makeData({
    type: new Dictionary(values.type, indexType, id),
    length: validity.rows,
    nullCount: validity.nullCount,
    nullBitmap: nullBitmapOf(validity),
    data,
    dictionary: makeVector(values as Data<Utf8 | FixedSizeBinary>),
  });
}

/**
 * The indices of the UTF-8 values `bytes`/`offsets` in the byte order of their first
 * SORT_PREFIX_BYTES bytes (a value ending earlier goes first), ties in their given order: a
 * least-significant-byte radix sort, a counting pass per byte position. It replaced an
 * Array.sort with a string comparator, which took ~50 ms for a 110,000-entry dictionary of ids
 * and, on the segment worker at every flush and compaction, held flushes back long enough that
 * the write buffers grew (peak RSS at 10M events 1,057 -> 1,487 MB).
 */
export function prefixOrder(bytes: Uint8Array, offsets: Int32Array): Int32Array {
  const count = offsets.length - 1;
  let width = 0;
  for (let index = 0; index < count; index++) width = Math.max(width, offsets[index + 1] - offsets[index]);
  width = Math.min(width, SORT_PREFIX_BYTES);
  let order = new Int32Array(count);
  for (let index = 0; index < count; index++) order[index] = index;
  let next = new Int32Array(count);
  // Bucket 0: the value has ended before this position; bucket b + 1: byte b.
  const starts = new Int32Array(258);
  for (let position = width - 1; position >= 0; position--) {
    starts.fill(0);
    for (let index = 0; index < count; index++) {
      const entry = order[index];
      const at = offsets[entry] + position;
      starts[(at < offsets[entry + 1] ? bytes[at] + 1 : 0) + 1]++;
    }
    let single = false;
    for (let bucket = 1; bucket < 258 && !single; bucket++) single = starts[bucket] === count;
    if (single) continue; // every value has the same byte here: the order stands
    for (let bucket = 1; bucket < 258; bucket++) starts[bucket] += starts[bucket - 1];
    for (let index = 0; index < count; index++) {
      const entry = order[index];
      const at = offsets[entry] + position;
      next[starts[at < offsets[entry + 1] ? bytes[at] + 1 : 0]++] = entry;
    }
    [order, next] = [next, order];
  }
  return order;
}

/** The UTF-8 values `bytes`/`offsets` in `order`. */
function gatherUtf8(bytes: Uint8Array, offsets: Int32Array, order: Int32Array): { bytes: Uint8Array; offsets: Int32Array } {
  const gathered = new Uint8Array(bytes.length);
  const gatheredOffsets = new Int32Array(offsets.length);
  let at = 0;
  for (let index = 0; index < order.length; index++) {
    const entry = order[index];
    for (let from = offsets[entry]; from < offsets[entry + 1]; from++) gathered[at++] = bytes[from];
    gatheredOffsets[index + 1] = at;
  }
  return { bytes: gathered, offsets: gatheredOffsets };
}

/**
 * The Utf8 values `bytes`/`offsets` as FixedSizeBinary of the longest one's width, each padded
 * with zero bytes; null when a value holds a zero byte (its padding would be ambiguous) or when
 * padding would not pay.
 */
function paddedData(bytes: Uint8Array, offsets: Int32Array): Data<FixedSizeBinary> | null {
  const count = offsets.length - 1;
  let width = 0;
  for (let index = 0; index < count; index++) width = Math.max(width, offsets[index + 1] - offsets[index]);
  if (width === 0 || width > PADDED_WIDTH_MAX) return null;
  if (width * count > PADDED_GROWTH_MAX * (bytes.length + 4 * count)) return null;
  if (bytes.indexOf(0) >= 0) return null;
  const padded = new Uint8Array(width * count);
  // Byte by byte: values are short, and a subarray per value would cost more than its copy.
  for (let index = 0; index < count; index++) {
    let to = index * width;
    for (let from = offsets[index]; from < offsets[index + 1]; from++) padded[to++] = bytes[from];
  }
  return makeData({ type: new FixedSizeBinary(width), length: count, nullCount: 0, data: padded });
}

/**
 * Utf8 bytes and offsets of padded values (FixedSizeBinary of `width`, each value's zero bytes at
 * its end dropped): how readers take a dictionary dictionaryData padded.
 */
export function unpadded(padded: Uint8Array, width: number, count: number): { bytes: Uint8Array; offsets: Int32Array } {
  const offsets = new Int32Array(count + 1);
  const bytes = new Uint8Array(width * count);
  let at = 0;
  for (let index = 0; index < count; index++) {
    const start = index * width;
    let end = start + width;
    while (end > start && padded[end - 1] === 0) end--;
    for (let from = start; from < end; from++) bytes[at++] = padded[from];
    offsets[index + 1] = at;
  }
  return { bytes: at === bytes.length ? bytes : bytes.slice(0, at), offsets };
}

/** List<child> from per-row offsets into an already built child. */
export function listData(child: Data, offsets: Int32Array, validity: Validity): Data<List> {
  return makeData({
    type: new List(new Field('item', child.type, true)),
    length: offsets.length - 1,
    nullCount: validity.nullCount,
    nullBitmap: nullBitmapOf(validity),
    valueOffsets: offsets,
    child,
  });
}

/**
 * How a column of numbers is stored: as Float64, or, when every selected value is an integer
 * multiple of 10^-scale whose scaled value fits a narrow integer, as that integer (Int8, Int16 or
 * Int32) with the scale in the field's metadata (layout.ts META_SCALE). Prices with two decimals
 * and small counts then cost 1-4 bytes a row before compression instead of 8, and read back exact.
 */
export function scaledIntegerData(values: Float64Array, validity: Validity): { data: Data; scale: number } | null {
  const rows = validity.rows;
  const bitmap = validity.bitmap;
  for (let scale = 0; scale <= 4; scale++) {
    const factor = 10 ** scale;
    let min = 0, max = 0, fits = true;
    for (let row = 0; row < rows && fits; row++) {
      if (!((bitmap[row >>> 3] >>> (row & 7)) & 1)) continue;
      const value = values[row];
      const scaled = Math.round(value * factor);
      if (scaled / factor !== value || Object.is(value, -0) || scaled > 0x7fffffff || scaled < -0x80000000) fits = false;
      else if (scaled < min) min = scaled;
      else if (scaled > max) max = scaled;
    }
    if (!fits) continue;
    const data = min >= -0x80 && max < 0x80 ? new Int8Array(rows)
      : min >= -0x8000 && max < 0x8000 ? new Int16Array(rows) : new Int32Array(rows);
    for (let row = 0; row < rows; row++) {
      if ((bitmap[row >>> 3] >>> (row & 7)) & 1) data[row] = Math.round(values[row] * factor);
    }
    const type = data instanceof Int8Array ? new Int8() : data instanceof Int16Array ? new Int16() : new Int32();
    const nullBitmap = nullBitmapOf(validity);
    return { data: makeData({ type, length: rows, nullCount: validity.nullCount, nullBitmap, data }), scale };
  }
  return null;
}

/**
 * Whole numbers (timestamps, log offsets) of every row as Int32 differences from the previous
 * row (the first from `base`), or null when a difference does not fit. Rows arrive in log order,
 * so receipt times and offsets rise by small steps and the differences compress to almost nothing.
 */
export function deltaData(values: Float64Array, rows: number): { data: Data; base: number } | null {
  const base = rows > 0 ? values[0] : 0;
  let previous = base;
  let min = 0;
  let max = 0;
  for (let row = 0; row < rows; row++) {
    const delta = values[row] - previous;
    if (!Number.isSafeInteger(values[row]) || delta > 0x7fffffff || delta < -0x80000000) return null;
    if (delta < min) min = delta;
    if (delta > max) max = delta;
    previous = values[row];
  }
  // The narrowest integer every difference fits: events in time order differ by a few ms.
  const data = min >= -0x80 && max <= 0x7f ? new Int8Array(rows)
    : min >= -0x8000 && max <= 0x7fff ? new Int16Array(rows) : new Int32Array(rows);
  previous = base;
  for (let row = 0; row < rows; row++) {
    data[row] = values[row] - previous;
    previous = values[row];
  }
  const type = data instanceof Int8Array ? new Int8() : data instanceof Int16Array ? new Int16() : new Int32();
  return { data: makeData({ type, length: rows, nullCount: 0, data } as never), base };
}
