/**
 * Runs a Plan over ScanSources: aggregate plans here (selection → group and bucket cells →
 * partial states), extraction and funnel in their own files. Returns the full response body.
 * Pure computation over chunks: the caller decides on which thread, with which limits.
 */
import {
  dictLength, entryReader, numbersOf, storedNumbers, TAG_NUM, TAG_STR, type Codes, type Column, type ColumnChunk, type ScaledNumbers, type ScanSource, type SegmentRef,
} from '../../storage/chunk.js';
import { createAggregator, CountAggregator, type Aggregator } from '../aggregate/index.js';
import type { AverageAggregator } from '../aggregate/average.js';
import type { ExtremumAggregator } from '../aggregate/extremum.js';
import { addByCell, addNumbersByCell } from '../../storage/cell-sums.js';
import type { SumAggregator } from '../aggregate/sum.js';
import { AggregateTag } from '../aggregate/types.js';
import type { StateReader, StateWriter } from '../eval/state-io.js';
import { runExtraction } from './extraction.js';
import { countUniqueFromSketches } from './footer-sketch.js';
import { runFunnel } from './funnel.js';
import { COUNT_LANES_ENTRIES_MAX } from '../../base/limits.js';
import { countMatching } from '../eval/code-match.js';
import { codeMatchOf } from '../eval/filter-eval.js';
import { GroupTable } from '../eval/group-by.js';
import { bucketOf } from '../plan/interval.js';
import type { AggregatePlan, Plan } from '../plan/plan.js';
import { shapeAggregate, type AggregateOutcome } from './result.js';
import { scanSteps, ScanBuffers, type ExecEnv, type Selected } from './scan.js';
import { runSteps, type Steps } from './steps.js';
import { groupExtremesAnswer, groupSumsAnswer, valueCountsAnswer } from './value-counts.js';

export type { ExecEnv } from './scan.js';

/**
 * Runs `plan` as steps (steps.ts): an aggregate's, one a segment; an extraction or a funnel runs
 * in one. `sources` holds one source per funnel step, else exactly one.
 */
export function* executeSteps(plan: Plan, sources: readonly ScanSource[], env: ExecEnv): Steps<Record<string, unknown>> {
  const startedMs = Date.now();
  const buffers = new ScanBuffers();
  let body: Record<string, unknown>;
  let propertiesPerEvent = 0;
  if (plan.kind === 'aggregate') {
    body = shapeAggregate(plan, yield* aggregateSteps(plan, sources[0], env, buffers));
    propertiesPerEvent = propertiesRead(plan);
  } else if (plan.kind === 'extraction') {
    body = runExtraction(plan, sources[0], env, buffers);
    propertiesPerEvent = Object.keys(sources[0].schema).length;
  } else {
    body = runFunnel(plan, sources, env, buffers);
    propertiesPerEvent = 1;
  }
  if (plan.includeMetadata) addMetadata(body, startedMs, buffers.eventsScanned, propertiesPerEvent);
  return body;
}

/** Adds execution_metadata to a body (include_metadata). */
export function addMetadata(
  body: Record<string, unknown>, startedMs: number, eventsScanned: number, propertiesPerEvent: number,
): void {
  body.execution_metadata = {
    total_processing_time: (Date.now() - startedMs) / 1000,
    events_scanned: eventsScanned,
    properties_per_event: propertiesPerEvent,
    total_properties_scanned: eventsScanned * propertiesPerEvent,
  };
}

/** The response body of an aggregate plan from merged partial states (fan-out). */
export function finishAggregate(
  plan: AggregatePlan, outcome: AggregateOutcome, eventsScanned: number, startedMs: number,
): Record<string, unknown> {
  for (const aggregator of outcome.aggregators) aggregator.check();
  const body = shapeAggregate(plan, outcome);
  if (plan.includeMetadata) addMetadata(body, startedMs, eventsScanned, propertiesRead(plan));
  return body;
}

function propertiesRead(plan: AggregatePlan): number {
  const paths = new Set<string>(['svc.timestamp']);
  for (const spec of plan.aggregates) if (spec.targetProperty) paths.add(spec.targetProperty);
  for (const path of plan.groupBy ?? []) paths.add(path);
  const visit = (nodes: AggregatePlan['filters']): void => {
    for (const node of nodes) {
      if (node.kind === 'or') visit(node.any);
      else paths.add(node.path);
    }
  };
  visit(plan.filters);
  return paths.size;
}

/**
 * Scans `source` into partial states: one per aggregate plus row counts per cell. With `whole`
 * (fan-out: `source` is one worker's share of `whole`) the footer-sketch shortcut looks at the
 * whole source and the whole-query checks are left to the coordinator's merged states.
 */
export function aggregateOver(
  plan: AggregatePlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers,
  whole: ScanSource | null = null,
): AggregateOutcome {
  return runSteps(aggregateSteps(plan, source, env, buffers, whole));
}

/** aggregateOver as steps (steps.ts): one after each segment it reads. */
export function* aggregateSteps(
  plan: AggregatePlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers,
  whole: ScanSource | null = null,
): Steps<AggregateOutcome> {
  const aggregators = plan.aggregates.map((spec) => createAggregator(spec, env.limits, env.views));
  // A count aggregate already counts rows per cell; reuse it rather than count twice.
  const counter = aggregators.find((a): a is CountAggregator => a instanceof CountAggregator);
  const rowsPerCell = counter ?? new CountAggregator();
  const groups = plan.groupBy === null ? null : new GroupTable(plan.groupBy, env.limits.groupsMax);
  const edges = plan.buckets === null ? null : Float64Array.from(plan.buckets.edges);
  const bucketCount = edges === null ? 1 : edges.length - 1;
  let cells = new Int32Array(0);
  const extraCounter = counter === undefined ? rowsPerCell : null;
  const answerFromFooter = footerAnswer(plan, source, aggregators, extraCounter) ??
    valueCountsAnswer(plan, source, env, aggregators, extraCounter, groups, edges) ??
    groupSumsAnswer(plan, source, env, aggregators, extraCounter, groups, edges) ??
    groupExtremesAnswer(plan, source, env, aggregators, extraCounter);
  // Counts grouped by one property: a chunk whose values are all strings is counted per
  // dictionary code, and each code's count is added to its group once (no per-row group ids).
  const countsByCode = groups !== null && groups.paths.length === 1 &&
    plan.aggregates.every((spec) => spec.kind === 'count') ? new CodeCounts() : null;
  // Sums, averages and counts grouped by one property, every row of a chunk selected: summed
  // per dictionary code straight from the columns, then per code into its group.
  const sumsByCode = countsByCode === null && groups !== null && groups.paths.length === 1 &&
    plan.aggregates.every((spec) => spec.kind === 'count' || spec.kind === 'sum' || spec.kind === 'average')
    ? new CodeSums(counter === undefined ? rowsPerCell : null) : null;
  const visit = ({ chunk, idx, n, inRange }: Selected): void => {
    if (n === 0) return;
    const dense = idx === buffers.identity && n === chunk.rows && inRange === n;
    if (countsByCode !== null &&
      countsByCode.count(chunk, env, idx, n, dense, groups!, edges, aggregators as CountAggregator[])) return;
    if (sumsByCode !== null && dense && sumsByCode.run(chunk, env, n, groups!, edges, plan, aggregators)) return;
    let cellCount = 1;
    let cellIds: Int32Array | null = null;
    if (groups !== null || edges !== null) {
      if (cells.length < n) cells = new Int32Array(Math.max(n, 1024));
      cellIds = cells;
      if (groups !== null) groups.mapRows(chunk, env.views, idx, n, cells);
      if (edges !== null) assignBuckets(chunk, env, edges, idx, n, cells, groups !== null);
      cellCount = (groups?.size ?? 1) * bucketCount;
    }
    const input = { column: undefined, idx, n, cells: cellIds, cellCount, dense, tagMask: 0 };
    if (counter === undefined) rowsPerCell.update(input);
    for (let a = 0; a < aggregators.length; a++) {
      const target = plan.aggregates[a].targetProperty;
      const column = target === null ? undefined : env.views.column(chunk, target);
      const tagMask = column === undefined ? 0 : env.views.tagMask(column);
      aggregators[a].update({ ...input, column, tagMask });
    }
  };
  const estimate = countUniqueFromSketches(plan, whole ?? source, env, buffers);
  if (estimate !== null) {
    return { aggregators: [new FixedAggregator(estimate)], rowsPerCell, groups, bucketCount };
  }
  const columns = [...(plan.groupBy ?? [])];
  for (const spec of plan.aggregates) if (spec.targetProperty !== null) columns.push(spec.targetProperty);
  // A filter fused with those counts: whole segments counted in one pass over the stored codes.
  const countWhole = countsByCode === null ? undefined : (filtered: ColumnChunk, rest: () => ColumnChunk): boolean => {
    const filter = codeMatchOf(plan.filters, filtered, env.views);
    if (filter === null) return false;
    if (filter === 'none') return true;
    return countsByCode.countMatching(rest(), env, filter, groups!, edges, aggregators as CountAggregator[]);
  };
  yield* scanSteps(source, { range: plan.range, filters: plan.filters, columns, answerFromFooter, countWhole },
    env, buffers, visit);
  if (whole === null) for (const aggregator of aggregators) aggregator.check();
  return { aggregators: aggregators as Aggregator[], rowsPerCell, groups, bucketCount };
}

/** cells[k] = group * buckets + bucket of row idx[k] (group 0 without group_by). */
function assignBuckets(
  chunk: ColumnChunk, env: ExecEnv, edges: Float64Array, idx: Int32Array, n: number,
  cells: Int32Array, grouped: boolean,
): void {
  const buckets = edges.length - 1;
  const ts = chunk.ts;
  // A chunk (a day's segment, say) often lies inside one bucket: no search per row then.
  const [tsMin, tsMax] = env.views.tsRange(chunk);
  const first = bucketOf(edges, tsMin);
  if (first !== -1 && first === bucketOf(edges, tsMax)) {
    if (!grouped) cells.fill(first, 0, n);
    else for (let k = 0; k < n; k++) cells[k] = cells[k] * buckets + first;
    return;
  }
  for (let k = 0; k < n; k++) {
    const b = bucketOf(edges, ts[idx[k]]);
    cells[k] = grouped ? cells[k] * buckets + b : b;
  }
}

/** Row counts per dictionary code of one chunk's group_by column, added per code to its group. */
class CodeCounts {
  private counts = new Int32Array(0);

  /** False when the chunk does not qualify (not all strings, or across buckets). */
  count(
    chunk: ColumnChunk, env: ExecEnv, idx: Int32Array, n: number, dense: boolean, groups: GroupTable,
    edges: Float64Array | null, aggregators: readonly CountAggregator[],
  ): boolean {
    const target = groupColumn(chunk, env, groups, edges);
    if (target === null) return false;
    const { column, str, bucket } = target;
    const counts = this.zeroed(dictLength(column));
    if (dense) for (let i = 0; i < n; i++) counts[str[i]]++;
    else for (let k = 0; k < n; k++) counts[str[idx[k]]]++;
    this.addToGroups(column, n, groups, edges === null ? 1 : edges.length - 1, bucket, aggregators);
    return true;
  }

  /**
   * count for a whole chunk under one filter reduced to a match table over its column's codes
   * (filter-eval.ts codeMatchOf): the filter and the count in one pass, no row index written.
   */
  countMatching(
    chunk: ColumnChunk, env: ExecEnv, filter: { codes: Codes; match: Uint8Array }, groups: GroupTable,
    edges: Float64Array | null, aggregators: readonly CountAggregator[],
  ): boolean {
    const target = groupColumn(chunk, env, groups, edges);
    if (target === null) return false;
    const { column, str, bucket } = target;
    const entries = dictLength(column);
    const counts = this.zeroed(entries <= COUNT_LANES_ENTRIES_MAX ? 4 * entries : entries);
    countMatching(filter.codes, str, filter.match, counts, chunk.rows, entries);
    this.addToGroups(column, chunk.rows, groups, edges === null ? 1 : edges.length - 1, bucket, aggregators);
    return true;
  }

  private zeroed(size: number): Int32Array {
    if (this.counts.length < size) this.counts = new Int32Array(Math.max(size, 2 * this.counts.length));
    this.counts.fill(0, 0, size);
    return this.counts;
  }

  /** Each code's count (of `column`, in a chunk of `rows` rows) added to its group's cell. */
  private addToGroups(
    column: Column, rows: number, groups: GroupTable, buckets: number, bucket: number,
    aggregators: readonly CountAggregator[],
  ): void {
    const counts = this.counts;
    const entry = entryReader(column, rows);
    for (let code = 0; code < dictLength(column); code++) {
      const count = counts[code];
      if (count === 0) continue;
      const cell = groups.idOfCode(column, code, entry) * buckets + bucket;
      for (const aggregator of aggregators) aggregator.addRows(cell, count);
    }
  }
}

/**
 * The chunk's group_by column, its codes and the chunk's bucket when CodeCounts can count it: every
 * row a string, every row in one bucket; else null.
 */
function groupColumn(
  chunk: ColumnChunk, env: ExecEnv, groups: GroupTable, edges: Float64Array | null,
): { column: Column; str: Codes; bucket: number } | null {
  const column = env.views.column(chunk, groups.paths[0]);
  if (column === undefined || column.str === null || env.views.tagMask(column) !== 1 << TAG_STR) return null;
  const bucket = chunkBucket(chunk, env, edges);
  return bucket === -1 ? null : { column, str: column.str, bucket };
}

/** The chunk's bucket when all its rows fall in one (0 without buckets), else -1. */
function chunkBucket(chunk: ColumnChunk, env: ExecEnv, edges: Float64Array | null): number {
  if (edges === null) return 0;
  const [tsMin, tsMax] = env.views.tsRange(chunk);
  const bucket = bucketOf(edges, tsMin);
  return bucket !== -1 && bucket === bucketOf(edges, tsMax) ? bucket : -1;
}

/**
 * Counts, minima, maxima, sums and averages, unfiltered and ungrouped, of a segment wholly inside
 * the timeframe from its footer: its rows, the least and greatest number of each target column
 * (storage/segment/footer.ts statsOf, over the very doubles a scan reads) and, when its every row
 * is a number, their sum as the scan adds them. A segment whose target holds no number (or, for
 * a sum, not only numbers) is read, so that a target with values but no number is still refused
 * (NumericGather.check); so is every segment of a source with deletes when anything but a count is
 * asked for, since a delete may hide a column's values (the rows a delete removes are never
 * answered from a footer: scan.ts).
 */
function footerAnswer(
  plan: AggregatePlan, source: ScanSource, aggregators: readonly Aggregator[], extraCounter: CountAggregator | null,
): ((ref: SegmentRef) => boolean) | undefined {
  if (plan.filters.length > 0 || plan.groupBy !== null || plan.buckets !== null) return undefined;
  const kinds = plan.aggregates.map((spec) => spec.kind);
  const summed = (kind: string) => kind === 'sum' || kind === 'average';
  if (!kinds.every((kind) => kind === 'count' || kind === 'minimum' || kind === 'maximum' || summed(kind))) return undefined;
  const numbers = kinds.some((kind) => kind !== 'count');
  if (numbers && (source.deletes?.length ?? 0) > 0) return undefined;
  return (ref) => {
    const stats = plan.aggregates.map((spec) => (spec.kind === 'count' ? null : ref.footer.columns[spec.targetProperty!]));
    if (numbers && stats.some((column, a) => kinds[a] !== 'count' && column?.numMin === undefined)) return false;
    if (stats.some((column, a) => summed(kinds[a]) && column?.numSum === undefined)) return false;
    aggregators.forEach((aggregator, a) => {
      const column = stats[a];
      if (column === null) (aggregator as CountAggregator).addRows(0, ref.footer.rows);
      else if (summed(kinds[a])) {
        // As the scan's dense path: every row a number (numSum is there only then).
        const summing = aggregator as AverageAggregator | SumAggregator;
        summing.gather.addNumeric(column!.present);
        summing.addCell(0, column!.numSum!, column!.present);
      } else (aggregator as ExtremumAggregator).addSummarized(aggregator.codecTag === AggregateTag.maximum ? column!.numMax! : column!.numMin!, column!.present);
    });
    extraCounter?.addRows(0, ref.footer.rows);
    return true;
  };
}

/**
 * Sums, averages and counts of a whole chunk grouped by one all-strings column, per dictionary
 * code: no group id per row and no gathered copy of the values.
 */
class CodeSums {
  private rows = new Float64Array(0);
  private sums = new Float64Array(0);
  private counts = new Float64Array(0);

  constructor(private readonly extraCounter: CountAggregator | null) {}

  /** False when the chunk does not qualify (group column not all strings, a target not all numbers, across buckets). */
  run(
    chunk: ColumnChunk, env: ExecEnv, n: number, groups: GroupTable, edges: Float64Array | null,
    plan: AggregatePlan, aggregators: readonly Aggregator[],
  ): boolean {
    const column = env.views.column(chunk, groups.paths[0]);
    if (column === undefined || column.str === null || env.views.tagMask(column) !== 1 << TAG_STR) return false;
    const bucket = chunkBucket(chunk, env, edges);
    if (bucket === -1) return false;
    const targets: (Float64Array | ScaledNumbers | null)[] = [];
    for (const spec of plan.aggregates) {
      if (spec.kind === 'count') {
        targets.push(null);
        continue;
      }
      const target = env.views.column(chunk, spec.targetProperty!);
      if (target === undefined || env.views.tagMask(target) !== 1 << TAG_NUM) return false;
      targets.push(storedNumbers(target) ?? numbersOf(target));
    }
    const str = column.str!;
    const width = dictLength(column);
    if (this.rows.length < width) {
      this.rows = new Float64Array(width);
      this.sums = new Float64Array(width);
      this.counts = new Float64Array(width);
    }
    const { rows, sums, counts } = this;
    const buckets = edges === null ? 1 : edges.length - 1;
    const entry = entryReader(column, n);
    const cellOf = (code: number) => groups.idOfCode(column, code, entry) * buckets + bucket;
    // Rows per code: every row is a number of each target here, so a target's counts are the
    // rows; counted on their own only when no target is summed.
    let rowsCounted = false;
    for (let a = 0; a < aggregators.length; a++) {
      const values = targets[a];
      if (values === null) continue;
      sums.fill(0, 0, width);
      counts.fill(0, 0, width);
      addNumbersByCell(values, str, n, width, sums, counts);
      const summing = aggregators[a] as AverageAggregator | SumAggregator;
      summing.gather.addNumeric(n);
      for (let code = 0; code < width; code++) {
        if (counts[code] > 0) summing.addCell(cellOf(code), sums[code], counts[code]);
      }
      if (!rowsCounted) rows.set(counts.subarray(0, width));
      rowsCounted = true;
    }
    if (!rowsCounted) {
      rows.fill(0, 0, width);
      addByCell(null, str, n, width, null, rows);
    }
    for (let a = 0; a < aggregators.length; a++) {
      if (targets[a] !== null) continue;
      for (let code = 0; code < width; code++) {
        if (rows[code] > 0) (aggregators[a] as CountAggregator).addRows(cellOf(code), rows[code]);
      }
    }
    if (this.extraCounter !== null) {
      for (let code = 0; code < width; code++) if (rows[code] > 0) this.extraCounter.addRows(cellOf(code), rows[code]);
    }
    return true;
  }
}

/** A finished result standing in for a partial state (the footer-sketch estimate). */
export class FixedAggregator implements Aggregator {
  readonly codecTag = AggregateTag.fixed;

  constructor(private readonly value: number) {}

  /** value: f64 */
  encode(writer: StateWriter): void {
    writer.f64(this.value);
  }

  static decode(reader: StateReader): FixedAggregator {
    return new FixedAggregator(reader.f64('fixed value'));
  }

  update(): void {}
  merge(): void {}
  finalize(): number {
    return this.value;
  }
  check(): void {}
  remap(): void {}
}
