/**
 * Answers a segment wholly inside the timeframe from its sidecar's value counts (the few distinct
 * values of a column and the rows holding each, storage/segment/sketches.ts) when the whole plan
 * reads that one column: counts filtered and/or grouped by it, select_unique and count_unique of
 * it. The counts become a summary column of one row per value (plus one null row and one missing
 * row), which the ordinary filter, group_by and aggregate code runs over, each summary row
 * weighing as many rows as hold its value. A segment without counts for the column is scanned.
 */
import {
  TAG_BOOL, TAG_MISSING, TAG_NULL, TAG_NUM, TAG_STR, uniformTags,
  type Column, type ColumnChunk, type Primitive, type ScanSource, type SegmentRef,
} from '../../storage/chunk.js';
import type { FooterWithSketches } from '../../storage/segment/footer.js';
import { decodePairTable } from '../../storage/segment/pair-counts.js';
import type { ValueCounts } from '../../storage/segment/sketches.js';
import type { ChunkCache } from './chunk-cache.js';
import type { Aggregator } from '../aggregate/index.js';
import { CountAggregator } from '../aggregate/index.js';
import type { AverageAggregator } from '../aggregate/average.js';
import type { SumAggregator } from '../aggregate/sum.js';
import type { ExtremumAggregator } from '../aggregate/extremum.js';
import { TIME_PATHS } from '../plan/filter.js';
import { compileFilters, Scratch } from '../eval/filter-eval.js';
import type { GroupTable } from '../eval/group-by.js';
import { bucketOf } from '../plan/interval.js';
import type { AggregatePlan } from '../plan/plan.js';
import { filterPaths, identityOf, type ExecEnv } from './scan.js';

/** A segment's column as one row per distinct value; weights[r] rows hold row r's value. */
import type { Summary } from '../eval/columns.js';

/**
 * The per-segment answer for `plan`, or undefined when the plan reads more than one column (or a
 * time column) or anything else rules it out. `rowsPerCell` is the cell row counter when it is
 * not one of `aggregators`.
 */
export function valueCountsAnswer(
  plan: AggregatePlan, source: ScanSource, env: ExecEnv, aggregators: readonly Aggregator[],
  rowsPerCell: CountAggregator | null, groups: GroupTable | null, edges: Float64Array | null,
): ((ref: SegmentRef) => boolean) | undefined {
  const cache = env.cache;
  if (cache === null || (source.deletes?.length ?? 0) > 0) return undefined;
  const onlyCounts = plan.aggregates.every((spec) => spec.kind === 'count');
  const spec = plan.aggregates[0];
  const distinct = plan.aggregates.length === 1 && (spec.kind === 'select_unique' || spec.kind === 'count_unique');
  if (!onlyCounts && !distinct) return undefined;
  const paths = new Set([...filterPaths(plan.filters), ...(plan.groupBy ?? [])]);
  if (distinct) paths.add(spec.targetProperty!);
  if (paths.size > 2 || (plan.groupBy?.length ?? 0) > 1) return undefined;
  // Counts over buckets read no column at all: a segment inside one bucket adds its rows there.
  // Two columns are answered from a pair table of theirs (storage/segment/pair-counts.ts).
  const [path = null, other = null] = paths;
  const pairKey = other === null ? '' : pairKeyOf(path!, other);
  if ([...paths].some((p) => TIME_PATHS.has(p))) return undefined;
  const counters = onlyCounts ? aggregators as CountAggregator[] : [];
  const allCounters = rowsPerCell === null ? counters : [...counters, rowsPerCell];
  const buckets = edges === null ? 1 : edges.length - 1;
  const scratch = new Scratch();
  let selected = new Int32Array(0);
  let cells = new Int32Array(0);
  return (ref) => {
    const bucket = segmentBucket(edges, ref);
    if (bucket === -1) return false;
    if (path === null) {
      for (const counter of allCounters) counter.addRows(bucket, ref.footer.rows);
      return true;
    }
    const stats = ref.footer.columns[path];
    let summary: Summary | null = null;
    if (other !== null) {
      const footer = cache.footer(ref);
      // Kept in the cache once made (its table is read from the sidecar file: footer.ts).
      if (footer.values[path] !== undefined || footer.values[other] !== undefined) summary = cache.derived(ref, pairKey, () => pairSummary(ref, path, other, footer, cache));
    }
    else if (stats === undefined) summary = summarize(path, { values: [], rows: [] }, 0, ref.footer.rows);
    else {
      const counts = cache.footer(ref).values[path];
      if (counts !== undefined) summary = env.views.summary(counts, () => summarize(path, counts, stats.present, ref.footer.rows));
    }
    if (summary === null) return false;
    const rows = summary.chunk.rows;
    if (selected.length < rows) {
      selected = new Int32Array(rows);
      cells = new Int32Array(rows);
    }
    let idx = identityOf(rows);
    let n = rows;
    if (plan.filters.length > 0) {
      n = compileFilters(plan.filters, summary.chunk, env.views, scratch)(idx, selected, n);
      idx = selected;
    }
    if (groups !== null) {
      groups.mapRows(summary.chunk, env.views, idx, n, cells);
      for (let k = 0; k < n; k++) cells[k] = cells[k] * buckets + bucket;
    } else cells.fill(bucket, 0, n);
    for (const counter of allCounters) {
      for (let k = 0; k < n; k++) counter.addRows(cells[k], summary.weights[idx[k]]);
    }
    if (distinct) {
      const cellCount = (groups?.size ?? 1) * buckets;
      const column = summary.chunk.columns.get(spec.targetProperty!)!;
      aggregators[0].update({
        column, idx, n, cells: cellCount === 1 ? null : cells, cellCount, dense: false, tagMask: env.views.tagMask(column),
      });
    }
    return true;
  };
}

/**
 * The per-segment answer for a sum, average or count grouped by one column, with no filter, from
 * the sidecar's per-value sums (sketches.ts computeGroupStats), or undefined when the plan is not
 * one. A segment has those sums only where a scan would sum it per dictionary code (execute.ts
 * CodeSums: every row of the group column a string, every row of each target a number), and they
 * are that scan's sums to the last bit; a segment without them, or across buckets, is scanned.
 */
export function groupSumsAnswer(
  plan: AggregatePlan, source: ScanSource, env: ExecEnv, aggregators: readonly Aggregator[],
  rowsPerCell: CountAggregator | null, groups: GroupTable | null, edges: Float64Array | null,
): ((ref: SegmentRef) => boolean) | undefined {
  const cache = env.cache;
  if (cache === null || groups === null || groups.paths.length !== 1 || plan.filters.length > 0) return undefined;
  if ((source.deletes?.length ?? 0) > 0) return undefined;
  const kinds = plan.aggregates.map((spec) => spec.kind);
  if (!kinds.every((kind) => kind === 'count' || kind === 'sum' || kind === 'average') || kinds.every((kind) => kind === 'count')) return undefined;
  const path = groups.paths[0];
  if (TIME_PATHS.has(path) || plan.aggregates.some((spec) => spec.targetProperty !== null && TIME_PATHS.has(spec.targetProperty))) return undefined;
  const buckets = edges === null ? 1 : edges.length - 1;
  let cells = new Int32Array(0);
  return (ref) => {
    const bucket = segmentBucket(edges, ref);
    if (bucket === -1) return false;
    const stats = ref.footer.columns[path];
    const counts = stats === undefined ? undefined : cache.footer(ref).values[path];
    const sums = counts?.sums;
    if (counts === undefined || sums === undefined) return false;
    if (plan.aggregates.some((spec) => spec.kind !== 'count' && sums[spec.targetProperty!] === undefined)) return false;
    const summary = env.views.summary(counts, () => summarize(path, counts, stats!.present, ref.footer.rows));
    const rows = summary.chunk.rows;
    if (cells.length < rows) cells = new Int32Array(rows);
    groups.mapRows(summary.chunk, env.views, identityOf(rows), rows, cells);
    plan.aggregates.forEach((spec, a) => {
      if (spec.kind === 'count') {
        for (let i = 0; i < counts.values.length; i++) (aggregators[a] as CountAggregator).addRows(cells[i] * buckets + bucket, counts.rows[i]);
        return;
      }
      const summing = aggregators[a] as AverageAggregator | SumAggregator;
      const perValue = sums[spec.targetProperty!];
      summing.gather.addNumeric(ref.footer.rows);
      for (let i = 0; i < counts.values.length; i++) summing.addCell(cells[i] * buckets + bucket, perValue[i], counts.rows[i]);
    });
    if (rowsPerCell !== null) for (let i = 0; i < counts.values.length; i++) rowsPerCell.addRows(cells[i] * buckets + bucket, counts.rows[i]);
    return true;
  };
}

/**
 * The per-segment answer for a minimum or maximum (with counts, if any) whose filters all test one
 * column, with no group or interval, from that column's per-value least and greatest numbers in
 * the sidecar (sketches.ts computeGroupStats): the filters pick the values, as they pick rows in
 * valueCountsAnswer, and the extreme is the best of theirs. A segment without them is scanned.
 */
export function groupExtremesAnswer(
  plan: AggregatePlan, source: ScanSource, env: ExecEnv, aggregators: readonly Aggregator[],
  rowsPerCell: CountAggregator | null,
): ((ref: SegmentRef) => boolean) | undefined {
  const cache = env.cache;
  if (cache === null || plan.groupBy !== null || plan.buckets !== null || plan.filters.length === 0) return undefined;
  if ((source.deletes?.length ?? 0) > 0) return undefined;
  const kinds = plan.aggregates.map((spec) => spec.kind);
  if (!kinds.every((kind) => kind === 'count' || kind === 'minimum' || kind === 'maximum') || kinds.every((kind) => kind === 'count')) return undefined;
  const paths = new Set(filterPaths(plan.filters));
  if (paths.size !== 1) return undefined;
  const path = [...paths][0];
  if (TIME_PATHS.has(path) || plan.aggregates.some((spec) => spec.targetProperty !== null && TIME_PATHS.has(spec.targetProperty))) return undefined;
  const scratch = new Scratch();
  let selected = new Int32Array(0);
  return (ref) => {
    const stats = ref.footer.columns[path];
    const counts = stats === undefined ? undefined : cache.footer(ref).values[path];
    const { least, greatest } = counts ?? {};
    if (counts === undefined || least === undefined || greatest === undefined) return false;
    if (plan.aggregates.some((spec) => spec.kind !== 'count' && least[spec.targetProperty!] === undefined)) return false;
    const summary = env.views.summary(counts, () => summarize(path, counts, stats!.present, ref.footer.rows));
    const rows = summary.chunk.rows;
    if (selected.length < rows) selected = new Int32Array(rows);
    const n = compileFilters(plan.filters, summary.chunk, env.views, scratch)(identityOf(rows), selected, rows);
    let present = 0;
    for (let k = 0; k < n; k++) present += summary.weights[selected[k]];
    plan.aggregates.forEach((spec, a) => {
      if (spec.kind === 'count') {
        (aggregators[a] as CountAggregator).addRows(0, present);
        return;
      }
      if (n === 0) return;
      const max = spec.kind === 'maximum';
      const perValue = (max ? greatest : least)[spec.targetProperty!];
      let best = perValue[selected[0]];
      for (let k = 1; k < n; k++) best = max ? Math.max(best, perValue[selected[k]]) : Math.min(best, perValue[selected[k]]);
      (aggregators[a] as ExtremumAggregator).addSummarized(best, present);
    });
    rowsPerCell?.addRows(0, present);
    return true;
  };
}

/** The interval bucket a segment lies wholly inside (0 without intervals), or -1 when it spans two. */
function segmentBucket(edges: Float64Array | null, ref: SegmentRef): number {
  if (edges === null) return 0;
  const bucket = bucketOf(edges, ref.footer.tsMin);
  return bucket !== -1 && bucket === bucketOf(edges, ref.footer.tsMax) ? bucket : -1;
}

function summarize(
  path: string, counts: ValueCounts, present: number, segmentRows: number,
): Summary {
  let listed = 0;
  for (const rows of counts.rows) listed += rows;
  const nulls = present - listed;
  const missing = segmentRows - present;
  const width = counts.values.length;
  // One row per value, then one for the null rows and one for the rows without the column.
  const slots = counts.values.map((_, i) => i);
  const weights = [...counts.rows];
  if (nulls > 0) {
    slots.push(width);
    weights.push(nulls);
  }
  if (missing > 0) {
    slots.push(width + 1);
    weights.push(missing);
  }
  const column = summaryColumn(path, counts.values, slots);
  return { chunk: summaryChunk(slots.length, [column]), column, weights: Float64Array.from(weights) };
}

/** The chunk cache's name of the summary of the pair table of `a` and `b`, either way round (a segment has at most one). */
function pairKeyOf(a: string, b: string): string {
  return `pairs\0${[a, b].sort().join('\0')}`;
}

/**
 * Decodes the summaries of a segment's pair tables into the chunk cache's free room (never
 * evicting), smallest first, as its columns are warmed (worker.ts): the first query answered
 * from them then reads no sidecar and decodes nothing (bench/scale at 10M: ~0.5-2 ms a table on
 * a query's first run, most of a first run answered from tables). 'paused' before the next table
 * once `stop` says a query waits (called again, it goes on with the tables not yet kept).
 */
export function warmPairSummaries(cache: ChunkCache, ref: SegmentRef, stop: () => boolean = () => false): 'done' | 'paused' {
  const footer = cache.footer(ref);
  const pairs = footer.pairs;
  const tables = Object.entries(pairs).flatMap(([f, byG]) => Object.entries(byG).map(([g, bytes]) => ({ f, g, bytes: bytes.byteLength })));
  tables.sort((x, y) => x.bytes - y.bytes);
  for (const { f, g } of tables) {
    if (cache.hasDerived(ref, pairKeyOf(f, g))) continue;
    if (stop()) return 'paused';
    if (cache.warmDerived(ref, pairKeyOf(f, g), () => pairSummary(ref, f, g, footer, cache, pairs)) === 'full') return 'done';
  }
  return 'done';
}

/**
 * The summary of a pair table between `a` and `b` (either way round) in a segment's sidecar: one
 * row per (value, string) pair that occurs, weighing the rows holding it; null when the segment
 * has no such table (or one that does not add up to its rows: then it is scanned). `pairs`: the
 * sidecar's tables, read from its file (footer.ts: the footer keeps none) when not given. Its
 * strings are the cache's shared copies (internStrings).
 */
function pairSummary(
  ref: SegmentRef, a: string, b: string, footer: FooterWithSketches, cache: ChunkCache, pairs = footer.pairs,
): Summary | null {
  for (const [f, g] of [[a, b], [b, a]]) {
    const counts = footer.values[f];
    const bytes = pairs[f]?.[g];
    if (counts === undefined || bytes === undefined) continue;
    const table = decodePairTable(bytes, counts.values.length, ref.footer.rows);
    if (table === null) return null;
    const column = summaryColumn(f, counts.values, table.slots);
    // As narrow as the strings allow: the summary is kept in the chunk cache (derived()).
    const n = table.strings.length;
    const codes = n <= 0x80 ? new Int8Array(table.indexes) : n <= 0x8000 ? new Int16Array(table.indexes) : Int32Array.from(table.indexes);
    const strings: Column = { path: g, tags: uniformTags(TAG_STR, table.slots.length), num: null, str: codes, dict: cache.internStrings(table.strings), lists: null };
    return { chunk: summaryChunk(table.slots.length, [column, strings]), column, weights: Float64Array.from(table.rows) };
  }
  return null;
}

/** A column of `path` whose row r holds values[slots[r]]: null for slot values.length, missing past it. */
function summaryColumn(path: string, values: readonly Primitive[], slots: ArrayLike<number>): Column {
  const rows = slots.length;
  const tags = new Uint8Array(rows);
  // Numbers only where a value is one: every reader of num reads it under a number's or a boolean's tag.
  const num = values.some((value) => typeof value !== 'string') ? new Float64Array(rows) : null;
  // Codes as narrow as the values allow (at most 256 listed: sketches.ts), -1 where not a string.
  const str = values.length < 0x80 ? new Int8Array(rows) : new Int16Array(rows);
  const dict: string[] = [];
  const codes = values.map((value) => (typeof value === 'string' ? dict.push(value) - 1 : -1));
  for (let row = 0; row < rows; row++) {
    const slot = slots[row];
    const value = values[slot];
    if (slot >= values.length) tags[row] = slot === values.length ? TAG_NULL : TAG_MISSING;
    else if (typeof value === 'string') {
      tags[row] = TAG_STR;
      str[row] = codes[slot];
    } else if (typeof value === 'number') {
      tags[row] = TAG_NUM;
      num![row] = value;
    } else {
      tags[row] = TAG_BOOL;
      num![row] = value ? 1 : 0;
    }
  }
  return { path, tags, num, str, dict, lists: null };
}

function summaryChunk(rows: number, columns: readonly Column[]): ColumnChunk {
  // Its rows have no instants of their own; nothing that reads one runs over a summary. A view
  // of one run of zeros, shared: summaries are kept in the chunk cache (derived()).
  if (zeros.length < rows) zeros = new Float64Array(Math.max(rows, 2 * zeros.length));
  const none = zeros.subarray(0, rows);
  return { rows, ts: none, createdAt: none, seq: none, columns: new Map(columns.map((column) => [column.path, column])) };
}

/** Zeros every summary's instants are a view of (summaryChunk); never written. */
let zeros = new Float64Array(4096);
