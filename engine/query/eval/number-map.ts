/** NumberMap: float64 key → int32 id, for group ids of numbers and composite keys (group-by.ts); see hash-table.ts. */
import { INITIAL_CAPACITY, mix32 } from './hash-table.js';

/** float64 → int32 map; keys compare by value (-0 is normalized to 0 by callers' `+ 0`). */
export class NumberMap {
  private keys = new Float64Array(INITIAL_CAPACITY);
  private values = new Int32Array(INITIAL_CAPACITY);
  private used = new Uint8Array(INITIAL_CAPACITY);
  private readonly bits = new Float64Array(1);
  private readonly halves = new Int32Array(this.bits.buffer);
  size = 0;

  private slot(key: number): number {
    this.bits[0] = key;
    return mix32(this.halves[0] ^ Math.imul(this.halves[1], 0x9e3779b1)) & (this.keys.length - 1);
  }

  /** The value of `key`, or -1. */
  get(key: number): number {
    const mask = this.keys.length - 1;
    for (let s = this.slot(key); ; s = (s + 1) & mask) {
      if (this.used[s] === 0) return -1;
      if (this.keys[s] === key) return this.values[s];
    }
  }

  set(key: number, value: number): void {
    if ((this.size + 1) * 2 > this.keys.length) this.grow();
    const mask = this.keys.length - 1;
    for (let s = this.slot(key); ; s = (s + 1) & mask) {
      if (this.used[s] === 0) {
        this.used[s] = 1;
        this.keys[s] = key;
        this.values[s] = value;
        this.size++;
        return;
      }
      if (this.keys[s] === key) {
        this.values[s] = value;
        return;
      }
    }
  }

  private grow(): void {
    const { keys, values, used } = this;
    this.keys = new Float64Array(keys.length * 2);
    this.values = new Int32Array(keys.length * 2);
    this.used = new Uint8Array(keys.length * 2);
    this.size = 0;
    for (let s = 0; s < keys.length; s++) if (used[s] === 1) this.set(keys[s], values[s]);
  }
}
