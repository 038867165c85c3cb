/**
 * A seeded pseudo-random generator (mulberry32) for tests and benchmarks: the same seed gives the
 * same sequence on every run, so a failing fuzz case or a benchmark data set can be reproduced.
 * Not for keys or ids (those come from node:crypto).
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Deterministic bytes for compression codec tests (xorshift32): `text` compresses somewhat (a
 * four-letter alphabet), `noise` not at all, `run` is one repeated byte (RLE blocks).
 */
export function codecBytes(length: number, kind: 'text' | 'noise' | 'run'): Buffer {
  const out = Buffer.alloc(length);
  let state = 2463534242;
  for (let index = 0; index < length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[index] = kind === 'run' ? 7 : kind === 'text' ? 97 + ((state >>> 0) % 4) : state & 0xff;
  }
  return out;
}
