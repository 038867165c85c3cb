/**
 * eq / in, contains, starts_with (and exists) over a segment column's dictionary as stored
 * (padded or with offsets, both UTF-8): the codes whose entry equals one of the filter's strings,
 * contains it or starts with it, found by comparing bytes (UTF-8 is self-synchronizing: a
 * well-formed string's bytes occur in another's only where the string does). An id column's
 * dictionary holds about an entry a row; making its strings to look one up made and collected a
 * JS string per entry, segment after segment (100M events: a count filtered by one user_id took
 * 39-42 s, most of it in unpadding, UTF-8 decoding and the garbage collector).
 */
import { STORED_MATCH_VALUES_MAX } from '../../base/limits.js';
import type { Column, Utf8Column } from '../../storage/chunk.js';
import { SegmentColumn, type PaddedUtf8 } from '../../storage/segment/decode-column.js';
import { paddedKeys, utf8Keys, valueKeys } from './value-key.js';

/**
 * Per dictionary code, 1 where the entry is one of `strings`: up to STORED_MATCH_VALUES_MAX
 * looked for one at a time, more through their hashes. Null when the column's dictionary is not
 * a segment's stored one, or a string is not well-formed UTF-16 (its UTF-8 would stand for
 * another string): the caller then compares strings.
 */
export function storedMatch(column: Column, strings: readonly string[]): Uint8Array | null {
  if (!(column instanceof SegmentColumn)) return null;
  const values: Uint8Array[] = [];
  for (const value of strings) {
    const utf8 = utf8Of(value);
    if (utf8 === null) return null;
    values.push(utf8);
  }
  const out = new Uint8Array(column.dictSize);
  if (column.padded === null && column.utf8 === null) return null;
  if (strings.length > STORED_MATCH_VALUES_MAX) matchByKeys(column, strings, values, out);
  else if (column.padded !== null) for (const value of values) matchPadded(column.padded, value, out);
  else for (const value of values) matchOffsets(column.utf8!, value, out);
  return out;
}

/** Keys of a stored dictionary's entries (reused from segment to segment; grown as needed). */
let keysHi = new Int32Array(0);
let keysLo = new Int32Array(0);

/**
 * Many strings: each entry is hashed as distinct counts hash it (value-key.ts, from its bytes),
 * looked up among the strings' keys, and a matching key is confirmed byte by byte.
 */
function matchByKeys(column: SegmentColumn, strings: readonly string[], values: readonly Uint8Array[], out: Uint8Array): void {
  const count = column.dictSize;
  if (keysHi.length < count) {
    keysHi = new Int32Array(count);
    keysLo = new Int32Array(count);
  }
  const hi = keysHi.subarray(0, count);
  const lo = keysLo.subarray(0, count);
  if (column.padded !== null) paddedKeys(column.padded, hi, lo);
  else utf8Keys(column.utf8!, hi, lo);
  const wanted = new Map<number, number[]>();
  const key = { hi: 0, lo: 0 };
  const los = strings.map((value, index) => {
    valueKeys.string(value, key);
    const same = wanted.get(key.hi);
    if (same === undefined) wanted.set(key.hi, [index]);
    else same.push(index);
    return key.lo;
  });
  for (let code = 0; code < count; code++) {
    const candidates = wanted.get(hi[code]);
    if (candidates === undefined) continue;
    // Confirmed on the bytes: a 64-bit key could collide.
    for (const index of candidates) if (los[index] === lo[code] && entryEquals(column, code, values[index])) out[code] = 1;
  }
}

/** Whether entry `code` of the column's stored dictionary is `value`'s UTF-8. */
function entryEquals(column: SegmentColumn, code: number, value: Uint8Array): boolean {
  let bytes: Uint8Array;
  let start: number;
  let end: number;
  if (column.padded !== null) {
    const { width } = column.padded;
    bytes = column.padded.bytes;
    start = code * width;
    end = start + width;
    while (end > start && bytes[end - 1] === 0) end--;
  } else {
    const { offsets } = column.utf8!;
    bytes = column.utf8!.bytes;
    start = offsets[code];
    end = offsets[code + 1];
  }
  if (end - start !== value.length) return false;
  for (let k = 0; k < value.length; k++) if (bytes[start + k] !== value[k]) return false;
  return true;
}

/** Marks the entries of a padded dictionary equal to `value` (each entry's UTF-8, then zero bytes). */
function matchPadded({ bytes, width, count }: PaddedUtf8, value: Uint8Array, out: Uint8Array): void {
  const length = value.length;
  // An entry holds no zero byte (arrow-data.ts paddedData): none equals a value with one, and
  // the one that starts with a zero byte is "".
  if (length > width || value.includes(0)) return;
  const first = length === 0 ? 0 : value[0];
  for (let code = 0, at = 0; code < count; code++, at += width) {
    if (bytes[at] !== first) continue;
    let k = 1;
    while (k < length && bytes[at + k] === value[k]) k++;
    if (k >= length && (length === width || bytes[at + length] === 0)) out[code] = 1;
  }
}

/** Marks the entries of a dictionary with offsets equal to `value`. */
function matchOffsets({ bytes, offsets }: Utf8Column, value: Uint8Array, out: Uint8Array): void {
  const length = value.length;
  const count = offsets.length - 1;
  for (let code = 0; code < count; code++) {
    const at = offsets[code];
    if (offsets[code + 1] - at !== length) continue;
    let k = 0;
    while (k < length && bytes[at + k] === value[k]) k++;
    if (k === length) out[code] = 1;
  }
}

/** 1 for every code of the column's dictionary (null without one), without making its strings. */
export function everyCode(column: Column | undefined): Uint8Array | null {
  if (column instanceof SegmentColumn) return column.dictSize > 0 ? new Uint8Array(column.dictSize).fill(1) : null;
  const dict = column?.dict ?? null;
  return dict === null ? null : new Uint8Array(dict.length).fill(1);
}

/**
 * Per dictionary code, 1 where the entry contains `text` (or starts with it); null as for
 * storedMatch.
 */
export function storedTextMatch(column: Column, operator: 'contains' | 'starts_with', text: string): Uint8Array | null {
  if (!(column instanceof SegmentColumn)) return null;
  const needle = utf8Of(text);
  if (needle === null) return null;
  const found = operator === 'contains' ? containsBytes : startsWithBytes;
  const out = new Uint8Array(column.dictSize);
  if (column.padded !== null) {
    const { bytes, width, count } = column.padded;
    for (let code = 0, at = 0; code < count; code++, at += width) {
      let end = at + width;
      while (end > at && bytes[end - 1] === 0) end--;
      if (found(bytes, at, end, needle)) out[code] = 1;
    }
  } else if (column.utf8 !== null) {
    const { bytes, offsets } = column.utf8;
    for (let code = 0; code < out.length; code++) if (found(bytes, offsets[code], offsets[code + 1], needle)) out[code] = 1;
  } else return null;
  return out;
}

function startsWithBytes(bytes: Uint8Array, start: number, end: number, needle: Uint8Array): boolean {
  const length = needle.length;
  if (end - start < length) return false;
  for (let k = 0; k < length; k++) if (bytes[start + k] !== needle[k]) return false;
  return true;
}

function containsBytes(bytes: Uint8Array, start: number, end: number, needle: Uint8Array): boolean {
  const length = needle.length;
  if (length === 0) return true;
  const first = needle[0];
  for (let at = start; at <= end - length; at++) {
    if (bytes[at] !== first) continue;
    let k = 1;
    while (k < length && bytes[at + k] === needle[k]) k++;
    if (k === length) return true;
  }
  return false;
}

/** The UTF-8 of a well-formed string; null for one with a lone surrogate (its UTF-8 is U+FFFD's). */
function utf8Of(value: string): Uint8Array | null {
  const utf8 = Buffer.from(value, 'utf8');
  return utf8.toString('utf8') === value ? new Uint8Array(utf8.buffer, utf8.byteOffset, utf8.byteLength) : null;
}
