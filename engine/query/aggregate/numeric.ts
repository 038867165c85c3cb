/**
 * Shared by the numeric aggregates: gathers the numeric values of the selected rows (and their
 * cells) into scratch arrays and counts present non-numeric values, which only matter for the
 * whole-query NonNumericTargetPropertyError (values exist, none numeric).
 */
import { ApiError } from '../../errors.js';
import { TAG_NUM } from '../../storage/chunk.js';
import type { UpdateInput } from './types.js';

export class NumericGather {
  values = new Float64Array(0);
  cells = new Int32Array(0);
  count = 0;
  /** Rows whose value is present and not null. */
  present = 0;
  numeric = 0;

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
      for (let i = 0; i < n; i++) total += num![i];
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

  check(target: string): void {
    if (this.present > 0 && this.numeric === 0) {
      throw new ApiError('NonNumericTargetPropertyError',
        `"${target}" has values but none is numeric; numeric analyses skip non-numeric values`);
    }
  }
}
