/**
 * Range filters over numbers kept as the stored integers (Column.scaled): the bounds are moved
 * onto the integers once, so no Float64 value is made per row.
 */
import { TAG_NUM, type ScaledNumbers } from '../../storage/chunk.js';

/**
 * applyRange over numbers kept as stored integers (Column.scaled): a row's number is v / factor,
 * and v / factor (a correctly rounded division) never decreases as v grows, so the rows with
 * lo <= v / factor <= hi are those with scaledLow <= v <= scaledHigh. The same rows, without
 * making a Float64 value per row.
 */
export function applyScaledRange(
  tags: Uint8Array, scaled: ScaledNumbers, lo: number, hi: number, allNumbers: boolean, src: Int32Array,
  dst: Int32Array, n: number,
): number {
  const { values, factor } = scaled;
  const low = scaledLow(lo, factor);
  const high = scaledHigh(hi, factor);
  let w = 0;
  if (allNumbers && isDense(src, n)) {
    for (let i = 0; i < n; i++) {
      const v = values[i];
      dst[w] = i;
      w += +(v >= low) & +(v <= high);
    }
    return w;
  }
  if (allNumbers) {
    for (let k = 0; k < n; k++) {
      const i = src[k];
      const v = values[i];
      dst[w] = i;
      w += +(v >= low) & +(v <= high);
    }
    return w;
  }
  for (let k = 0; k < n; k++) {
    const i = src[k];
    const v = values[i];
    dst[w] = i;
    w += +(tags[i] === TAG_NUM) & +(v >= low) & +(v <= high);
  }
  return w;
}

/** Past every stored integer (they are Int32): a bound out here keeps all rows or none. */
const SCALED_BEYOND = 2 ** 32;

/** The least integer v with v / factor >= lo (lo not NaN), or ±Infinity past every Int32. */
export function scaledLow(lo: number, factor: number): number {
  const guess = Math.ceil(lo * factor);
  if (!(guess > -SCALED_BEYOND)) return -Infinity;
  if (!(guess < SCALED_BEYOND)) return Infinity;
  // lo * factor is rounded: the guess is off by at most a step or two.
  let v = guess;
  while ((v - 1) / factor >= lo) v--;
  while (v / factor < lo) v++;
  return v;
}

/** The greatest integer v with v / factor <= hi (hi not NaN), or ±Infinity past every Int32. */
export function scaledHigh(hi: number, factor: number): number {
  const guess = Math.floor(hi * factor);
  if (!(guess < SCALED_BEYOND)) return Infinity;
  if (!(guess > -SCALED_BEYOND)) return -Infinity;
  let v = guess;
  while ((v + 1) / factor <= hi) v++;
  while (v / factor > hi) v--;
  return v;
}

/**
 * Whether src[0 .. n) is 0, 1, ..., n - 1 (a chunk wholly selected), so a loop can read rows in
 * order without the indirection. A selection is strictly increasing (every step keeps the order
 * of its input), so its first and last entries decide it.
 */
export function isDense(src: Int32Array, n: number): boolean {
  return n > 0 && src[0] === 0 && src[n - 1] === n - 1;
}
