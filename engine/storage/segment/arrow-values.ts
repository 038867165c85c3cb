/**
 * Reading values out of Arrow `Data` without Arrow's per-value accessors (which box and, for
 * 64-bit types, make a BigInt per value). Used by the segment reader only.
 */
import type { FieldData as Data } from './ipc-read.js';
import { assert } from '../../base/assert.js';

const TWO_POW_32 = 4294967296;

/** Whether slot `index` of `data` holds a value (Arrow: no bitmap means all valid). */
export function isValid(data: Data, index: number): boolean {
  const bitmap = data.nullBitmap;
  if (data.nullCount === 0 || bitmap === undefined || bitmap.length === 0) return true;
  return ((bitmap[index >>> 3] >>> (index & 7)) & 1) === 1;
}

/**
 * Writes the valid rows of a Timestamp(ms) field into `target` as float64 ms, reading each int64
 * as two int32 halves (little-endian, as Arrow files are) so no BigInt is made.
 */
export function readTimestamps(data: Data, target: Float64Array): void {
  const values = data.values as BigInt64Array;
  assert(values.length >= target.length, 'a timestamp per row');
  const words = new Int32Array(values.buffer, values.byteOffset, target.length * 2);
  const allValid = data.nullCount === 0;
  for (let row = 0; row < target.length; row++) {
    if (allValid || isValid(data, row)) {
      target[row] = words[row * 2 + 1] * TWO_POW_32 + (words[row * 2] >>> 0);
    }
  }
}

/**
 * The strings of a Utf8 Data (null slots read as ''). ASCII data, the common case for ids and
 * names, is decoded once and sliced; other data is decoded per value.
 */
export function decodeStrings(data: Data): string[] {
  return decodeUtf8(data.values as Uint8Array, data.valueOffsets as Int32Array, data.length);
}

/** The `count` strings of UTF-8 `bytes` at `offsets` (Arrow's Utf8 layout). */
export function decodeUtf8(bytes: Uint8Array, offsets: Int32Array, count: number): string[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const strings = new Array<string>(count);
  const start = offsets[0];
  const end = offsets[count];
  if (isAscii(bytes, start, end)) {
    const whole = buffer.toString('latin1', start, end);
    for (let index = 0; index < count; index++) {
      strings[index] = whole.slice(offsets[index] - start, offsets[index + 1] - start);
    }
    return strings;
  }
  for (let index = 0; index < count; index++) {
    strings[index] = buffer.toString('utf8', offsets[index], offsets[index + 1]);
  }
  return strings;
}

function isAscii(bytes: Uint8Array, start: number, end: number): boolean {
  for (let index = start; index < end; index++) if (bytes[index] >= 0x80) return false;
  return true;
}
