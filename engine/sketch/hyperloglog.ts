/**
 * A HyperLogLog distinct-count sketch over 32-bit hashes (sketch/hash.ts): 2^p one-byte
 * registers, merge by register-wise max, and Ertl's improved estimator ("New cardinality
 * estimation algorithms for HyperLogLog sketches", 2017), which needs no bias table and has no
 * bump at the small/large range switch. It knows nothing of values or columns.
 *
 * Serialized form (version 1), all integers little-endian:
 *   Sketch  => version:u8 precision:u8 kind:u8 Body
 *   Body    => Dense | Sparse
 *   Dense   => registers:u8[2^precision]                       (kind 0)
 *   Sparse  => count:u32 (index:u16 value:u8)[count]           (kind 1, only non-zero registers)
 * Sparse is chosen when it is smaller, which it is for the many low-cardinality columns.
 */
import { assert } from '../base/assert.js';
import { HLL_PRECISION } from '../base/limits.js';

const VERSION = 1;
const KIND_DENSE = 0;
const KIND_SPARSE = 1;
const HEADER_BYTES = 3;
const SPARSE_ENTRY_BYTES = 3;
/** 1 / (2 ln 2): the limit of the HLL bias constant alpha_m as m grows. */
const ALPHA_INF = 0.5 / Math.LN2;

export class HyperLogLog {
  readonly precision: number;
  /** Register i holds the largest rank seen among hashes whose top `precision` bits are i. */
  readonly registers: Uint8Array;
  /** Bits of the hash below the index: a rank is 1 .. rankBits + 1. */
  private readonly rankBits: number;

  constructor(precision: number = HLL_PRECISION, registers?: Uint8Array) {
    assert(Number.isInteger(precision), 'precision is an integer');
    assert(precision >= 4 && precision <= 16, 'precision within 4..16 (u16 sparse indices)');
    this.precision = precision;
    this.rankBits = 32 - precision;
    this.registers = registers ?? new Uint8Array(1 << precision);
    assert(this.registers.length === 1 << precision, 'one register per index');
  }

  /** Adds one unsigned 32-bit hash; distinct values must hash apart (sketch/hash.ts). */
  add(hash: number): void {
    const rankBits = this.rankBits;
    const index = hash >>> rankBits;
    const rest = hash & ((1 << rankBits) - 1);
    // rest has `precision` leading zero bits by construction, so clz32 - precision + 1 is
    // 1-based position of its first one bit; an all-zero rest gets the maximum rank.
    const rank = rest === 0 ? rankBits + 1 : Math.clz32(rest) - this.precision + 1;
    if (rank > this.registers[index]) this.registers[index] = rank;
  }

  /**
   * This sketch at a lower precision, exactly as if its hashes had been added to a sketch of that
   * precision: an index's dropped low bits become the head of the rest, so a register moves to
   * index >> shift with rank (first one bit of those bits), or shift + rank when they are all zero.
   * Partial states whose sketches were sized for different cell counts merge at the smaller size.
   */
  folded(precision: number): HyperLogLog {
    assert(precision >= 4 && precision <= this.precision, 'folds to a precision within 4..this one');
    if (precision === this.precision) return new HyperLogLog(precision, this.registers.slice());
    const shift = this.precision - precision;
    const out = new Uint8Array(1 << precision);
    const source = this.registers;
    for (let index = 0; index < source.length; index++) {
      const rank = source[index];
      if (rank === 0) continue;
      const low = index & ((1 << shift) - 1);
      const folded = low === 0 ? shift + rank : Math.clz32(low) - (32 - shift) + 1;
      const at = index >>> shift;
      if (folded > out[at]) out[at] = folded;
    }
    return new HyperLogLog(precision, out);
  }

  /** Folds `other` into this sketch; afterwards this estimates the union of both inputs. */
  merge(other: HyperLogLog): void {
    assert(other.precision === this.precision, 'merge needs equal precision');
    const target = this.registers;
    const source = other.registers;
    for (let index = 0; index < target.length; index++) {
      if (source[index] > target[index]) target[index] = source[index];
    }
  }

  /** Estimated number of distinct hashes added (0 for an empty sketch). */
  estimate(): number {
    const m = this.registers.length;
    const q = this.rankBits;
    const histogram = new Float64Array(q + 2);
    for (let index = 0; index < m; index++) histogram[this.registers[index]]++;
    let z = m * tau(1 - histogram[q + 1] / m);
    for (let k = q; k >= 1; k--) z = 0.5 * (z + histogram[k]);
    z += m * sigma(histogram[0] / m);
    return (ALPHA_INF * m * m) / z;
  }

  serialize(): Uint8Array {
    const registers = this.registers;
    let nonZero = 0;
    for (let index = 0; index < registers.length; index++) if (registers[index] !== 0) nonZero++;
    if (4 + nonZero * SPARSE_ENTRY_BYTES >= registers.length) return this.serializeDense();
    const bytes = new Uint8Array(HEADER_BYTES + 4 + nonZero * SPARSE_ENTRY_BYTES);
    writeHeader(bytes, this.precision, KIND_SPARSE);
    const view = new DataView(bytes.buffer);
    view.setUint32(HEADER_BYTES, nonZero, true);
    let at = HEADER_BYTES + 4;
    for (let index = 0; index < registers.length; index++) {
      if (registers[index] === 0) continue;
      view.setUint16(at, index, true);
      bytes[at + 2] = registers[index];
      at += SPARSE_ENTRY_BYTES;
    }
    return bytes;
  }

  private serializeDense(): Uint8Array {
    const bytes = new Uint8Array(HEADER_BYTES + this.registers.length);
    writeHeader(bytes, this.precision, KIND_DENSE);
    bytes.set(this.registers, HEADER_BYTES);
    return bytes;
  }

  /** Inverse of serialize(); throws an Error on bytes it did not produce. */
  static deserialize(bytes: Uint8Array): HyperLogLog {
    if (bytes.length < HEADER_BYTES || bytes[0] !== VERSION) {
      throw new Error('hyperloglog: unknown sketch version');
    }
    if (bytes[1] < 4 || bytes[1] > 16) throw new Error('hyperloglog: precision out of range');
    const sketch = new HyperLogLog(bytes[1]);
    const m = sketch.registers.length;
    if (bytes[2] === KIND_DENSE) {
      if (bytes.length !== HEADER_BYTES + m) throw new Error('hyperloglog: dense length');
      sketch.registers.set(bytes.subarray(HEADER_BYTES));
      return sketch;
    }
    if (bytes[2] !== KIND_SPARSE) throw new Error('hyperloglog: unknown sketch kind');
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const count = bytes.length >= HEADER_BYTES + 4 ? view.getUint32(HEADER_BYTES, true) : -1;
    if (count < 0 || bytes.length !== HEADER_BYTES + 4 + count * SPARSE_ENTRY_BYTES) {
      throw new Error('hyperloglog: sparse length');
    }
    for (let at = HEADER_BYTES + 4; at < bytes.length; at += SPARSE_ENTRY_BYTES) {
      const index = view.getUint16(at, true);
      if (index >= m) throw new Error('hyperloglog: sparse index out of range');
      sketch.registers[index] = bytes[at + 2];
    }
    return sketch;
  }
}

function writeHeader(bytes: Uint8Array, precision: number, kind: number): void {
  bytes[0] = VERSION;
  bytes[1] = precision;
  bytes[2] = kind;
}

/** Ertl's sigma(x) = x + sum_k x^(2^k) 2^(k-1): the correction for empty registers. */
function sigma(x: number): number {
  if (x === 1) return Infinity;
  let y = 1;
  let z = x;
  for (;;) {
    x *= x;
    const previous = z;
    z += x * y;
    y += y;
    if (z === previous) return z;
  }
}

/** Ertl's tau(x): the correction for saturated registers (rank = rankBits + 1). */
function tau(x: number): number {
  if (x === 0 || x === 1) return 0;
  let y = 1;
  let z = 1 - x;
  for (;;) {
    x = Math.sqrt(x);
    const previous = z;
    y *= 0.5;
    z -= (1 - x) * (1 - x) * y;
    if (z === previous) return z / 3;
  }
}
