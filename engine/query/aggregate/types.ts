/**
 * The partial-state contract of every aggregate: update with the selected rows of one chunk,
 * merge another partial state over the same cell numbering, finalize one cell to its JSON value.
 * A cell is (group, bucket); cells are dense integers assigned by execute.ts.
 */
import type { Column } from '../../storage/chunk.js';
import type { StateWriter } from '../eval/state-io.js';

/**
 * The wire tag of each kind of partial state (partial-codec.ts). Never renumber one: encoded
 * states, golden files among them, name their kinds by these numbers.
 */
export const AggregateTag = {
  count: 1,
  count_unique: 2,
  minimum: 3,
  maximum: 4,
  sum: 5,
  average: 6,
  median: 7,
  percentile: 8,
  standard_deviation: 9,
  select_unique: 10,
  /** A finished value standing in for a state (execute.ts FixedAggregator). */
  fixed: 11,
} as const;
export type AggregateTag = (typeof AggregateTag)[keyof typeof AggregateTag];

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
  /** This state's wire tag; partial-codec.ts maps each tag to the class's static decode. */
  readonly codecTag: AggregateTag;
  /**
   * Writes the state, parameters included, for the class's static `decode(reader)` to rebuild
   * (partial-codec.ts). A change to what is written needs a new format version there.
   */
  encode(writer: StateWriter): void;
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
