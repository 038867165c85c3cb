/**
 * The chunk loop shared by every plan: visits the chunks of a ScanSource (segments through the
 * chunk cache, then the write buffer's snapshot), selects the rows inside the timeframe and
 * passing the filters into a reused selection vector, and checks the cooperative deadline
 * between chunks. Segments a positive filter cannot match (column absent, numbers out of range,
 * strings their blocked dictionaries lack) are skipped unread.
 */
import { ApiError } from '../../base/errors.js';
import { replaceColumns, type ColumnChunk, type ScanSource, type SegmentFooter, type SegmentRef } from '../../storage/chunk.js';
import type { ChunkCache } from './chunk-cache.js';
import type { ColumnViews } from '../eval/columns.js';
import { DeleteScratch, dropDeleted, hideProperties, touches } from '../../deletes/predicate.js';
import { compileFilters, Scratch } from '../eval/filter-eval.js';
import type { ExecLimits, FilterNode, TimeRange } from '../plan/plan.js';
import { runSteps, type Steps } from './steps.js';

export interface ExecEnv {
  readonly views: ColumnViews;
  /** Null where no segment reader is available; a source with segments is then a bug. */
  readonly cache: ChunkCache | null;
  readonly limits: ExecLimits;
  /** Date.now()-based instant past which the scan gives up (QueryIncompleteError). */
  readonly deadlineMs: number;
  /** The timeout the deadline came from, for the error message. */
  readonly timeoutMs: number;
}

export interface Selected {
  readonly chunk: ColumnChunk;
  readonly idx: Int32Array;
  readonly n: number;
  /** Rows of the chunk inside the timeframe, before filters. */
  readonly inRange: number;
}

/** Reused buffers of one scan. */
export class ScanBuffers {
  idx = new Int32Array(0);
  /** identity[i] === i: the selection of a chunk wholly inside the timeframe, never written. */
  identity = new Int32Array(0);
  readonly scratch = new Scratch();
  readonly deleteScratch = new DeleteScratch();
  eventsScanned = 0;
  ensure(rows: number): void {
    if (this.idx.length >= rows) return;
    this.idx = new Int32Array(rows);
    this.identity = identityOf(rows);
  }
}

/** 0, 1, 2, ...: shared by every scan of the thread (never written), grown as needed. */
let sharedIdentity: Int32Array<ArrayBuffer> = new Int32Array(0);

export function identityOf(rows: number): Int32Array<ArrayBuffer> {
  if (sharedIdentity.length < rows) {
    sharedIdentity = new Int32Array(Math.max(rows, 2 * sharedIdentity.length));
    for (let i = 0; i < sharedIdentity.length; i++) sharedIdentity[i] = i;
  }
  return sharedIdentity;
}

export interface ScanOptions {
  readonly range: TimeRange;
  readonly filters: readonly FilterNode[];
  /**
   * The property paths the visitor reads besides the filters'; null reads every column (an
   * extraction). Segments decode only the columns a query needs.
   */
  readonly columns: readonly string[] | null;
  /**
   * Called per segment wholly inside the range that no delete touches; true when it answered
   * from the segment's footer or sidecar without reading the segment.
   */
  readonly answerFromFooter?: (ref: SegmentRef) => boolean;
  /**
   * Called with the filters' columns of a segment wholly inside the range that no delete touches
   * (`rest` reads its other columns): true when it answered the segment itself, filters applied,
   * without the row selection (execute.ts: a filter fused with a count); false leaves it to the scan.
   */
  readonly countWhole?: (filtered: ColumnChunk, rest: () => ColumnChunk) => boolean;
}

export function scanSource(
  source: ScanSource, options: ScanOptions, env: ExecEnv, buffers: ScanBuffers,
  visit: (selected: Selected) => void,
): void {
  runSteps(scanSteps(source, options, env, buffers, visit));
}

/** scanSource as steps (steps.ts): one after each segment it reads. */
export function* scanSteps(
  source: ScanSource, options: ScanOptions, env: ExecEnv, buffers: ScanBuffers,
  visit: (selected: Selected) => void,
): Steps<void> {
  const { range, filters } = options;
  const deletes = source.deletes ?? [];
  const deleteFilters = deletes.flatMap((entry) => (entry.kind === 'rows' ? entry.filters : []));
  const columns = options.columns === null ? null
    : [...new Set([...options.columns, ...filterPaths(filters), ...filterPaths(deleteFilters)])];
  // The filters' columns first, the others only for a segment some row of which passes them: a
  // selective filter (one user's events) leaves the other columns of most segments unread.
  const filterColumns = new Set(filterPaths(filters));
  const rest = columns?.filter((path) => !filterColumns.has(path)) ?? [];
  const filtersFirst = filterColumns.size > 0 && deletes.length === 0 && rest.length > 0;
  for (const ref of source.segments) {
    checkDeadline(env);
    const footer = ref.footer;
    if (footer.tsMax < range.startMs || footer.tsMin >= range.endMs) continue;
    if (cannotMatch(filters, footer)) continue;
    const inside = footer.tsMin >= range.startMs && footer.tsMax < range.endMs;
    const footerAnswers = !deletes.some((entry) => entry.kind === 'rows' && touches(entry, footer.seqMin));
    if (inside && footerAnswers && options.answerFromFooter?.(ref)) {
      buffers.eventsScanned += footer.rows;
      continue;
    }
    if (lacksValues(filters, ref, env)) continue;
    if (filtersFirst) {
      const filtered = loadSegment(ref, [...filterColumns], env);
      // On the filtered chunk, whose times the range selection may have read already.
      const whole = () => replaceColumns(filtered, new Map([...filtered.columns, ...loadSegment(ref, rest, env).columns]));
      if (inside && options.countWhole?.(filtered, whole)) {
        buffers.eventsScanned += filtered.rows;
        yield;
        continue;
      }
      const { idx, n, inRange } = selectRows(filtered, inside, options, env, buffers, deletes);
      if (n > 0) visit({ chunk: whole(), idx, n, inRange });
    } else visitChunk(loadSegment(ref, columns, env), inside, options, env, buffers, visit, deletes);
    yield;
  }
  const memory = source.memory;
  if (memory !== null && memory.rows > 0) {
    checkDeadline(env);
    const [tsMin, tsMax] = env.views.tsRange(memory);
    const inside = tsMin >= range.startMs && tsMax < range.endMs;
    visitChunk(memory, inside, options, env, buffers, visit, deletes);
  }
}

function loadSegment(ref: SegmentRef, columns: readonly string[] | null, env: ExecEnv): ColumnChunk {
  if (env.cache === null) throw new Error(`no segment reader to read ${ref.file}`);
  return env.cache.load(ref, columns);
}

/** Every property path the filters read, `or` branches included. */
export function filterPaths(filters: readonly FilterNode[], out: string[] = []): string[] {
  for (const node of filters) {
    if (node.kind === 'or') filterPaths(node.any, out);
    else out.push(node.path);
  }
  return out;
}

function visitChunk(
  chunk: ColumnChunk, inside: boolean, options: ScanOptions, env: ExecEnv, buffers: ScanBuffers,
  visit: (selected: Selected) => void, deletes: NonNullable<ScanSource['deletes']>,
): void {
  if (deletes.length > 0) chunk = hideProperties(chunk, deletes);
  visit({ chunk, ...selectRows(chunk, inside, options, env, buffers, deletes) });
}

/** The rows of the chunk inside the timeframe that pass the filters and no delete removes. */
function selectRows(
  chunk: ColumnChunk, inside: boolean, options: ScanOptions, env: ExecEnv, buffers: ScanBuffers,
  deletes: NonNullable<ScanSource['deletes']>,
): Omit<Selected, 'chunk'> {
  buffers.ensure(chunk.rows);
  let idx = buffers.identity;
  let inRange = chunk.rows;
  if (!inside) {
    idx = buffers.idx;
    inRange = selectRange(chunk.ts, chunk.rows, options.range, idx);
  }
  buffers.eventsScanned += inRange;
  let n = inRange;
  if (n > 0 && options.filters.length > 0) {
    n = compileFilters(options.filters, chunk, env.views, buffers.scratch)(idx, buffers.idx, n);
    idx = buffers.idx;
  }
  if (n > 0 && deletes.length > 0) {
    n = dropDeleted(chunk, idx, buffers.idx, n, deletes, env.views, buffers.scratch, buffers.deleteScratch);
    idx = buffers.idx;
  }
  return { idx, n, inRange };
}

/** Writes the rows with startMs <= ts < endMs into idx; returns their count. */
export function selectRange(ts: Float64Array, rows: number, range: TimeRange, idx: Int32Array): number {
  const { startMs, endMs } = range;
  let n = 0;
  for (let i = 0; i < rows; i++) {
    const t = ts[i];
    idx[n] = i;
    n += +(t >= startMs) & +(t < endMs);
  }
  return n;
}

/** True when a top-level positive filter names a column no row of the segment has. */
function cannotMatch(filters: readonly FilterNode[], footer: SegmentFooter): boolean {
  for (const node of filters) {
    if (node.kind === 'or' || node.path === 'svc.timestamp' || node.path === 'svc.created_at') continue;
    if (outsideNumbers(node, footer)) return true;
    const present = footer.columns[node.path]?.present ?? 0;
    if (present > 0) continue;
    const positive =
      (node.kind === 'compare' && node.operator !== 'ne' && node.value !== null) ||
      (node.kind === 'set' && !node.negate && !node.values.includes(null)) ||
      (node.kind === 'exists' && node.exists) ||
      (node.kind === 'text' && !node.negate) || node.kind === 'within';
    if (positive) return true;
  }
  return false;
}

/**
 * True when a top-level eq or in filter of strings names only values the segment's blocked
 * dictionaries lack (chunk-cache.ts lacks): no row can match, and the segment is skipped unread.
 */
function lacksValues(filters: readonly FilterNode[], ref: SegmentRef, env: ExecEnv): boolean {
  if (env.cache === null) return false;
  for (const node of filters) {
    if (node.kind === 'or') continue;
    const values = node.kind === 'compare' && node.operator === 'eq' && typeof node.value === 'string' ? [node.value]
      : node.kind === 'set' && !node.negate && node.values.length > 0 && node.values.every((v) => typeof v === 'string')
        ? node.values as readonly string[] : null;
    if (values !== null && env.cache.lacks(ref, node.path, values)) return true;
  }
  return false;
}

function checkDeadline(env: ExecEnv): void {
  if (Date.now() > env.deadlineMs) throw queryIncomplete(env.timeoutMs);
}

/** 504 QueryIncompleteError naming the time allowed (the seed: "300 seconds"). */
export function queryIncomplete(timeoutMs: number): ApiError {
  const allowed = timeoutMs % 1000 === 0 ? `${timeoutMs / 1000} seconds` : `${timeoutMs} ms`;
  return new ApiError('QueryIncompleteError',
    `the query did not finish in ${allowed}; shorten the timeframe or add filters`);
}

/**
 * True when `node` compares with a number (gt, gte, lt, lte) and no number of the segment's column
 * is in its range, from the footer's least and greatest (storage/segment/footer.ts statsOf). Such a
 * comparison matches numbers only (filter-eval.ts: not strings, lists or nulls), so no row can.
 */
function outsideNumbers(node: Exclude<FilterNode, { kind: 'or' }>, footer: SegmentFooter): boolean {
  if (node.kind !== 'compare' || typeof node.value !== 'number' || node.operator === 'eq' || node.operator === 'ne') return false;
  const stats = footer.columns[node.path];
  if (stats?.numMin === undefined || stats.numMax === undefined) return true;
  const v = node.value;
  switch (node.operator) {
    case 'gt': return !(stats.numMax > v);
    case 'gte': return !(stats.numMax >= v);
    case 'lt': return !(stats.numMin < v);
    default: return !(stats.numMin <= v);
  }
}
