/**
 * Distinct strings in first-seen order, each with its index: what a Map<string, number> does for
 * the strings a flush or a merge re-interns (chunk-ops.ts), at about half its cost on the
 * 100,000s of fresh strings of an id column (a Map grows by rehashing and misses the cache on
 * every lookup). An open-addressing table of int32 slots keyed by sketch/hash.ts's hash, each
 * entry's hash kept so growing never hashes a string again.
 */
import { hashString } from '../sketch/hash.js';

const SEED = 0x5bd1e995;
const EMPTY = -1;

export class StringInterner {
  /** The distinct strings, in the order they were first interned: index i is string i's code. */
  readonly strings: string[] = [];
  private hashes: Int32Array;
  private slots: Int32Array;
  private mask: number;

  /** `expected`: about how many distinct strings will come (a bound is fine; the table grows). */
  constructor(expected: number) {
    let size = 16;
    while (size < expected * 2) size *= 2;
    this.slots = new Int32Array(size).fill(EMPTY);
    this.mask = size - 1;
    this.hashes = new Int32Array(Math.max(8, expected));
  }

  /** The code of `value`: its index in `strings`, added at the end the first time it comes. */
  intern(value: string): number {
    const hash = hashString(value, SEED) | 0;
    const strings = this.strings;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const code = this.slots[slot];
      if (code === EMPTY) {
        const added = strings.length;
        strings.push(value);
        this.slots[slot] = added;
        if (added === this.hashes.length) this.hashes = grown(this.hashes);
        this.hashes[added] = hash;
        if (2 * strings.length > this.slots.length) this.grow();
        return added;
      }
      if (this.hashes[code] === hash && strings[code] === value) return code;
    }
  }

  private grow(): void {
    const size = this.slots.length * 2;
    const slots = new Int32Array(size).fill(EMPTY);
    const mask = size - 1;
    for (let code = 0; code < this.strings.length; code++) {
      let slot = this.hashes[code] & mask;
      while (slots[slot] !== EMPTY) slot = (slot + 1) & mask;
      slots[slot] = code;
    }
    this.slots = slots;
    this.mask = mask;
  }
}

function grown(values: Int32Array): Int32Array {
  const next = new Int32Array(values.length * 2);
  next.set(values);
  return next;
}
