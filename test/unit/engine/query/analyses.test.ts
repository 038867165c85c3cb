/**
 * Every aggregate analysis × (plain, filters, group_by, interval, group_by + interval) against the
 * naive reference over seeded random events, from an in-memory chunk and from real segment files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { ScanSource, SegmentRef } from '../../../../engine/storage/chunk.js';
import { parseFilters } from '../../../../engine/query/plan/filter.js';
import { close, expectedAnswer } from '../../../helpers/query/expected.js';
import { analyze, matches } from '../../../helpers/query/reference.js';
import { QueryService } from '../../../../engine/query/exec/service.js';
import { makeChunk, memorySource, randomEvents, type TestEvent } from '../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const NOW = START + 12 * DAY;
const events = randomEvents(7, 4000, START - DAY, 12 * DAY);
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-09T00:00:00.000Z' };

const FILTERS = [
  { property_name: 'flag', operator: 'ne', property_value: false },
  { property_name: 'price', operator: 'lt', property_value: 80 },
  {
    operator: 'or', property_value: [
      { property_name: 'country', operator: 'in', property_value: ['US', 'DE', 7] },
      { property_name: 'tags', operator: 'contains', property_value: 'a' },
    ],
  },
];

const KINDS: Record<string, string | null> = {
  count: null, count_unique: 'user', minimum: 'price', maximum: 'price', sum: 'price',
  average: 'price', median: 'price', percentile: 'price', standard_deviation: 'price',
  select_unique: 'user',
};

const MODES: Record<string, Record<string, unknown>> = {
  plain: {},
  filters: { filters: FILTERS },
  group_by: { group_by: 'country' },
  interval: { interval: 'daily', timezone: 'Europe/Berlin' },
  group_by_interval: { group_by: ['country', 'flag'], interval: 'every_2_days', filters: FILTERS.slice(0, 1) },
};

function segmentSource(all: readonly TestEvent[]): ScanSource {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-query-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return { segments: [], memory: null, schema: {}, dir } as unknown as ScanSource;
}

async function withSegments(all: readonly TestEvent[]): Promise<ScanSource> {
  const { writeSegment } = await import('../../../../engine/storage/segment/writer.js');
  const placeholder = segmentSource(all) as unknown as { dir: string };
  const sorted = [...all].sort((a, b) => a.ts - b.ts);
  const third = Math.floor(sorted.length / 3);
  const parts = [sorted.slice(0, third), sorted.slice(third, 2 * third)];
  const segments: SegmentRef[] = parts.map((part, p) => {
    const file = path.join(placeholder.dir, `s${p}.arrow`);
    const footer = writeSegment(file, makeChunk(part, p * 100_000), {});
    return { file, footer };
  });
  return { idKey: 0, memoryVersion: 0, segments, memory: makeChunk(sorted.slice(2 * third), 900_000), schema: {} };
}

function expected(kind: string, target: string | null, params: Record<string, unknown>): unknown {
  return expectedAnswer(events, kind, target, params, NOW);
}

for (const layout of ['memory', 'segments'] as const) {
  t.test(`analyses agree with the reference (${layout})`, async (t) => {
    const source = layout === 'memory' ? memorySource(events) : await withSegments(events);
    const service = new QueryService({ source: () => source, clock: () => NOW, workers: 0 });
    t.teardown(() => service.close());
    for (const [kind, target] of Object.entries(KINDS)) {
      for (const [mode, extra] of Object.entries(MODES)) {
        const params: Record<string, unknown> = { event_collection: 'e', timeframe, ...extra };
        if (target) params.target_property = target;
        if (kind === 'percentile') params.percentile = 90;
        const actual = await service.run('p', kind, params);
        const problem = close(actual, expected(kind, target, params));
        t.equal(problem, null, `${kind} × ${mode}`);
      }
    }
  });
}

t.test('filters: every operator agrees with the reference', async (t) => {
  const service = new QueryService({ source: () => memorySource(events), clock: () => NOW, workers: 0 });
  const cases: unknown[][] = [
    [{ property_name: 'country', operator: 'eq', property_value: 'US' }],
    [{ property_name: 'country', operator: 'eq', property_value: null }],
    [{ property_name: 'country', operator: 'ne', property_value: null }],
    [{ property_name: 'country', operator: 'ne', property_value: 'US' }],
    [{ property_name: 'country', operator: 'eq', property_value: 7 }],
    [{ property_name: 'country', operator: 'eq', property_value: '7' }],
    [{ property_name: 'country', operator: 'gt', property_value: 'DE' }],
    [{ property_name: 'country', operator: 'not_in', property_value: ['US', null] }],
    [{ property_name: 'country', operator: 'starts_with', property_value: 'I' }],
    [{ property_name: 'country', operator: 'regex', property_value: '^(U|F)' }],
    [{ property_name: 'country', operator: 'contains', property_value: 'R' }],
    [{ property_name: 'country', operator: 'not_contains', property_value: 'R' }],
    [{ property_name: 'price', operator: 'gte', property_value: 50 }],
    [{ property_name: 'price', operator: 'lte', property_value: 50 }],
    [{ property_name: 'price', operator: 'in', property_value: [1, 2, 3, 'n/a'] }],
    [{ property_name: 'price', operator: 'exists', property_value: true }],
    [{ property_name: 'price', operator: 'exists', property_value: 'false' }],
    [{ property_name: 'flag', operator: 'eq', property_value: true }],
    [{ property_name: 'flag', operator: 'ne', property_value: true }],
    [{ property_name: 'tags', operator: 'eq', property_value: 'd' }],
    [{ property_name: 'tags', operator: 'in', property_value: ['a', 'b'] }],
    [{ property_name: 'tags', operator: 'not_contains', property_value: 'c' }],
    [{ property_name: 'nested.level', operator: 'lt', property_value: 2 }],
    [{ property_name: 'price', operator: 'gt', property_value: 10 },
      { property_name: 'price', operator: 'lte', property_value: 50 },
      { property_name: 'price', operator: 'gte', property_value: 10 }],
    [{ property_name: 'price', operator: 'lt', property_value: 20 },
      { property_name: 'nested.level', operator: 'gte', property_value: 1 },
      { property_name: 'price', operator: 'lt', property_value: 30 }],
    [{ property_name: 'country', operator: 'gte', property_value: 1 },
      { property_name: 'country', operator: 'lte', property_value: 7 }],
    [{ property_name: 'absent', operator: 'ne', property_value: 1 }],
    [{ property_name: 'absent', operator: 'eq', property_value: 1 }],
    [{ property_name: 'svc.timestamp', operator: 'gte', property_value: '2024-03-03T12:00:00+01:00' }],
    [{ property_name: 'svc.created_at', operator: 'lt', property_value: '2024-03-02T00:00:00.000Z' }],
    [{
      property_name: 'svc.location.coordinates', operator: 'within',
      property_value: { coordinates: [-74, 40.7], max_distance_miles: 60 },
    }],
    [{ operator: 'or', property_value: [
      { property_name: 'flag', operator: 'eq', property_value: true },
      { operator: 'or', property_value: [{ property_name: 'price', operator: 'gt', property_value: 90 }] },
    ] }, { property_name: 'country', operator: 'ne', property_value: 'BR' }],
  ];
  for (const filters of cases) {
    const nodes = parseFilters(filters);
    const range = { start: timeframe.start, end: timeframe.end };
    const want = events.filter((e) => e.ts >= Date.parse(range.start) && e.ts < Date.parse(range.end) &&
      nodes.every((node) => matches(e, node))).length;
    const got = await service.run('p', 'count', { event_collection: 'e', timeframe, filters });
    t.same(got, { result: want }, JSON.stringify(filters));
  }
});

t.test('multi_analysis, order_by, limit and include_metadata', async (t) => {
  const service = new QueryService({ source: () => memorySource(events), clock: () => NOW, workers: 0 });
  const analyses = { n: { analysis_type: 'count' }, total: { analysis_type: 'sum', target_property: 'price' } };
  const multi = await service.run('p', 'multi_analysis', { event_collection: 'e', timeframe, analyses });
  const selected = events.filter((e) => e.ts >= Date.parse(timeframe.start) && e.ts < Date.parse(timeframe.end));
  t.equal(close(multi, { result: { n: selected.length, total: analyze('sum', selected, 'price') } }), null);
  const grouped = await service.run('p', 'multi_analysis', {
    event_collection: 'e', timeframe, analyses, group_by: 'country', interval: 'weekly',
  }) as { result: { value: Record<string, unknown>[] }[] };
  t.ok(grouped.result.length >= 2, 'weekly buckets');
  t.ok('n' in grouped.result[1].value[0] && 'total' in grouped.result[1].value[0], 'labels per group');
  const top = await service.run('p', 'count', {
    event_collection: 'e', timeframe, group_by: 'country',
    order_by: { property_name: 'result', direction: 'DESC' }, limit: '2', include_metadata: 'true',
  }) as { result: { result: number }[]; execution_metadata: Record<string, number> };
  t.equal(top.result.length, 2);
  t.ok(top.result[0].result >= top.result[1].result, 'descending');
  t.equal(top.execution_metadata.events_scanned, selected.length);
  t.ok(top.execution_metadata.properties_per_event >= 2);
});

t.test('select_unique and count_unique of segments inside the timeframe come from their sidecar values', async (t) => {
  const source = await withSegments(events);
  const service = new QueryService({ source: () => source, clock: () => NOW, workers: 0 });
  t.teardown(() => service.close());
  // The middle segment lies wholly inside the timeframe: its sidecar lists its few values, so
  // the answer must not need its Arrow file. Overwrite the file to prove it is never read.
  const inside = source.segments[1];
  t.ok(inside.footer.tsMin >= Date.parse(timeframe.start) && inside.footer.tsMax < Date.parse(timeframe.end));
  fs.writeFileSync(inside.file, 'not an arrow file');
  for (const [kind, target] of [['select_unique', 'country'], ['count_unique', 'country'],
    ['select_unique', 'user'], ['count_unique', 'nested.level'], ['select_unique', 'flag']]) {
    const params = { event_collection: 'e', timeframe, target_property: target };
    t.equal(close(await service.run('p', kind, params), expected(kind, target, params)), null, `${kind} of ${target}`);
  }
  // Counts filtered and grouped by one column come from the value counts, null and missing rows
  // included (the interval is monthly: the segment lies inside one bucket).
  const country = (operator: string, value: unknown) => [{ property_name: 'country', operator, property_value: value }];
  const cases: [string, string | null, Record<string, unknown>][] = [
    ['count', null, { filters: country('eq', 'US') }],
    ['count', null, { filters: country('ne', null) }],
    ['count', null, { filters: country('in', ['DE', 7, null]) }],
    ['count', null, { filters: country('exists', false) }],
    ['count', null, { filters: country('not_contains', 'U') }],
    ['count', null, { group_by: 'country' }],
    ['count', null, { group_by: 'country', interval: 'monthly', filters: country('ne', 'BR') }],
    ['count', null, { interval: 'monthly' }],
    ['count', null, { filters: [{ property_name: 'absent', operator: 'ne', property_value: 1 }] }],
    ['count', null, { group_by: 'absent' }],
    ['count', null, { group_by: 'flag', filters: [{ property_name: 'flag', operator: 'eq', property_value: true }] }],
    ['count_unique', 'country', { group_by: 'country' }],
    ['select_unique', 'user', { interval: 'monthly' }],
    ['select_unique', 'nested.level', { filters: [{ property_name: 'nested.level', operator: 'gte', property_value: 2 }] }],
  ];
  for (const [kind, target, extra] of cases) {
    const params: Record<string, unknown> = { event_collection: 'e', timeframe, ...extra };
    if (target) params.target_property = target;
    t.equal(close(await service.run('p', kind, params), expected(kind, target, params)), null,
      `${kind} ${JSON.stringify(extra)}`);
  }
  // A filter needs the rows: the damaged file is read and reported, not silently skipped.
  const filtered = { event_collection: 'e', timeframe, target_property: 'country', filters: FILTERS.slice(0, 1) };
  await t.rejects(service.run('p', 'select_unique', filtered));
});

t.test('sum, average and count grouped by an all-strings column over all-number targets, per dictionary code', async (t) => {
  // Every row of each chunk selected, the group column all strings and the target all numbers:
  // the per-code path. Checked against sums computed here, with and without an interval.
  const devices = ['tv', 'phone', 'desktop', 'console'];
  const plain: TestEvent[] = Array.from({ length: 3000 }, (_, i) => ({
    ts: START + Math.floor((i * 8 * DAY) / 3000),
    props: { dev: devices[((i * 7919) % 1013) % 4], amount: ((i * 37) % 1000) / 8 },
  }));
  for (const layout of ['memory', 'segments'] as const) {
    const source = layout === 'memory' ? memorySource(plain) : await withSegments(plain);
    const service = new QueryService({ source: () => source, clock: () => NOW, workers: 0 });
    t.teardown(() => service.close());
    for (const kind of ['sum', 'average', 'count']) {
      const params = { event_collection: 'e', timeframe, group_by: 'dev', target_property: 'amount' };
      const got = await service.run('p', kind, params) as { result: { dev: string; result: number }[] };
      for (const device of devices) {
        const mine = plain.filter((e) => e.props.dev === device).map((e) => e.props.amount as number);
        const total = mine.reduce((a, b) => a + b, 0);
        const want = kind === 'sum' ? total : kind === 'average' ? total / mine.length : mine.length;
        const row = got.result.find((r) => r.dev === device);
        t.ok(row !== undefined && Math.abs(row.result - want) < 1e-6, `${layout} ${kind} of ${device}`);
      }
      const daily = await service.run('p', kind, { ...params, interval: 'daily' }) as
        { result: { timeframe: { start: string }; value: { dev: string; result: number }[] }[] };
      const day = daily.result[3];
      const dayStart = Date.parse(day.timeframe.start);
      for (const device of devices) {
        const mine = plain.filter((e) => e.props.dev === device && e.ts >= dayStart && e.ts < dayStart + DAY)
          .map((e) => e.props.amount as number);
        const total = mine.reduce((a, b) => a + b, 0);
        const want = kind === 'sum' ? total : kind === 'average' ? total / mine.length : mine.length;
        const row = day.value.find((r) => r.dev === device);
        t.ok(row !== undefined && Math.abs(row.result - want) < 1e-6, `${layout} daily ${kind} of ${device}`);
      }
    }
  }
});
