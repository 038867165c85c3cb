/**
 * Shared by the numeric aggregates: gathers the numeric values of the selected rows (and their
 * cells) into scratch arrays and counts present non-numeric values, which only matter for the
 * whole-query NonNumericTargetPropertyError (values exist, none numeric).
 */
import { ApiError } from '../../base/errors.js';
import { numbersOf, storedNumbers, TAG_NUM, type ScaledNumbers } from '../../storage/chunk.js';
import type { StateReader, StateWriter } from '../eval/state-io.js';
import type { UpdateInput } from './types.js';
import { sumDivided, sumLoop } from '../../storage/cell-sums.js';

/** The last denseSum, reused when sum and average read the same column of the same chunk. */
let lastValues: Float64Array | null = null;
let lastCount = -1;
let lastSum = 0;

/** values[0] + ... + values[n - 1]. */
function denseSum(values: Float64Array, n: number): number {
  if (values !== lastValues || n !== lastCount) {
    lastSum = sumLoop(values, n);
    lastValues = values;
    lastCount = n;
  }
  return lastSum;
}


/** The last denseStoredSum, as denseSum's. */
let lastStored: Integers | null = null;
let lastStoredFactor = 0;
let lastStoredCount = -1;
let lastStoredSum = 0;

type Integers = ScaledNumbers['values'];

/**
 * denseSum of numbers read as stored (chunk.ts storedNumbers): the same doubles, values[i] /
 * factor, added in the same order, so the same sum to the last bit.
 */
function denseStoredSum(stored: ScaledNumbers, n: number): number {
  if (stored.values !== lastStored || stored.factor !== lastStoredFactor || n !== lastStoredCount) {
    lastStoredSum = stored.factor === 1 ? sumIntegers(stored.values, n) : sumDivided(stored.values, stored.factor, n);
    lastStored = stored.values;
    lastStoredFactor = stored.factor;
    lastStoredCount = n;
  }
  return lastStoredSum;
}

/**
 * Integers this many or fewer (each at most 2^31 in size) sum exactly in doubles, in any order:
 * every partial sum is an integer below 2^53.
 */
const EXACT_INTEGER_ROWS = 2 ** 22;

/**
 * sumLoop over integers. Up to EXACT_INTEGER_ROWS the sum is exact whatever the order, so eight
 * running sums (an int-to-double conversion a row lengthens each chain); past it, sumLoop's order.
 */
function sumIntegers(values: Integers, n: number): number {
  if (n <= EXACT_INTEGER_ROWS) {
    const head = n & 7;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let s4 = 0;
    let s5 = 0;
    let s6 = 0;
    let s7 = 0;
    for (let i = 0; i < head; i++) s0 += values[i];
    for (let i = head; i < n; i += 8) {
      s0 += values[i];
      s1 += values[i + 1];
      s2 += values[i + 2];
      s3 += values[i + 3];
      s4 += values[i + 4];
      s5 += values[i + 5];
      s6 += values[i + 6];
      s7 += values[i + 7];
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
  }
  const head = n & 3;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  for (let i = 0; i < head; i++) s0 += values[i];
  for (let i = head; i < n; i += 4) {
    s0 += values[i];
    s1 += values[i + 1];
    s2 += values[i + 2];
    s3 += values[i + 3];
  }
  return (s0 + s1) + (s2 + s3);
}


// Run every path before the main loop is first optimized on stack: a path without type
// feedback would deopt the optimized code at the end of each call.
for (let warm = 0; warm < 8; warm++) {
  sumLoop(new Float64Array(9 + warm), 9 + warm);
  sumIntegers(new Int16Array(9 + warm), 9 + warm);
  sumDivided(new Int16Array(9 + warm), 100, 9 + warm);
}

export class NumericGather {
  values = new Float64Array(0);
  cells = new Int32Array(0);
  count = 0;
  /** Rows whose value is present and not null. */
  present = 0;
  numeric = 0;

  /** Counts n numeric rows that the caller read itself. */
  addNumeric(n: number): void {
    this.numeric += n;
    this.present += n;
  }

  /**
   * Counts rows a caller summarized itself, `present` of them holding a value and at least one a
   * number (a segment's footer). Only whether either count is 0 is read (check), so one number
   * stands for all of them.
   */
  addSummarized(present: number): void {
    this.numeric += 1;
    this.present += Math.max(1, present);
  }

  /** Fills values/cells[0 .. count) for this input. */
  gather(input: UpdateInput): void {
    this.count = 0;
    const column = input.column;
    if (column === undefined) return;
    const { idx, n, cells } = input;
    if (this.values.length < n) {
      this.values = new Float64Array(n);
      this.cells = new Int32Array(n);
    }
    const tags = column.tags;
    const stored = storedNumbers(column);
    if (stored !== null) {
      this.gatherStored(tags, stored, input);
      return;
    }
    const num = column.num;
    const values = this.values;
    const out = this.cells;
    let m = 0;
    let other = 0;
    if (num === null) {
      for (let k = 0; k < n; k++) if (tags[idx[k]] > TAG_NUM) other++;
    } else if (cells === null) {
      for (let k = 0; k < n; k++) {
        const i = idx[k];
        const t = tags[i];
        if (t === TAG_NUM) values[m++] = num[i];
        else if (t > TAG_NUM) other++;
      }
    } else {
      for (let k = 0; k < n; k++) {
        const i = idx[k];
        const t = tags[i];
        if (t === TAG_NUM) {
          values[m] = num[i];
          out[m++] = cells[k];
        } else if (t > TAG_NUM) other++;
      }
    }
    this.count = m;
    this.numeric += m;
    this.present += m + other;
  }

  /** gather() of numbers read as stored (chunk.ts storedNumbers): each value as `num` holds it. */
  private gatherStored(tags: Uint8Array, stored: ScaledNumbers, input: UpdateInput): void {
    const { idx, n, cells } = input;
    const { values: integers, factor } = stored;
    const values = this.values;
    const out = this.cells;
    let m = 0;
    let other = 0;
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      const t = tags[i];
      if (t === TAG_NUM) {
        values[m] = factor === 1 ? integers[i] : integers[i] / factor;
        if (cells !== null) out[m] = cells[k];
        m++;
      } else if (t > TAG_NUM) other++;
    }
    this.count = m;
    this.numeric += m;
    this.present += m + other;
  }

  /**
   * Ungrouped fast path: the sum of the numeric values of input's rows, without gathering them;
   * their count is left in `count`.
   */
  sum(input: UpdateInput): number {
    this.count = 0;
    const column = input.column;
    if (column === undefined) return 0;
    const { idx, n } = input;
    const tags = column.tags;
    const stored = storedNumbers(column);
    let total = 0;
    let m = 0;
    let other = 0;
    if (input.dense && input.tagMask === 1 << TAG_NUM) {
      // Every row selected and numeric: a plain sum the JIT keeps in registers.
      total = stored !== null ? denseStoredSum(stored, n) : denseSum(numbersOf(column), n);
      m = n;
    } else if (stored !== null) {
      const { values, factor } = stored;
      for (let k = 0; k < n; k++) {
        const i = idx[k];
        const t = tags[i];
        if (t === TAG_NUM) {
          total += factor === 1 ? values[i] : values[i] / factor;
          m++;
        } else if (t > TAG_NUM) other++;
      }
    } else if (column.num === null) {
      for (let k = 0; k < n; k++) if (tags[idx[k]] > TAG_NUM) other++;
    } else {
      const num = column.num;
      for (let k = 0; k < n; k++) {
        const i = idx[k];
        const t = tags[i];
        if (t === TAG_NUM) {
          total += num[i];
          m++;
        } else if (t > TAG_NUM) other++;
      }
    }
    this.count = m;
    this.numeric += m;
    this.present += m + other;
    return total;
  }

  /** Ungrouped fast path: the smallest (or largest) numeric value, or ±Infinity over none. */
  extremum(input: UpdateInput, max: boolean): number {
    this.count = 0;
    const column = input.column;
    let best = max ? -Infinity : Infinity;
    if (column === undefined) return best;
    if (column.scaled) return this.scaledExtremum(column.tags, column.scaled, input, max);
    const { idx, n } = input;
    const { tags, num } = column;
    let m = 0;
    let other = 0;
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      const t = tags[i];
      if (t === TAG_NUM) {
        const x = num![i];
        if (max ? x > best : x < best) best = x;
        m++;
      } else if (t > TAG_NUM) other++;
    }
    this.count = m;
    this.numeric += m;
    this.present += m + other;
    return best;
  }

  /**
   * extremum() of numbers kept as stored (Column.scaled), whatever their scale: the extremum of
   * the integers, divided once; v / factor never decreases as v grows, so that is the extremum
   * of the values `num` would hold, and no Float64 array is made.
   */
  private scaledExtremum(tags: Uint8Array, scaled: ScaledNumbers, input: UpdateInput, max: boolean): number {
    const { idx, n } = input;
    const values = scaled.values;
    let best = max ? -Infinity : Infinity;
    let m = 0;
    let other = 0;
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      const t = tags[i];
      if (t === TAG_NUM) {
        const x = values[i];
        if (max ? x > best : x < best) best = x;
        m++;
      } else if (t > TAG_NUM) other++;
    }
    this.count = m;
    this.numeric += m;
    this.present += m + other;
    return m > 0 && scaled.factor !== 1 ? best / scaled.factor : best;
  }

  merge(other: NumericGather): void {
    this.present += other.present;
    this.numeric += other.numeric;
  }

  /** Writes the counts the whole-query check needs (the scratch arrays are not state). */
  encode(writer: StateWriter): void {
    writer.f64(this.present);
    writer.f64(this.numeric);
  }

  /** Reads what encode wrote into this (fresh) gather. */
  decodeInto(reader: StateReader): void {
    this.present = reader.f64('values present');
    this.numeric = reader.f64('numeric values');
  }

  check(target: string): void {
    if (this.present > 0 && this.numeric === 0) {
      throw new ApiError('NonNumericTargetPropertyError',
        `"${target}" has values but none is numeric; numeric analyses skip non-numeric values`);
    }
  }
}
