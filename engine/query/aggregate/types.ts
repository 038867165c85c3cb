/**
 * The partial-state contract of every aggregate: update with the selected rows of one chunk,
 * merge another partial state over the same cell numbering, finalize one cell to its JSON value.
 * A cell is (group, bucket); cells are dense integers assigned by execute.ts.
 */
import type { Column } from '../../storage/chunk.js';

export interface UpdateInput {
  /** The target property's column in this chunk; undefined when no row has it. */
  readonly column: Column | undefined;
  /** Selected rows are idx[0 .. n). */
  readonly idx: Int32Array;
  readonly n: number;
  /** cells[k] is the cell of row idx[k]; null when every row is in cell 0. */
  readonly cells: Int32Array | null;
  /** Every cell id is below this. */
  readonly cellCount: number;
  /** True when idx[k] === k for every k < n (whole chunk selected): loops may skip idx. */
  readonly dense: boolean;
  /** Bit t set when some row of `column` has tag t (0 when column is undefined). */
  readonly tagMask: number;
}

export interface Aggregator {
  update(input: UpdateInput): void;
  /** Folds `other` (same kind, same cell numbering) into this state. */
  merge(other: Aggregator): void;
  /** The cell's JSON result. */
  finalize(cell: number): unknown;
  /** Throws the aggregate's whole-query errors (e.g. NonNumericTargetPropertyError). */
  check(): void;
  /**
   * Renumbers the cells: old cell c becomes map[c] (injective; every used cell is below
   * map.length). Used to merge partial states whose group ids differ (fan-out over workers).
   */
  remap(map: Int32Array): void;
}

/** `array` renumbered by `map` (old index c → map[c]); unmapped slots hold `fill`. */
export function remapF64(array: Float64Array<ArrayBuffer>, map: Int32Array, fill = 0): Float64Array<ArrayBuffer> {
  let size = 1;
  for (let c = 0; c < map.length; c++) if (map[c] + 1 > size) size = map[c] + 1;
  const out = new Float64Array(size);
  if (fill !== 0) out.fill(fill);
  const n = Math.min(array.length, map.length);
  for (let c = 0; c < n; c++) out[map[c]] = array[c];
  return out;
}

/** A sparse per-cell array renumbered by `map`. */
export function remapSparse<T>(array: (T | undefined)[], map: Int32Array): (T | undefined)[] {
  const out: (T | undefined)[] = [];
  array.forEach((value, c) => {
    if (value !== undefined && c < map.length) out[map[c]] = value;
  });
  return out;
}

/** A Float64Array at least `size` long, keeping `array`'s contents. */
export function growF64(array: Float64Array<ArrayBuffer>, size: number, fill = 0): Float64Array<ArrayBuffer> {
  if (array.length >= size) return array;
  const grown = new Float64Array(Math.max(size, array.length * 2, 16));
  if (fill !== 0) grown.fill(fill);
  grown.set(array);
  return grown;
}
