/**
 * Test support (not shipped behaviour): builds ColumnChunks and ScanSources from plain events,
 * generates seeded random events, and computes every analysis the naive way, one event object
 * at a time, as the reference the scan must agree with.
 */
import { eventId } from '../../../engine/storage/event-ids.js';
import {
  TAG_BOOL, TAG_LIST, TAG_MISSING, TAG_NULL, TAG_NUM, TAG_STR,
  type Column, type ColumnChunk, type Primitive, type ScanSource,
} from '../../../engine/storage/chunk.js';
import { mulberry32 as random } from '../random.js';
import type { AggregatePlan, ExecLimits } from '../../../engine/query/plan/plan.js';
import type { AggregateOutcome } from '../../../engine/query/exec/result.js';
export { random };

export type Value = Primitive | readonly Primitive[] | undefined;

export interface TestEvent {
  readonly ts: number;
  /** Flattened property paths → values; undefined or absent = missing. */
  readonly props: Readonly<Record<string, Value>>;
}

export function makeChunk(events: readonly TestEvent[], firstSeq = 0): ColumnChunk {
  const paths = new Set<string>();
  for (const event of events) for (const path of Object.keys(event.props)) paths.add(path);
  const columns = new Map<string, Column>();
  for (const path of paths) columns.set(path, makeColumn(path, events));
  return {
    rows: events.length,
    ts: Float64Array.from(events, (event) => event.ts),
    createdAt: Float64Array.from(events, (event) => event.ts + 1000),
    seq: Float64Array.from(events, (_, i) => firstSeq + i),
    columns,
  };
}

/** The event as stored JSON: nested objects from dotted paths, plus its svc object. */
export function rawJson(event: TestEvent, seq: number): string {
  const root: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(event.props)) {
    if (value === undefined) continue;
    const parts = path.split('.');
    let target = root;
    for (const part of parts.slice(0, -1)) {
      target = (target[part] ??= {}) as Record<string, unknown>;
    }
    target[parts[parts.length - 1]] = value;
  }
  const svc = (root.svc ??= {}) as Record<string, unknown>;
  svc.timestamp = new Date(event.ts).toISOString();
  svc.created_at = new Date(event.ts + 1000).toISOString();
  svc.id = eventId(0, seq);
  return JSON.stringify(root);
}

function makeColumn(path: string, events: readonly TestEvent[]): Column {
  const rows = events.length;
  const tags = new Uint8Array(rows);
  const num = new Float64Array(rows);
  const str = new Int32Array(rows);
  const dict: string[] = [];
  const codes = new Map<string, number>();
  const lists: (readonly Primitive[] | null)[] = new Array(rows).fill(null);
  let hasNum = false;
  let hasStr = false;
  let hasList = false;
  events.forEach((event, i) => {
    const value = event.props[path];
    if (value === undefined) tags[i] = TAG_MISSING;
    else if (value === null) tags[i] = TAG_NULL;
    else if (typeof value === 'number') {
      tags[i] = TAG_NUM;
      num[i] = value;
      hasNum = true;
    } else if (typeof value === 'boolean') {
      tags[i] = TAG_BOOL;
      num[i] = value ? 1 : 0;
      hasNum = true;
    } else if (typeof value === 'string') {
      tags[i] = TAG_STR;
      let code = codes.get(value);
      if (code === undefined) codes.set(value, (code = dict.push(value) - 1));
      str[i] = code;
      hasStr = true;
    } else {
      tags[i] = TAG_LIST;
      lists[i] = value as readonly Primitive[];
      hasList = true;
    }
  });
  return {
    path, tags, num: hasNum ? num : null, str: hasStr ? str : null, dict: hasStr ? dict : null,
    lists: hasList ? lists : null,
  };
}

export function memorySource(events: readonly TestEvent[]): ScanSource {
  return { idKey: 0, memoryVersion: 0, segments: [], memory: events.length ? makeChunk(events) : null, schema: {} };
}

/** Seeded events over [startMs, startMs + spanMs) with mixed kinds, nulls and missing values. */
export function randomEvents(seed: number, count: number, startMs: number, spanMs: number): TestEvent[] {
  const rnd = random(seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(rnd() * values.length)];
  const events: TestEvent[] = [];
  for (let e = 0; e < count; e++) {
    const r = rnd();
    const props: Record<string, Value> = {
      country: r < 0.05 ? undefined : r < 0.08 ? null : r < 0.1 ? 7 : pick(['US', 'DE', 'IN', 'FR', 'BR']),
      price: r < 0.1 ? undefined : r < 0.13 ? 'n/a' : r < 0.15 ? null : Math.round(rnd() * 10000) / 100,
      user: rnd() < 0.05 ? 42 : `u${Math.floor(rnd() * 60)}`,
      flag: rnd() < 0.1 ? undefined : rnd() < 0.5,
      tags: rnd() < 0.3 ? undefined : [pick(['a', 'b', 'c']), pick(['c', 'd'])],
      'nested.level': rnd() < 0.2 ? undefined : Math.floor(rnd() * 5),
      'svc.location.coordinates': rnd() < 0.3 ? undefined
        : [-74 + rnd() * 4 - 2, 40.7 + rnd() * 4 - 2],
    };
    events.push({ ts: startMs + Math.floor(rnd() * spanMs), props });
  }
  return events;
}

/** Scans `events` into one fan-out share's partial states (whole-query checks left to finishing). */
export async function partialOutcome(
  plan: AggregatePlan, events: readonly TestEvent[], limits: Partial<ExecLimits> = {},
): Promise<AggregateOutcome> {
  const { aggregateOver } = await import('../../../engine/query/exec/execute.js');
  const { ColumnViews } = await import('../../../engine/query/eval/columns.js');
  const { ScanBuffers } = await import('../../../engine/query/exec/scan.js');
  const { DEFAULT_QUERY_LIMITS } = await import('../../../engine/query/exec/service.js');
  const source = memorySource(events);
  return aggregateOver(plan, source, {
    views: new ColumnViews(), cache: null, limits: { ...DEFAULT_QUERY_LIMITS, ...limits },
    deadlineMs: Number.MAX_SAFE_INTEGER, timeoutMs: 1e9,
  }, new ScanBuffers(), source);
}

/** One golden partial state (test/fixtures/partial-state): how it is made. */
export interface GoldenCase {
  readonly name: string;
  readonly analysis: string;
  readonly params: Record<string, unknown>;
  readonly limits: Partial<ExecLimits>;
}

const GOLDEN_NOW_MS = Date.UTC(2024, 2, 10);
const GOLDEN_EVENTS = (): TestEvent[] => randomEvents(11, 3000, Date.UTC(2024, 2, 1), 4 * 86_400_000);
const GOLDEN_BASE = {
  event_collection: 'e', timeframe: { start: '2024-03-01T00:00:00.000Z', end: '2024-03-05T00:00:00.000Z' },
  group_by: 'country', interval: 'daily',
};

/** One state per analysis, grouped and bucketed; the approximate ones (past tiny exact budgets) less so, to keep the files small. */
export const GOLDEN_CASES: readonly GoldenCase[] = [
  { name: 'count', analysis: 'count', params: {}, limits: {} },
  { name: 'count_unique', analysis: 'count_unique', params: { target_property: 'user' }, limits: {} },
  { name: 'count_unique_single', analysis: 'count_unique', params: { target_property: 'user', group_by: null, interval: null }, limits: {} },
  { name: 'count_unique_approximate', analysis: 'count_unique', params: { target_property: 'user', group_by: null }, limits: { countUniqueExactMax: 20 } },
  { name: 'minimum', analysis: 'minimum', params: { target_property: 'price' }, limits: {} },
  { name: 'maximum', analysis: 'maximum', params: { target_property: 'nested.level' }, limits: {} },
  { name: 'sum', analysis: 'sum', params: { target_property: 'price' }, limits: {} },
  { name: 'average', analysis: 'average', params: { target_property: 'price' }, limits: {} },
  { name: 'median', analysis: 'median', params: { target_property: 'price' }, limits: {} },
  { name: 'percentile', analysis: 'percentile', params: { target_property: 'price', percentile: 90 }, limits: {} },
  { name: 'percentile_approximate', analysis: 'percentile', params: { target_property: 'price', percentile: 90, group_by: null }, limits: { percentileExactMax: 100 } },
  { name: 'standard_deviation', analysis: 'standard_deviation', params: { target_property: 'price' }, limits: {} },
  { name: 'select_unique', analysis: 'select_unique', params: { target_property: 'tags', group_by: ['country', 'flag'] }, limits: {} },
  { name: 'multi_analysis', analysis: 'multi_analysis', params: { analyses: {
    n: { analysis_type: 'count' }, u: { analysis_type: 'count_unique', target_property: 'country' },
    p: { analysis_type: 'median', target_property: 'nested.level' } } }, limits: {} },
];

export async function goldenPlan(golden: GoldenCase): Promise<AggregatePlan> {
  const { parseRequest } = await import('../../../engine/query/plan/request.js');
  const params: Record<string, unknown> = { ...GOLDEN_BASE, ...golden.params };
  // null drops a key of the base (JSON keeps null, not undefined).
  for (const key of Object.keys(params)) if (params[key] === null) delete params[key];
  return parseRequest(golden.analysis, params, { nowMs: GOLDEN_NOW_MS }) as AggregatePlan;
}

/** A golden case's encoded state and the response body its states finalize to. */
export async function goldenState(golden: GoldenCase): Promise<{ bytes: Uint8Array; body: Record<string, unknown> }> {
  const { encodeOutcome } = await import('../../../engine/query/exec/partial-codec.js');
  const { finishAggregate } = await import('../../../engine/query/exec/execute.js');
  const plan = await goldenPlan(golden);
  const events = GOLDEN_EVENTS();
  const bytes = encodeOutcome(await partialOutcome(plan, events, golden.limits), events.length);
  const body = finishAggregate(plan, await partialOutcome(plan, events, golden.limits), events.length, 0);
  return { bytes, body };
}
