/**
 * extraction: the stored events of a timeframe that pass the filters, rebuilt from their columns
 * (storage/event-json.ts; deleted properties are already hidden by the scan), oldest first; `latest` keeps the N most recent, `property_names` projects each event
 * onto the named dotted paths. A synchronous extraction scans at most extractionScanMax events
 * and returns at most extractionResultMax, else ExtractionTooLargeError. With `latest` the scan
 * visits the write buffer and then segments newest first, and stops once no older segment can
 * hold one of the N newest events, so `latest` never trips the scan limit (docs/api.md §11).
 */
import fs from 'node:fs';
import { ApiError } from '../../base/errors.js';
import { TIME_BLOCK_ROWS, blockMaxima, type ColumnChunk, type ScanSource, type SegmentRef } from '../../storage/chunk.js';
import { EventBuilder } from '../../storage/event-json.js';
import type { ExtractionPlan } from '../plan/plan.js';
import { scanSource, type ExecEnv, type ScanBuffers, type Selected } from './scan.js';

interface Found {
  readonly ts: number;
  readonly seq: number;
  /** The row's chunk's builder: an event is rebuilt only once it is among those returned. */
  readonly builder: EventBuilder;
  readonly row: number;
}

export function runExtraction(
  plan: ExtractionPlan,
  source: ScanSource,
  env: ExecEnv,
  buffers: ScanBuffers,
): Record<string, unknown> {
  if (plan.latest !== null && plan.latest > env.limits.extractionResultMax) {
    throw tooLarge('return', env.limits.extractionResultMax);
  }
  let found =
    plan.latest === null
      ? scanAll(plan, source, env, buffers)
      : scanLatest(plan, plan.latest, source, env, buffers);
  found.sort(byTime);
  if (plan.latest !== null && found.length > plan.latest)
    found = found.slice(found.length - plan.latest);
  const events = found.map((entry) => project(entry.builder.event(entry.row), plan.propertyNames));
  return { result: events };
}

function scanAll(
  plan: ExtractionPlan,
  source: ScanSource,
  env: ExecEnv,
  buffers: ScanBuffers,
): Found[] {
  const { extractionScanMax, extractionResultMax } = env.limits;
  const found: Found[] = [];
  scanSource(
    source,
    { range: plan.range, filters: plan.filters, columns: null },
    env,
    buffers,
    ({ chunk, idx, n }) => {
      if (buffers.eventsScanned > extractionScanMax) throw tooLarge('scan', extractionScanMax);
      collect(chunk, idx, n, found, source.idKey);
      if (found.length > extractionResultMax) throw tooLarge('return', extractionResultMax);
    },
  );
  return found;
}

/** The write buffer, then segments by newest event first, until older ones cannot matter. */
function scanLatest(
  plan: ExtractionPlan,
  keep: number,
  source: ScanSource,
  env: ExecEnv,
  buffers: ScanBuffers,
): Found[] {
  const options = { range: plan.range, filters: plan.filters, columns: null };
  let found: Found[] = [];
  const visit = (wholeChunk: boolean) => ({ chunk, idx, n }: Selected) => {
    // Every row of a segment (no filter, range cut or delete took one out): only the blocks of
    // rows that can hold one of the newest are read, by their greatest times.
    if (wholeChunk && n === chunk.rows && n > 2 * keep) collectNewest(chunk, keep, found, source.idKey);
    else collect(chunk, idx, n, found, source.idKey, n > 2 * keep ? newestTs(chunk.ts, idx, n, keep) : -Infinity);
    if (found.length > 2 * keep) found = newest(found, keep);
  };
  scanSource({ ...source, segments: [] }, options, env, buffers, visit(false));
  const segments: SegmentRef[] = [...source.segments].sort(
    (a, b) => b.footer.tsMax - a.footer.tsMax,
  );
  for (const ref of segments) {
    if (found.length >= keep) {
      found = newest(found, keep);
      if (ref.footer.tsMax < found[0].ts) break;
    }
    scanSource({ ...source, segments: [ref], memory: null }, options, env, buffers, visit(true));
  }
  return found;
}

/** The rows idx[0 .. n) from `fromTs` on (all by default) as Found entries. */
function collect(chunk: ColumnChunk, idx: Int32Array, n: number, found: Found[], idKey: number, fromTs = -Infinity): void {
  const builder = new EventBuilder(chunk, idKey);
  const ts = chunk.ts;
  for (let k = 0; k < n; k++) {
    const i = idx[k];
    if (ts[i] >= fromTs) found.push({ ts: ts[i], seq: chunk.seq[i], builder, row: i });
  }
}

/**
 * The `keep` greatest of the times added (or fewer): a min-heap whose least is the threshold a
 * later time must pass, so a time too old to count is turned away by one comparison.
 */
class NewestTimes {
  private readonly heap: Float64Array;
  private size = 0;

  constructor(private readonly keep: number) {
    this.heap = new Float64Array(keep);
  }

  /** The keep-th greatest time added; -Infinity while fewer were added. */
  get threshold(): number {
    return this.size < this.keep ? -Infinity : this.heap[0];
  }

  add(t: number): void {
    const heap = this.heap;
    const keep = this.keep;
    if (this.size < keep) {
      let at = this.size++;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (heap[parent] <= t) break;
        heap[at] = heap[parent];
        at = parent;
      }
      heap[at] = t;
    } else if (t > heap[0]) {
      let at = 0;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= keep) break;
        const child = left + 1 < keep && heap[left + 1] < heap[left] ? left + 1 : left;
        if (heap[child] >= t) break;
        heap[at] = heap[child];
        at = child;
      }
      heap[at] = t;
    }
  }
}

/**
 * The keep-th largest of ts over idx[0 .. n) (n > keep): a row older than it has `keep` rows
 * strictly newer in this chunk alone, so it cannot be among the newest. Newest rows (last in log
 * order) first, so an older row is turned away by one comparison: latest 100 of a 555k-row
 * segment no longer makes an object per row.
 */
function newestTs(ts: Float64Array, idx: Int32Array, n: number, keep: number): number {
  const times = new NewestTimes(keep);
  for (let k = n - 1; k >= 0; k--) times.add(ts[idx[k]]);
  return times.threshold;
}

/**
 * collect() of a whole segment chunk's rows that can be among the `keep` newest: its blocks of
 * rows by greatest time, newest first, until a block's greatest time is older than the keep-th
 * newest time seen (an equal one is read: among equal times the later row wins). A segment
 * written in time order reads a block or two of its rows, not all of them.
 */
function collectNewest(chunk: ColumnChunk, keep: number, found: Found[], idKey: number): void {
  const ts = chunk.ts;
  const maxima = chunk.tsBlockMaxima ?? blockMaxima(ts, chunk.rows);
  const order = Array.from(maxima.keys()).sort((a, b) => maxima[b] - maxima[a]);
  const times = new NewestTimes(keep);
  let blocks = 0;
  for (; blocks < order.length && maxima[order[blocks]] >= times.threshold; blocks++) {
    const start = order[blocks] * TIME_BLOCK_ROWS;
    const end = Math.min(chunk.rows, start + TIME_BLOCK_ROWS);
    for (let i = end - 1; i >= start; i--) times.add(ts[i]);
  }
  const fromTs = times.threshold;
  const builder = new EventBuilder(chunk, idKey);
  for (const block of order.slice(0, blocks).sort((a, b) => a - b)) {
    const start = block * TIME_BLOCK_ROWS;
    const end = Math.min(chunk.rows, start + TIME_BLOCK_ROWS);
    for (let i = start; i < end; i++) {
      if (ts[i] >= fromTs) found.push({ ts: ts[i], seq: chunk.seq[i], builder, row: i });
    }
  }
}

/** Where and how an asynchronous extraction task writes its events. */
export interface ExtractionOutput {
  /** Appended to. */
  readonly file: string;
  /** CSV columns (dotted paths) or null for NDJSON. */
  readonly csvColumns: readonly string[] | null;
  /** Events this task may still write: past it ExtractionTooLargeError (or, with `latest`, the newest only). */
  readonly remaining: number;
  /** The job's bound, for the error message. */
  readonly max: number;
}

/**
 * Appends the events of `source` that the plan selects to output.file, chunk by chunk, each chunk
 * oldest first; with `plan.latest` only the newest `remaining` of them. Returns the count written.
 */
export function extractToFile(
  plan: ExtractionPlan,
  source: ScanSource,
  env: ExecEnv,
  buffers: ScanBuffers,
  output: ExtractionOutput,
): number {
  let found: Found[] = [];
  scanSource(
    source,
    { range: plan.range, filters: plan.filters, columns: null },
    env,
    buffers,
    ({ chunk, idx, n }) => {
      collect(chunk, idx, n, found, source.idKey);
      if (plan.latest !== null && found.length > 2 * output.remaining)
        found = newest(found, output.remaining);
      else if (plan.latest === null && found.length > output.remaining)
        throw tooLarge('return', output.max);
    },
  );
  found.sort(byTime);
  if (found.length > output.remaining) found = found.slice(found.length - output.remaining);
  const lines: string[] = [];
  let bytes = 0;
  const fd = fs.openSync(output.file, 'a');
  try {
    for (const entry of found) {
      const line = output.csvColumns !== null
        ? csvRow(project(entry.builder.event(entry.row), plan.propertyNames) as Record<string, unknown>, output.csvColumns)
        : plan.propertyNames === null ? entry.builder.json(entry.row)
          : JSON.stringify(project(entry.builder.event(entry.row), plan.propertyNames));
      lines.push(line);
      bytes += line.length;
      if (bytes > 1 << 20) {
        fs.writeSync(fd, lines.join('\n') + '\n');
        lines.length = 0;
        bytes = 0;
      }
    }
    if (lines.length > 0) fs.writeSync(fd, lines.join('\n') + '\n');
  } finally {
    fs.closeSync(fd);
  }
  return found.length;
}

/** One RFC 4180 row: strings raw, numbers, booleans and lists as JSON, null or missing empty. */
function csvRow(event: Record<string, unknown>, columns: readonly string[]): string {
  return columns
    .map((column) => {
      let value: unknown = event;
      for (const part of column.split('.')) {
        value =
          typeof value === 'object' && value !== null && !Array.isArray(value)
            ? (value as Record<string, unknown>)[part]
            : undefined;
      }
      if (value === undefined || value === null) return '';
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
    })
    .join(',');
}

function byTime(a: Found, b: Found): number {
  return a.ts - b.ts || a.seq - b.seq;
}

function newest(found: Found[], keep: number): Found[] {
  return found.sort(byTime).slice(Math.max(0, found.length - keep));
}

function project(event: Record<string, unknown>, names: readonly string[] | null): unknown {
  if (names === null) return event;
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const parts = name.split('.');
    let value: unknown = event;
    for (const part of parts) {
      value =
        typeof value === 'object' && value !== null && !Array.isArray(value)
          ? (value as Record<string, unknown>)[part]
          : undefined;
    }
    if (value === undefined) continue;
    let target = out;
    for (const part of parts.slice(0, -1)) {
      const next = target[part];
      target = (typeof next === 'object' && next !== null ? next : (target[part] = {})) as Record<
        string,
        unknown
      >;
    }
    target[parts[parts.length - 1]] = value;
  }
  return out;
}

function tooLarge(what: 'scan' | 'return', limit: number): ApiError {
  const message =
    what === 'scan'
      ? `the extraction would scan more than ${limit} events`
      : `the extraction would return more than ${limit} events`;
  return new ApiError(
    'ExtractionTooLargeError',
    `${message}; split the request into shorter timeframes (or set "latest")`,
  );
}
