/**
 * One HyperLogLog per column of a segment, over the column's distinct values, and the value hash
 * that defines "distinct": numbers, strings, bools and lists hash with different seeds so 1, "1"
 * and true count apart; -0 is 0; a list counts as one value (its JSON text). Nulls and missing
 * rows are not values. count_unique must hash with `hashValue` to merge with these sketches.
 */
import { DISTINCT_VALUES_MAX, GROUP_STATS_NUMBERS_MAX } from '../../base/limits.js';
import { hashNumber, hashString } from '../../sketch/hash.js';
import { HyperLogLog } from '../../sketch/hyperloglog.js';
import {
  TAG_BOOL,
  TAG_LIST,
  TAG_NUM,
  TAG_STR,
  numbersOf,
  storedNumbers,
  type Column,
  type ColumnChunk,
  type Primitive,
  type ScaledNumbers,
} from '../chunk.js';
import { addNumbersByCell } from '../cell-sums.js';

const SEED_NUM = 0x5bd1e995;
const SEED_STR = 0x1b873593;
const SEED_BOOL = 0x27d4eb2f;
const SEED_LIST = 0x165667b1;

/** Hash of one stored value as the segment sketches count it; null for null (not counted). */
export function hashValue(value: Primitive | readonly Primitive[]): number | null {
  if (value === null) return null;
  if (typeof value === 'number') return hashNumber(value, SEED_NUM);
  if (typeof value === 'string') return hashString(value, SEED_STR);
  if (typeof value === 'boolean') return hashNumber(value ? 1 : 0, SEED_BOOL);
  return hashString(JSON.stringify(value), SEED_LIST);
}

/** A column's distinct present, non-null values and how many rows hold each. */
export interface ValueCounts {
  readonly values: Primitive[];
  /** rows[i]: the rows whose value is values[i]. */
  readonly rows: number[];
  /**
   * For a column whose every row is one of these strings: per column whose every row is a
   * number, sums[path][i] is its sum over the rows holding values[i] (computeGroupStats).
   */
  readonly sums?: Readonly<Record<string, number[]>>;
  /** As sums, the least and greatest number over those rows; for a column of booleans too. */
  readonly least?: Readonly<Record<string, number[]>>;
  readonly greatest?: Readonly<Record<string, number[]>>;
}

/**
 * What a scan of the whole segment would make of a column with few values and a column of
 * numbers: per column G that computeDistinct listed whose every row is a string (or every row a
 * boolean), and per column T whose every row is a number, T's least and greatest number over the
 * rows of each of G's values and, for strings, its sum over them (ValueCounts.least, greatest,
 * sums). The sums are made by the very kernel, in the same lanes and row order, as a scan's sum
 * grouped by G (query/exec/execute.ts CodeSums; storage/cell-sums.ts), so an answer from the
 * sidecar equals the scan's to the last bit. At most GROUP_STATS_NUMBERS_MAX numbers, in column order.
 */
export function computeGroupStats(chunk: ColumnChunk, distinct: Record<string, ValueCounts>): Record<string, ValueCounts> {
  const targets: [string, Float64Array | ScaledNumbers][] = [];
  for (const [path, column] of chunk.columns) {
    if (column.num === null && column.scaled === null) continue;
    if (!everyRow(column.tags, chunk.rows, TAG_NUM)) continue;
    targets.push([path, storedNumbers(column) ?? numbersOf(column)]);
  }
  if (targets.length === 0) return distinct;
  const out = { ...distinct };
  let budget = GROUP_STATS_NUMBERS_MAX;
  for (const [path, counts] of Object.entries(distinct)) {
    const column = chunk.columns.get(path)!;
    const width = counts.values.length;
    const strings = column.dict !== null && everyRow(column.tags, chunk.rows, TAG_STR);
    const cost = width * targets.length * (strings ? 3 : 2);
    if (cost > budget || (!strings && !everyRow(column.tags, chunk.rows, TAG_BOOL))) continue;
    budget -= cost;
    const cells = valueIndexes(column, counts, chunk.rows);
    const sums: Record<string, number[]> = {};
    const least: Record<string, number[]> = {};
    const greatest: Record<string, number[]> = {};
    const rowCounts = new Float64Array(width);
    for (const [target, numbers] of targets) {
      if (target === path) continue;
      if (strings) {
        const perValue = new Float64Array(width);
        rowCounts.fill(0);
        addNumbersByCell(numbers, cells, chunk.rows, width, perValue, rowCounts);
        sums[target] = Array.from(perValue);
      }
      [least[target], greatest[target]] = extremesByCell(numbers, cells, chunk.rows, width);
    }
    out[path] = strings ? { ...counts, sums, least, greatest } : { ...counts, least, greatest };
  }
  return out;
}

/** Per row, the index in counts.values of its value (a column of strings or of booleans). */
function valueIndexes(column: Column, counts: ValueCounts, rows: number): Int32Array {
  const indexOf = new Map<Primitive, number>(counts.values.map((value, i) => [value, i]));
  const cells = new Int32Array(rows);
  if (column.dict !== null && column.str !== null && column.tags[0] === TAG_STR) {
    const ofCode = Int32Array.from(column.dict, (value) => indexOf.get(value) ?? -1);
    const str = column.str;
    for (let row = 0; row < rows; row++) cells[row] = ofCode[str[row]];
    return cells;
  }
  const yes = indexOf.get(true) ?? -1;
  const no = indexOf.get(false) ?? -1;
  const num = column.num!;
  for (let row = 0; row < rows; row++) cells[row] = num[row] !== 0 ? yes : no;
  return cells;
}

/** The least and greatest of `numbers` over the rows of each cell (each the double a scan reads). */
function extremesByCell(numbers: Float64Array | ScaledNumbers, cells: Int32Array, rows: number, width: number): [number[], number[]] {
  const least = new Array<number>(width).fill(Infinity);
  const greatest = new Array<number>(width).fill(-Infinity);
  const values = numbers instanceof Float64Array ? numbers : numbers.values;
  const factor = numbers instanceof Float64Array ? 1 : numbers.factor;
  for (let row = 0; row < rows; row++) {
    const value = factor === 1 ? values[row] : values[row] / factor;
    const cell = cells[row];
    if (value < least[cell]) least[cell] = value;
    if (value > greatest[cell]) greatest[cell] = value;
  }
  return [least, greatest];
}

/** Whether every one of the first `rows` tags is `tag`. */
function everyRow(tags: Uint8Array, rows: number, tag: number): boolean {
  for (let row = 0; row < rows; row++) if (tags[row] !== tag) return false;
  return true;
}

/**
 * Per column of `chunk` with at most DISTINCT_VALUES_MAX distinct present, non-null values and
 * no list rows: those values (strings, numbers, booleans) with their row counts. They answer
 * select_unique, count_unique and counts filtered or grouped by that one column for a segment
 * wholly inside a timeframe without reading it.
 */
export function computeDistinct(chunk: ColumnChunk): Record<string, ValueCounts> {
  const out: Record<string, ValueCounts> = {};
  for (const [path, column] of chunk.columns) {
    const counts = valueCounts(column, chunk.rows);
    if (counts !== null) out[path] = counts;
  }
  return out;
}

function valueCounts(column: Column, rows: number): ValueCounts | null {
  const { tags, num, str, dict } = column;
  const perCode = dict === null ? null : new Int32Array(dict.length);
  const numbers = new Map<number, number>();
  const bools = [0, 0];
  // Numbers are counted a run at a time: a column that repeats a value (an add-on's result for a
  // batch, a sorted column) costs a comparison a row rather than a Map update.
  let run = 0;
  let runValue = 0;
  for (let row = 0; row < rows; row++) {
    const tag = tags[row];
    if (tag === TAG_STR) perCode![str![row]]++;
    else if (tag === TAG_NUM) {
      const value = num![row] + 0; // -0 is 0
      if (run > 0 && value === runValue) {
        run++;
        continue;
      }
      if (run > 0) numbers.set(runValue, (numbers.get(runValue) ?? 0) + run);
      if (numbers.size > DISTINCT_VALUES_MAX) return null;
      run = 1;
      runValue = value;
    } else if (tag === TAG_BOOL) bools[num![row] !== 0 ? 1 : 0]++;
    else if (tag === TAG_LIST) return null;
  }
  if (run > 0) numbers.set(runValue, (numbers.get(runValue) ?? 0) + run);
  if (numbers.size > DISTINCT_VALUES_MAX) return null;
  const strings = new Map<string, number>();
  for (let code = 0; perCode !== null && code < perCode.length; code++) {
    if (perCode[code] === 0) continue;
    strings.set(dict![code], (strings.get(dict![code]) ?? 0) + perCode[code]);
    // A column of ids stops here, not after a Map of every one of its strings.
    if (strings.size + numbers.size > DISTINCT_VALUES_MAX) return null;
  }
  if (strings.size + numbers.size > DISTINCT_VALUES_MAX) return null;
  const values: Primitive[] = [...strings.keys(), ...numbers.keys()];
  const counts = [...strings.values(), ...numbers.values()];
  for (let b = 0; b < 2; b++) {
    if (bools[b] === 0) continue;
    values.push(b === 1);
    counts.push(bools[b]);
  }
  return { values, rows: counts };
}

/**
 * Serialized sketches of every column of `chunk`, keyed by property path. A column `distinct`
 * lists (computeDistinct) is sketched from those values, each hashed once: a sketch depends only
 * on the set of hashes added, so it is the one its rows would give, without a pass over them.
 */
export function computeSketches(chunk: ColumnChunk, distinct: Record<string, ValueCounts> = {}): Record<string, Uint8Array> {
  const sketches: Record<string, Uint8Array> = {};
  for (const [path, column] of chunk.columns) {
    const counts = Object.hasOwn(distinct, path) ? distinct[path] : undefined;
    sketches[path] = (counts !== undefined ? sketchValues(counts.values) : sketchColumn(column, chunk.rows)).serialize();
  }
  return sketches;
}

function sketchValues(values: readonly Primitive[]): HyperLogLog {
  const sketch = new HyperLogLog();
  for (const value of values) {
    const hash = hashValue(value);
    if (hash !== null) sketch.add(hash);
  }
  return sketch;
}

export function sketchColumn(column: Column, rows: number): HyperLogLog {
  const sketch = new HyperLogLog();
  const { tags, num, str, dict, lists } = column;
  // Rows mark the dictionary entries they use; each used entry is hashed and added once.
  const used = dict === null ? null : new Uint8Array(dict.length);
  // Lists are shared objects (an add-on's result, a batch's repeated list): each is written once.
  let listHashes: Map<readonly Primitive[], number> | null = null;
  // Adding a hash again changes nothing, so a run of one value (a batch's add-on results, a
  // sorted column) costs a comparison a row, not a hash and an add.
  let lastTag = -1;
  let lastNum = NaN;
  for (let row = 0; row < rows; row++) {
    const tag = tags[row];
    if (tag === TAG_NUM || tag === TAG_BOOL) {
      const value = num![row];
      if (tag === lastTag && value === lastNum) continue;
      lastTag = tag;
      lastNum = value;
      sketch.add(tag === TAG_NUM ? hashNumber(value, SEED_NUM) : hashNumber(value !== 0 ? 1 : 0, SEED_BOOL));
    } else if (tag === TAG_STR) {
      used![str![row]] = 1;
    } else if (tag === TAG_LIST) {
      const list = lists![row]!;
      listHashes ??= new Map();
      let hash = listHashes.get(list);
      if (hash === undefined) {
        listHashes.set(list, hash = hashString(JSON.stringify(list), SEED_LIST));
        sketch.add(hash);
      }
    }
  }
  for (let code = 0; used !== null && code < used.length; code++) {
    if (used[code] === 1) sketch.add(hashString(dict![code], SEED_STR));
  }
  return sketch;
}
