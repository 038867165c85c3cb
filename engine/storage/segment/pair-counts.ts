/**
 * Pair tables: for a column F that lists its few values (sketches.ts computeDistinct) and a
 * column G whose every row is a string from a dictionary of at most PAIR_GROUP_ENTRIES_MAX
 * entries, how many rows of the segment hold each (value of F, string of G) pair that occurs. A
 * count filtered by F and grouped by G (devices in a set, counted per path), filtered by both,
 * or a select_unique or count_unique of one filtered by the other is then answered for a segment
 * wholly inside its timeframe from these cells (query/exec/value-counts.ts), without reading it.
 * A two-column form of a star-tree's pre-aggregation (Apache Pinot), made as the segment is
 * written, never an estimate: each cell is an exact row count.
 *
 * Stored in the sidecar's Pairs section (footer.ts: `pairs[F][G]`), each table a zstd frame of its
 * own that decodePairTable decodes for the query that reads it (nothing decoded is kept: a 1.1M-row
 * day's tables are ~170 KB decoded, ~30 KB as stored, and a footer cache holds hundreds):
 *   PairTable => zstd(msgpack { strings: string[], cells: bin })   (cells: u32 little-endian triples
 *                (slot of F, index in strings, rows); a slot is an index in F's values, or
 *                values.length for a null row, values.length + 1 for a row without F)
 * Tables are made cheapest first (F's values × G's entries), while their cells stay within one
 * per PAIR_ROWS_PER_CELL rows of the segment all told (or PAIR_CELLS_MIN, for a segment of
 * PAIR_CELLS_MIN to 8 × PAIR_CELLS_MIN rows),
 * so they cost a few percent of its bytes at most; a pair past that has no table and its
 * queries scan. G's strings must repeat (at most one entry per PAIR_ROWS_PER_CELL rows).
 */
import { pack, unpack } from 'msgpackr';
import { PAIR_CELLS_MIN, PAIR_GROUP_ENTRIES_MAX, PAIR_ROWS_PER_CELL, PAIR_TABLES_MAX } from '../../base/limits.js';
import { TAG_BOOL, TAG_NULL, TAG_NUM, TAG_STR, type Column, type ColumnChunk } from '../chunk.js';
import { zstdCompress, zstdDecompressColumn } from './arrow.js';
import type { PairTables } from './footer.js';
import type { ValueCounts } from './sketches.js';

/** A pair table as read: per cell, F's slot, G's string (an index in `strings`) and its rows. */
export interface PairTable {
  readonly strings: readonly string[];
  readonly slots: Uint32Array;
  readonly indexes: Uint32Array;
  readonly rows: Uint32Array;
}

/** The pair tables of `chunk` (see above): tables[F][G] for F a column `distinct` lists. */
export function computePairTables(chunk: ColumnChunk, distinct: Record<string, ValueCounts>): PairTables {
  const rows = chunk.rows;
  const groups: [string, Column][] = [];
  for (const [path, column] of chunk.columns) {
    // G's strings repeat, at least PAIR_ROWS_PER_CELL rows a string on average: a column of ids
    // in a small segment (a few thousand rows, each id once) has a dictionary under
    // PAIR_GROUP_ENTRIES_MAX too, and a table of it would be a row a cell.
    const entries = column.dict?.length ?? Infinity;
    if (column.str !== null && entries <= PAIR_GROUP_ENTRIES_MAX && entries * PAIR_ROWS_PER_CELL <= rows && everyString(column, rows)) groups.push([path, column]);
  }
  const candidates: { f: string; g: string; entries: number; size: number }[] = [];
  for (const [f, counts] of Object.entries(distinct)) {
    for (const [g, column] of groups) {
      if (g !== f) candidates.push({ f, g, entries: column.dict!.length, size: (counts.values.length + 2) * column.dict!.length });
    }
  }
  const tables: Record<string, Record<string, Uint8Array>> = {};
  if (candidates.length === 0) return tables;
  candidates.sort((a, b) => a.size - b.size);
  // A flushed segment of a few tens of thousands of rows (a day split by a flush) gets the
  // tables a day of it merged would: 5 devices by 1,000 paths is ~5,000 cells whatever the rows.
  // (One of fewer rows than that is scanned in no time.)
  let budget = Math.floor(rows / PAIR_ROWS_PER_CELL);
  if (rows >= PAIR_CELLS_MIN) budget = Math.max(budget, PAIR_CELLS_MIN);
  const slotsOf = new Map<string, Uint16Array>();
  const tried = candidates.slice(0, PAIR_TABLES_MAX);
  const all = new Int32Array(Math.max(...tried.map((candidate) => candidate.size)));
  const made = new Set<string>();
  for (const { f, g, entries, size } of tried) {
    // One table a pair of columns: (G, F) answers all that (F, G) would.
    if (budget === 0) break;
    if (made.has(JSON.stringify([g, f]))) continue;
    let slots = slotsOf.get(f);
    if (slots === undefined) slotsOf.set(f, slots = slotsFor(chunk.columns.get(f)!, distinct[f], rows));
    const group = chunk.columns.get(g)!;
    const counts = all.subarray(0, size);
    counts.fill(0);
    const str = group.str!;
    if (str instanceof Int8Array) countPairs8(slots, str, entries, counts, rows);
    else if (str instanceof Int16Array) countPairs16(slots, str, entries, counts, rows);
    else countPairs32(slots, str, entries, counts, rows);
    let cells = 0;
    for (let k = 0; k < size; k++) cells += +(counts[k] !== 0);
    if (cells > budget) continue;
    budget -= cells;
    made.add(JSON.stringify([f, g]));
    (tables[f] ??= {})[g] = encodeTable(counts, cells, entries, group.dict!);
  }
  return tables;
}

// One loop per code width, each its own function (V8 keeps type feedback per function: one loop
// fed Int8, Int16 and Int32 codes compiles a polymorphic load; query/eval/code-match.ts).
function countPairs8(slots: Uint16Array, str: Int8Array, entries: number, counts: Int32Array, rows: number): void {
  for (let row = 0; row < rows; row++) counts[slots[row] * entries + str[row]]++;
}

function countPairs16(slots: Uint16Array, str: Int16Array, entries: number, counts: Int32Array, rows: number): void {
  for (let row = 0; row < rows; row++) counts[slots[row] * entries + str[row]]++;
}

function countPairs32(slots: Uint16Array, str: Int32Array, entries: number, counts: Int32Array, rows: number): void {
  for (let row = 0; row < rows; row++) counts[slots[row] * entries + str[row]]++;
}

/**
 * Decodes one table; null when it does not decode or does not describe `rows` rows over F's
 * `width` values (its segment is then scanned: the sidecar's checksum passed, so only a writer's
 * fault could make one, and the scan's answer is right either way).
 */
export function decodePairTable(bytes: Uint8Array, width: number, rows: number): PairTable | null {
  let decoded: { strings?: unknown; cells?: unknown };
  try {
    // The native decoder (arrow.ts zstdDecompressColumn, bounded per turn): a table of 5 devices
    // by 1,000 paths is ~65 KB decoded, which the WebAssembly build took ~0.2-0.5 ms a table for,
    // most of a pair-table answer's first run.
    decoded = unpack(zstdDecompressColumn(bytes)) as typeof decoded;
  } catch {
    return null;
  }
  const { strings, cells } = decoded ?? {};
  if (!Array.isArray(strings) || !strings.every((s) => typeof s === 'string') || !(cells instanceof Uint8Array) || cells.byteLength % 12 !== 0) return null;
  const view = new DataView(cells.buffer, cells.byteOffset, cells.byteLength);
  const n = cells.byteLength / 12;
  const slots = new Uint32Array(n);
  const indexes = new Uint32Array(n);
  const counts = new Uint32Array(n);
  let total = 0;
  for (let k = 0; k < n; k++) {
    slots[k] = view.getUint32(12 * k, true);
    indexes[k] = view.getUint32(12 * k + 4, true);
    counts[k] = view.getUint32(12 * k + 8, true);
    if (slots[k] >= width + 2 || indexes[k] >= strings.length) return null;
    total += counts[k];
  }
  return total === rows ? { strings, slots, indexes, rows: counts } : null;
}

function encodeTable(counts: Int32Array, cells: number, entries: number, dict: readonly string[]): Uint8Array {
  const bytes = new Uint8Array(12 * cells);
  const view = new DataView(bytes.buffer);
  // G's strings that occur, each once (a merged dictionary may hold a string twice).
  const indexOf = new Map<string, number>();
  const strings: string[] = [];
  let at = 0;
  for (let k = 0; k < counts.length; k++) {
    if (counts[k] === 0) continue;
    const value = dict[k % entries];
    let index = indexOf.get(value);
    if (index === undefined) indexOf.set(value, index = strings.push(value) - 1);
    view.setUint32(at, Math.floor(k / entries), true);
    view.setUint32(at + 4, index, true);
    view.setUint32(at + 8, counts[k], true);
    at += 12;
  }
  return zstdCompress(pack({ strings, cells: bytes }));
}

/** Per row, its slot of F (see the module's note). */
function slotsFor(column: Column, counts: ValueCounts, rows: number): Uint16Array {
  const width = counts.values.length;
  const strings = new Map<string, number>();
  const numbers: [number, number][] = [];
  let yes = width + 1;
  let no = width + 1;
  counts.values.forEach((value, i) => {
    if (typeof value === 'string') strings.set(value, i);
    else if (typeof value === 'number') numbers.push([value, i]);
    else if (value === true) yes = i;
    else if (value === false) no = i;
  });
  const ofCode = column.dict === null ? null : Int32Array.from(column.dict, (value) => strings.get(value) ?? width);
  // Numbers by binary search over the (at most DISTINCT_VALUES_MAX) listed ones: no Map a row.
  numbers.sort((a, b) => a[0] - b[0]);
  const sorted = Float64Array.from(numbers, ([value]) => value);
  const slotOf = Int32Array.from(numbers, ([, slot]) => slot);
  const slots = new Uint16Array(rows);
  const { tags, num, str } = column;
  for (let row = 0; row < rows; row++) {
    const tag = tags[row];
    if (tag === TAG_STR) slots[row] = ofCode![str![row]];
    else if (tag === TAG_NUM) slots[row] = slotOf[lowerBound(sorted, num![row])];
    else if (tag === TAG_BOOL) slots[row] = num![row] !== 0 ? yes : no;
    else slots[row] = tag === TAG_NULL ? width : width + 1; // missing (no list row: computeDistinct lists none)
  }
  return slots;
}

/** The first index of `sorted` whose value is not below `value` (-0 finds 0). */
function lowerBound(sorted: Float64Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function everyString(column: Column, rows: number): boolean {
  const tags = column.tags;
  for (let row = 0; row < rows; row++) if (tags[row] !== TAG_STR) return false;
  return true;
}
