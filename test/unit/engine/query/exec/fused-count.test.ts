/**
 * Counts grouped by a string column under one filter on another string column: whole segments are
 * counted in one pass over the stored codes (execute.ts CodeCounts.countMatching), the filter's
 * match table read per row, no row index written. Every answer here is checked against a count
 * made row by row from the generated events, on real segment files, for filters the fused pass
 * takes (eq, in, starts_with, a string comparison, a filter no code matches) and for those it
 * leaves to the row selection (negated, a column with numbers, a group column with missing rows,
 * a timeframe cutting a segment), with 1- and 2-byte codes on either side.
 */
import t from 'tap';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { aggregateOver } from '../../../../../engine/query/exec/execute.js';
import { shapeAggregate } from '../../../../../engine/query/exec/result.js';
import { ScanBuffers } from '../../../../../engine/query/exec/scan.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../../engine/query/exec/service.js';
import type { AggregatePlan } from '../../../../../engine/query/plan/plan.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import type { ScanSource } from '../../../../../engine/storage/chunk.js';
import { blockedPaths, compactColumns, readFooter, readSegment, segmentLacks } from '../../../../../engine/storage/segment/reader.js';
import type { Value } from '../../../../helpers/query/test-support.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const SEGMENTS = 4;
const ROWS = 5003; // not a multiple of 4: the lanes' last rows too
const DEVICES = ['desktop', 'mobile', 'tv', 'console', 'tablet'];

/** Event `i` of segment `s`: devices (1-byte codes), 300 paths and 5,000 ids (2-byte codes), odd columns. */
function props(s: number, i: number): Record<string, Value> {
  const row: Record<string, Value> = {
    device: DEVICES[(i * 7 + s) % 5],
    path: `/p/${(i * i + s) % 300}`,
    mixed: i % 11 === 0 ? 11 : `m${i % 3}`,
    // Past COUNT_LANES_ENTRIES_MAX entries a segment: counted in one lane.
    id: `u${(i * 7 + s) % ROWS}`,
  };
  if (i % 13 !== 0) row.sparse = `s${i % 4}`;
  return row;
}

const events = Array.from({ length: SEGMENTS }, (_, s) => Array.from({ length: ROWS }, (_, i) => ({ ts: START + s * DAY + i * 1000, props: props(s, i) })));

type Test = (value: Value | undefined) => boolean;

/** Counts per value of `group` over the events inside [startMs, endMs) that `pass`, per day when `daily`. */
function expected(group: string, pass: Test, filterPath: string, startMs: number, endMs: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const segment of events) {
    for (const event of segment) {
      if (event.ts < startMs || event.ts >= endMs || !pass(event.props[filterPath])) continue;
      const key = String(event.props[group] ?? null);
      out.set(key, (out.get(key) ?? 0) + 1);
    }
  }
  return out;
}

function run(refs: ReturnType<typeof writeDaySegments>, params: Record<string, unknown>): unknown {
  const source = { idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} } as unknown as ScanSource;
  const cache = new ChunkCache({ readSegment, readFooter, compactColumns, segmentLacks, blockedPaths });
  const plan = parseRequest('count', { event_collection: 'e', ...params }, { nowMs: START + 30 * DAY }) as AggregatePlan;
  cache.beginQuery();
  const env = { views: new ColumnViews(), cache, limits: DEFAULT_QUERY_LIMITS, deadlineMs: Number.MAX_SAFE_INTEGER, timeoutMs: 1e9 };
  return shapeAggregate(plan, aggregateOver(plan, source, env, new ScanBuffers(), source)).result;
}

function byGroup(result: unknown, group: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const row of result as Record<string, unknown>[]) {
    if ((row.result as number) > 0) out.set(String(row[group]), row.result as number);
  }
  return out;
}

const iso = (ms: number) => new Date(ms).toISOString();

t.test('counts grouped under one string filter equal a row-by-row count', async (t) => {
  const refs = writeDaySegments(t, SEGMENTS, ROWS, props);
  const all = { start: iso(START), end: iso(START + SEGMENTS * DAY) };
  const cases: [string, string, Record<string, unknown>, Test][] = [
    ['path', 'device', { operator: 'eq', property_value: 'tv' }, (v) => v === 'tv'],
    ['path', 'device', { operator: 'in', property_value: ['tv', 'console'] }, (v) => v === 'tv' || v === 'console'],
    ['device', 'path', { operator: 'starts_with', property_value: '/p/1' }, (v) => typeof v === 'string' && v.startsWith('/p/1')],
    ['device', 'path', { operator: 'in', property_value: ['/p/4', '/p/299', '/p/1000'] }, (v) => v === '/p/4' || v === '/p/299'],
    ['path', 'device', { operator: 'lt', property_value: 'm' }, (v) => typeof v === 'string' && v < 'm'],
    ['path', 'device', { operator: 'contains', property_value: 'vv' }, () => false],
    ['path', 'device', { operator: 'ne', property_value: 'tv' }, (v) => v !== 'tv'],
    ['id', 'device', { operator: 'in', property_value: ['tv', 'tablet'] }, (v) => v === 'tv' || v === 'tablet'],
    ['path', 'mixed', { operator: 'eq', property_value: 'm1' }, (v) => v === 'm1'],
    ['sparse', 'device', { operator: 'eq', property_value: 'mobile' }, (v) => v === 'mobile'],
    ['device', 'sparse', { operator: 'in', property_value: ['s1', 's2'] }, (v) => v === 's1' || v === 's2'],
  ];
  for (const [group, filterPath, filter, pass] of cases) {
    const params = { timeframe: all, group_by: group, filters: [{ property_name: filterPath, ...filter }] };
    const want = expected(group, pass, filterPath, START, START + SEGMENTS * DAY);
    t.same(byGroup(run(refs, params), group), want, `${group} where ${filterPath} ${JSON.stringify(filter)}`);
  }

  // A timeframe cutting segments 1 and 2: their rows are selected by time, the others counted whole.
  const cut = { start: iso(START + DAY + 1_000_000), end: iso(START + 2 * DAY + 2_000_000) };
  const inFilter = { property_name: 'device', operator: 'in', property_value: ['tv', 'console'] };
  const tvOrConsole: Test = (v) => v === 'tv' || v === 'console';
  t.same(byGroup(run(refs, { timeframe: cut, group_by: 'path', filters: [inFilter] }), 'path'),
    expected('path', tvOrConsole, 'device', Date.parse(cut.start), Date.parse(cut.end)), 'a timeframe cutting segments');

  // Daily buckets: each segment lies inside one day, and is counted into it.
  const daily = run(refs, { timeframe: all, interval: 'daily', group_by: 'path', filters: [inFilter] }) as { timeframe: { start: string }; value: unknown }[];
  t.equal(daily.length, SEGMENTS);
  for (const [day, bucket] of daily.entries()) {
    const dayStart = START + day * DAY;
    t.same(byGroup(bucket.value, 'path'), expected('path', tvOrConsole, 'device', dayStart, dayStart + DAY), `day ${day}`);
  }
});
