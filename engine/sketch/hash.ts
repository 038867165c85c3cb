/**
 * 32-bit hashes of stored values for HyperLogLog: MurmurHash3-style mixing over UTF-16 code units
 * (strings) and over the two 32-bit halves of a float64 (numbers). This module owns only hashing;
 * which value kinds get which seed is decided by the caller (storage/segment/sketches.ts).
 * Nothing here allocates per call, so hashing a column costs one pass and no garbage.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/**
 * Scratch views for reading a float64's bits. Shared rather than per-call so hashing a number
 * allocates nothing; it is scratch, not state: no value survives between calls.
 */
const float64Scratch = new Float64Array(1);
const uint32Scratch = new Uint32Array(float64Scratch.buffer);

/** MurmurHash3 body step: mixes one 32-bit block `k` into the running hash `h`. */
function mixBlock(h: number, k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, C2);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** MurmurHash3 finalizer: full avalanche, so every input bit affects the top (index) bits. */
function finalize(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Hash of a string's UTF-16 code units, two per 32-bit block; unsigned 32-bit result. */
export function hashString(value: string, seed: number): number {
  const length = value.length;
  let h = seed | 0;
  let index = 0;
  for (; index + 1 < length; index += 2) {
    h = mixBlock(h, value.charCodeAt(index) | (value.charCodeAt(index + 1) << 16));
  }
  if (index < length) {
    let k = Math.imul(value.charCodeAt(index), C1);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, C2);
  }
  return finalize(h ^ (length * 2));
}

/**
 * hashString, with seeds seed1 and seed2 at once, of the string whose UTF-16 code units are
 * bytes[start..end): into out[0] and out[1] (as int32), each block mixed once for both. Equal to
 * hashString for ASCII text (one code unit per byte), so a dictionary read from a segment is
 * hashed without making a JS string per entry. False, `out` untouched, when a byte is not ASCII.
 */
export function hashAsciiPair(bytes: Uint8Array, start: number, end: number, seed1: number, seed2: number, out: Int32Array): boolean {
  const length = end - start;
  let h1 = seed1 | 0;
  let h2 = seed2 | 0;
  let high = 0;
  let index = start;
  for (; index + 1 < end; index += 2) {
    const a = bytes[index];
    const b = bytes[index + 1];
    high |= a | b;
    let k = Math.imul(a | (b << 16), C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h1 ^= k;
    h1 = (h1 << 13) | (h1 >>> 19);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
    h2 ^= k;
    h2 = (h2 << 13) | (h2 >>> 19);
    h2 = (Math.imul(h2, 5) + 0xe6546b64) | 0;
  }
  if (index < end) {
    const a = bytes[index];
    high |= a;
    let k = Math.imul(a, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h1 ^= k;
    h2 ^= k;
  }
  if (high >= 0x80) return false;
  out[0] = finalize(h1 ^ (length * 2));
  out[1] = finalize(h2 ^ (length * 2));
  return true;
}

/**
 * Hash of a number's float64 bits; -0 hashes as 0 so values equal under `===` hash equal.
 * Unsigned 32-bit result.
 */
export function hashNumber(value: number, seed: number): number {
  float64Scratch[0] = value + 0;
  let h = mixBlock(seed | 0, uint32Scratch[0]);
  h = mixBlock(h, uint32Scratch[1]);
  return finalize(h ^ 8);
}
