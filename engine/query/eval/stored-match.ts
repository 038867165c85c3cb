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

/**
 * Per dictionary code, 1 where the entry is one of `strings`; null when the column's dictionary
 * is not a segment's stored one, or there are too many strings to look for one at a time, or
 * one is not well-formed UTF-16 (its UTF-8 would stand for another string: the caller then
 * compares strings).
 */
export function storedMatch(column: Column, strings: readonly string[]): Uint8Array | null {
  if (!(column instanceof SegmentColumn) || strings.length > STORED_MATCH_VALUES_MAX) return null;
  const values: Uint8Array[] = [];
  for (const value of strings) {
    const utf8 = utf8Of(value);
    if (utf8 === null) return null;
    values.push(utf8);
  }
  const out = new Uint8Array(column.dictSize);
  if (column.padded !== null) for (const value of values) matchPadded(column.padded, value, out);
  else if (column.utf8 !== null) for (const value of values) matchOffsets(column.utf8, value, out);
  else return null;
  return out;
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
