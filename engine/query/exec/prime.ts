/**
 * Compiles a query worker's scan code before any query comes. JavaScript runs a function from
 * bytecode until it has run often enough to be compiled, so a fresh worker ran the first query of
 * each kind in 3-10 times its later time (bench/scale at 10M right after a load, the eq filter:
 * 42-46 ms a worker on the first run, 5-8 ms on the next; the workers' first queries were the
 * benchmark's only misses against DuckDB). This runs the analyses people run most, over two
 * made-up segments written to a temporary folder by the real writer and read by the real reader,
 * each as a whole task and as a fan-out share, so the first real query runs compiled code. Its
 * own cache and views: the worker's hold nothing of it. About 0.7 s of one (niced) core at start:
 * ~0.45 s writing (a segment a step), ~0.3 s running (a request a step, at most ~30 ms); worker.ts
 * runs its queue between steps.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as L from '../../base/limits.js';
import { WriteBuffer } from '../../storage/buffer.js';
import type { ScanSource, SegmentRef } from '../../storage/chunk.js';
import { ColumnViews } from '../eval/columns.js';
import type { ExecLimits } from '../plan/plan.js';
import { parseRequest } from '../plan/request.js';
import { ChunkCache } from './chunk-cache.js';
import type { SegmentFiles } from './segment-reader.js';
import { runTask, type QueryTask } from './task.js';

const DAY = 86_400_000;
/** The made-up segments' first instant (any fixed day: the requests' timeframe covers them). */
const START = Date.UTC(2024, 0, 1);
const DAYS = 3;
const DEVICES = ['desktop', 'mobile', 'tablet', 'tv', 'console'];

const LIMITS: ExecLimits = {
  countUniqueExactMax: L.COUNT_UNIQUE_EXACT_MAX, percentileExactMax: L.PERCENTILE_EXACT_MAX, groupsMax: L.GROUPS_MAX,
  extractionScanMax: L.EXTRACTION_SCAN_MAX, extractionResultMax: L.EXTRACTION_RESULT_MAX, funnelActorsMax: L.FUNNEL_ACTORS_MAX,
  funnelStateBytesMax: L.FUNNEL_STATE_BYTES_MAX, responseBytesMax: L.RESPONSE_BYTES_MAX,
};

type Params = Record<string, unknown>;
const eq = (property: string, value: unknown): Params => ({ filters: [{ property_name: property, operator: 'eq', property_value: value }] });

/** What is primed: each analysis and filter kind, over small and large dictionaries, numbers and booleans. */
export const PRIMED_REQUESTS: readonly (readonly [string, Params])[] = [
  ['count', {}],
  ['count', eq('page.country', 'C03')],
  ['count', eq('user_id', 'u42')],
  ['count', eq('is_member', true)],
  ['count', { filters: [{ property_name: 'price', operator: 'gte', property_value: 50 }, { property_name: 'price', operator: 'lt', property_value: 100 }] }],
  ['count', { group_by: 'page.path', filters: [{ property_name: 'device', operator: 'in', property_value: ['tv', 'console'] }] }],
  ['count', { filters: [{ property_name: 'device', operator: 'ne', property_value: 'tv' }, { property_name: 'quantity', operator: 'exists', property_value: true }] }],
  ['count', { group_by: 'page.country' }],
  ['count', { group_by: 'device', interval: 'daily' }],
  ['select_unique', { target_property: 'device' }],
  ['count_unique', { target_property: 'page.country' }],
  ['count_unique', { target_property: 'user_id' }],
  ['sum', { target_property: 'price' }],
  ['average', { target_property: 'quantity' }],
  ['average', { target_property: 'price', group_by: 'device' }],
  ['minimum', { target_property: 'price' }],
  ['maximum', { target_property: 'price', ...eq('is_member', true) }],
  ['median', { target_property: 'price' }],
  ['percentile', { target_property: 'price', percentile: 90 }],
  ['funnel', { steps: [
    { event_collection: 'primed', actor_property: 'user_id', ...eq('device', 'tablet') },
    { event_collection: 'primed', actor_property: 'user_id', ...eq('is_member', true) },
  ] }],
  ['extraction', { latest: 100 }],
];

/** The made-up store: a segment for each day but the last, whose rows are buffered (as in a real store). */
export const PRIMED_DAYS: readonly { readonly rows: number; readonly seq: number; readonly day: number }[] = Array.from({ length: DAYS },
  (_, day) => ({ rows: day < DAYS - 1 ? L.PAIR_CELLS_MIN : L.PAIR_CELLS_MIN / 4, seq: day * L.PAIR_CELLS_MIN, day }));

/** Appends a made-up web-analytics day to `buffer`: the shapes of bench/scale's events, `rows` of them from `seq`. */
export function appendPrimedDay(buffer: WriteBuffer, { rows, seq, day }: (typeof PRIMED_DAYS)[number]): WriteBuffer {
  const paths = ['user_id', 'session_id', 'page.path', 'page.country', 'device', 'price', 'quantity', 'is_member'];
  let state = 0x9e3779b9 ^ seq;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  for (let row = 0; row < rows; row++) {
    const ts = START + day * DAY + Math.floor((row / rows) * DAY);
    const values: unknown[] = [
      `u${Math.floor(random() * rows)}`, `s${Math.floor(random() * rows * 2)}`, `/p/${Math.floor(1000 * random() ** 3)}`,
      `C${String(Math.floor(random() * 50)).padStart(2, '0')}`, DEVICES[Math.floor(random() * DEVICES.length)],
      Math.round(random() * 20_000) / 100, 1 + Math.floor(random() * 5), random() < 0.3,
    ];
    buffer.append(ts, ts, seq + row, { paths, values, start: 0, count: paths.length }, 0, paths.length);
  }
  return buffer;
}

/**
 * PRIMED_REQUESTS over made-up segments in a temporary folder, a segment written or a request run
 * a step (step()), so the worker runs its queue between them: a real query waits for one step at
 * most. The folder is removed once the last step has run (or close()).
 */
export class Primer {
  private readonly dir: string;
  private readonly segments: SegmentRef[] = [];
  /** Once every made-up segment is written. */
  private source: ScanSource | null = null;
  private readonly timeframe = { start: new Date(START).toISOString(), end: new Date(START + DAYS * DAY).toISOString() };
  private cache: ChunkCache;
  private views = new ColumnViews();
  private next = 0;
  /** The answers of the last round (tests compare them with a plain scan's). */
  answers: Record<string, unknown>[] = [];

  /** Makes the folder (the segments are written by the first steps); throws what making it throws. */
  constructor(
    private readonly files: SegmentFiles,
    private readonly writeSegment: typeof import('../../storage/segment/writer.js').writeSegment,
    private readonly rounds = L.PRIME_ROUNDS,
  ) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-prime-'));
    this.cache = new ChunkCache(files, L.PRIME_CACHE_BYTES, L.PRIME_CACHE_BYTES);
  }

  /** Steps in all: a segment written a step, then each request each round. */
  get steps(): number {
    return DAYS - 1 + PRIMED_REQUESTS.length * this.rounds;
  }

  /**
   * The next step: writes the next made-up segment (the first one ~0.3 s of a core: the writer
   * compiles too), else runs the next request (as a whole task, and as a fan-out share for an
   * aggregate). False once all have run, the folder removed; a failed write removes it and throws.
   */
  step(): boolean {
    if (this.source === null) {
      try {
        if (this.segments.length < DAYS - 1) {
          const day = PRIMED_DAYS[this.segments.length];
          const file = path.join(this.dir, `${day.day}.arrow`);
          this.segments.push({ file, footer: this.writeSegment(file, appendPrimedDay(new WriteBuffer(), day).snapshot(), {}) });
          return true;
        }
        const memory = appendPrimedDay(new WriteBuffer(), PRIMED_DAYS[DAYS - 1]).snapshot();
        this.source = { idKey: 0, memoryVersion: 0, segments: this.segments, memory, schema: {} };
      } catch (error) {
        this.close();
        throw error;
      }
    }
    return this.request(this.source);
  }

  private request(source: ScanSource): boolean {
    const total = PRIMED_REQUESTS.length * this.rounds;
    if (this.next >= total) return false;
    const index = this.next % PRIMED_REQUESTS.length;
    if (index === 0) {
      this.answers = [];
      this.cache = new ChunkCache(this.files, L.PRIME_CACHE_BYTES, L.PRIME_CACHE_BYTES);
      this.views = new ColumnViews();
    }
    const [analysis, params] = PRIMED_REQUESTS[index];
    const plan = parseRequest(analysis, { event_collection: 'primed', timeframe: this.timeframe, ...params }, { nowMs: START + DAYS * DAY });
    const sources = plan.kind === 'funnel' ? plan.steps.map(() => source) : [source];
    const task: QueryTask = { plan, sources, limits: LIMITS, deadlineMs: Date.now() + L.QUERY_TIMEOUT_MS, timeoutMs: L.QUERY_TIMEOUT_MS };
    const env = { views: this.views, cache: this.cache };
    this.answers.push(runTask(task, env));
    // A fan-out share, as the pool runs most aggregates and funnels (partial.ts, service.ts).
    if (plan.kind === 'aggregate') runTask({ ...task, whole: source }, env);
    if (plan.kind === 'funnel') runTask({ ...task, funnelKeys: true }, env);
    if (++this.next < total) return true;
    this.close();
    return false;
  }

  close(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
