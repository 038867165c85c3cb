/**
 * Shared by the numeric aggregates: gathers the numeric values of the selected rows (and their
 * cells) into scratch arrays and counts present non-numeric values, which only matter for the
 * whole-query NonNumericTargetPropertyError (values exist, none numeric).
 */
import { ApiError } from '../../base/errors.js';
import { numbersOf, TAG_NUM } from '../../storage/chunk.js';
import type { StateReader, StateWriter } from '../eval/state-io.js';
import type { UpdateInput } from './types.js';

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

/** Four independent running sums (no add-latency chain); the tail first. */
function sumLoop(values: Float64Array, n: number): number {
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
for (let warm = 0; warm < 8; warm++) sumLoop(new Float64Array(9 + warm), 9 + warm);

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

  /**
   * Ungrouped fast path: the sum of the numeric values of input's rows, without gathering them;
   * their count is left in `count`.
   */
  sum(input: UpdateInput): number {
    this.count = 0;
    const column = input.column;
    if (column === undefined) return 0;
    const { idx, n } = input;
    const { tags, num } = column;
    let total = 0;
    let m = 0;
    let other = 0;
    if (input.dense && input.tagMask === 1 << TAG_NUM) {
      // Every row selected and numeric: a plain sum the JIT keeps in registers.
      total = denseSum(numbersOf(column), n);
      m = n;
    } else if (num === null) {
      for (let k = 0; k < n; k++) if (tags[idx[k]] > TAG_NUM) other++;
    } else {
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
