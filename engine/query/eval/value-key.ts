/**
 * 64-bit keys of stored values for exact distinct counting: a number's float64 bits (-0 as 0),
 * a string's two independent 32-bit hashes (sketch/hash.ts; hi doubles as its HyperLogLog
 * hash), fixed NaN patterns for booleans, and hashes of a list's JSON. Kinds never collide in
 * practice (the chance is 2^-64 per pair).
 */
import { hashAsciiPair, hashString } from '../../sketch/hash.js';
import type { Utf8Column } from '../../storage/chunk.js';
import type { PaddedUtf8 } from '../../storage/segment/decode-column.js';

export interface KeyPair {
  hi: number;
  lo: number;
}

/** Seeds of the string hashes; SEED_HI is the HyperLogLog seed of strings. */
const SEED_HI = 0;
const SEED_LO = 0x5bd1e995;
const SEED_LIST = 0x1b873593;
/** A quiet-NaN pattern no arithmetic produces, marking booleans. */
const BOOL_HI = 0x7ff8dead;

/** hashAsciiPair's output (scratch: no value survives between calls). */
const pairScratch = new Int32Array(2);
const bits = new Float64Array(1);
const halves = new Int32Array(bits.buffer);

export const valueKeys = {
  number(value: number, out: KeyPair): void {
    bits[0] = value + 0;
    out.hi = halves[1];
    out.lo = halves[0];
  },
  string(value: string, out: KeyPair): void {
    out.hi = hashString(value, SEED_HI) | 0;
    out.lo = hashString(value, SEED_LO) | 0;
  },
  bool(value: number, out: KeyPair): void {
    out.hi = BOOL_HI;
    out.lo = value;
  },
  list(value: readonly unknown[], out: KeyPair): void {
    const json = JSON.stringify(value);
    out.hi = hashString(json, SEED_LIST) | 0;
    out.lo = hashString(json, SEED_LO ^ SEED_LIST) | 0;
  },
};

/** The 32-bit HyperLogLog hash of a key: a murmur finalizer over both halves. */
export function sketchHash(hi: number, lo: number): number {
  let h = hi ^ Math.imul(lo, 0x9e3779b1);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * valueKeys.string of every string of a stored dictionary, into hi/lo by code, straight from its
 * UTF-8: ASCII entries are hashed as they lie, others are decoded one by one.
 */
export function utf8Keys(utf8: Utf8Column, hi: Int32Array, lo: Int32Array): void {
  const { bytes, offsets } = utf8;
  const count = offsets.length - 1;
  for (let code = 0; code < count; code++) keyOfBytes(bytes, offsets[code], offsets[code + 1], code, hi, lo);
}

/**
 * utf8Keys of a padded dictionary (storage/segment/decode-column.ts PaddedUtf8), read in place:
 * each entry ends at its last non-zero byte, as unpadding it would.
 */
export function paddedKeys(padded: PaddedUtf8, hi: Int32Array, lo: Int32Array): void {
  const { bytes, width, count } = padded;
  for (let code = 0; code < count; code++) {
    const start = code * width;
    let end = start + width;
    while (end > start && bytes[end - 1] === 0) end--;
    keyOfBytes(bytes, start, end, code, hi, lo);
  }
}

/** valueKeys.string of the UTF-8 string bytes[start..end), into hi/lo at `code`. */
function keyOfBytes(bytes: Uint8Array, start: number, end: number, code: number, hi: Int32Array, lo: Int32Array): void {
  if (hashAsciiPair(bytes, start, end, SEED_HI, SEED_LO, pairScratch)) {
    hi[code] = pairScratch[0];
    lo[code] = pairScratch[1];
  } else {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('utf8');
    hi[code] = hashString(text, SEED_HI) | 0;
    lo[code] = hashString(text, SEED_LO) | 0;
  }
}
