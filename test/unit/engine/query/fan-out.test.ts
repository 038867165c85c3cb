/**
 * Fan-out: one query's segments split across 2 workers (partial states merged by the
 * coordinator, groups merged by value) answers like 1 worker, for every analysis type; its
 * errors, timeouts (504, every worker's task cancelled) and the segment assignment.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ApiError } from '../../../../engine/base/errors.js';
import type { ScanSource, SegmentRef } from '../../../../engine/storage/chunk.js';
import { splitSource, workerOfSegment } from '../../../../engine/query/exec/partial.js';
import { QueryService } from '../../../../engine/query/exec/service.js';
import { makeChunk, randomEvents, type TestEvent } from '../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const events = randomEvents(5, 6000, START, 4 * DAY);
const timeframe = { start: '2024-03-01T06:00:00.000Z', end: '2024-03-04T18:00:00.000Z' };
const base = { event_collection: 'e', timeframe };

async function writeSource(all: readonly TestEvent[], parts: number): Promise<ScanSource> {
  const { writeSegment } = await import('../../../../engine/storage/segment/writer.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-fanout-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const sorted = [...all].sort((a, b) => a.ts - b.ts);
  const size = Math.ceil(sorted.length / (parts + 1));
  const segments: SegmentRef[] = [];
  for (let p = 0; p < parts; p++) {
    const file = path.join(dir, `${p}.arrow`);
    segments.push({ file, footer: writeSegment(file, makeChunk(sorted.slice(p * size, (p + 1) * size), p * 100_000), {}) });
  }
  return { idKey: 0, memoryVersion: 0, segments, memory: makeChunk(sorted.slice(parts * size), 900_000), schema: {} };
}

/** Numbers rounded to 9 significant digits: sums may differ in the last bits by merge order. */
function rounded(body: unknown): unknown {
  return JSON.parse(JSON.stringify(body, (_key, value: unknown) =>
    (typeof value === 'number' && !Number.isInteger(value) ? Number(value.toPrecision(9)) : value)));
}

async function outcome(run: Promise<unknown>): Promise<unknown> {
  try {
    return rounded(await run);
  } catch (error) {
    return error instanceof ApiError ? `${error.error_code}: ${error.message}` : `bug: ${String(error)}`;
  }
}

t.test('2 workers answer like 1 worker for every analysis', async (t) => {
  const source = await writeSource(events, 7);
  const options = { source: () => source, clock: () => START + 4 * DAY };
  const one = new QueryService({ ...options, workers: 1 });
  const two = new QueryService({ ...options, workers: 2, fanOut: 2 });
  const local = new QueryService({ ...options, workers: 0 });
  t.teardown(async () => {
    await one.close();
    await two.close();
  });
  const filters = [{ property_name: 'price', operator: 'gte', property_value: 20 }];
  const modes: Record<string, Record<string, unknown>> = {
    plain: {},
    filtered: { filters },
    group_by: { group_by: 'country' },
    interval: { interval: 'hourly' },
    group_by_interval: { group_by: ['country', 'flag'], interval: 'every_6_hours' },
    group_by_list: { group_by: 'tags', interval: 'daily', include_metadata: true },
    ordered: { group_by: 'user', order_by: { property_name: 'result', direction: 'DESC' }, limit: 5 },
  };
  const analyses: [string, Record<string, unknown>][] = [
    ['count', {}],
    ['count_unique', { target_property: 'user' }],
    ['count_unique', { target_property: 'tags', force_exact: true }],
    ['minimum', { target_property: 'price' }],
    ['maximum', { target_property: 'nested.level' }],
    ['sum', { target_property: 'price' }],
    ['average', { target_property: 'price' }],
    ['median', { target_property: 'price' }],
    ['percentile', { target_property: 'price', percentile: 90 }],
    ['standard_deviation', { target_property: 'price' }],
    ['select_unique', { target_property: 'country' }],
    ['multi_analysis', { analyses: {
      n: { analysis_type: 'count' },
      u: { analysis_type: 'count_unique', target_property: 'country' },
      p: { analysis_type: 'percentile', target_property: 'nested.level', percentile: 25 },
      s: { analysis_type: 'sum', target_property: 'price' },
    } }],
  ];
  for (const [analysis, extra] of analyses) {
    for (const [mode, params] of Object.entries(modes)) {
      if (mode === 'ordered' && analysis === 'select_unique') continue;
      const query = { ...base, ...extra, ...params };
      const want = await outcome(one.run('p', analysis, query));
      const got = await outcome(two.run('p', analysis, query));
      const strip = (body: unknown) => {
        const copy = body as { execution_metadata?: Record<string, unknown> };
        if (typeof copy === 'object' && copy?.execution_metadata) {
          copy.execution_metadata.total_processing_time = 0;
        }
        return copy;
      };
      t.same(strip(got), strip(want), `${analysis} ${mode}`);
      if (mode === 'plain') t.same(got, await outcome(local.run('p', analysis, query)), `${analysis} in-process`);
    }
  }
  // Small exact budgets: partial states switch to sketches on one worker but not the other.
  const tiny = new QueryService({ ...options, workers: 2, fanOut: 2,
    limits: { countUniqueExactMax: 40, percentileExactMax: 700 } });
  const tinyOne = new QueryService({ ...options, workers: 1,
    limits: { countUniqueExactMax: 40, percentileExactMax: 700 } });
  t.teardown(async () => {
    await tiny.close();
    await tinyOne.close();
  });
  for (const [analysis, extra] of [
    ['count_unique', { target_property: 'user' }],
    ['count_unique', { target_property: 'user', force_exact: true }],
    ['percentile', { target_property: 'price', percentile: 90 }],
    ['median', { target_property: 'price', group_by: 'country' }],
  ] as const) {
    const query = { ...base, ...extra };
    const want = await outcome(tinyOne.run('p', analysis, query));
    const got = await outcome(tiny.run('p', analysis, query));
    if (typeof want === 'number' && typeof got === 'number') {
      t.ok(Math.abs(want - got) <= want * 0.05, `${analysis} estimate within 5% (${got} vs ${want})`);
    } else if (typeof want === 'object' && want !== null && typeof got === 'object' && got !== null) {
      t.same(Object.keys(got), Object.keys(want), `${analysis} same shape`);
    } else {
      t.same(got, want, `${analysis} with tiny exact budgets`);
    }
  }
  t.equal(await outcome(two.run('p', 'average', { ...base, target_property: 'tags' })),
    await outcome(one.run('p', 'average', { ...base, target_property: 'tags' })), 'NonNumericTargetPropertyError');
  const groupsMax = new QueryService({ ...options, workers: 2, fanOut: 2, limits: { groupsMax: 50 } });
  t.teardown(() => groupsMax.close());
  t.match(await outcome(groupsMax.run('p', 'count', { ...base, group_by: 'user' })), /^TooManyGroupsError/,
    'the group limit holds over the merged groups');
  for (const [analysis, query] of [
    ['extraction', { ...base, filters, latest: 20 }],
    ['funnel', { steps: [
      { event_collection: 'e', actor_property: 'user', timeframe },
      { event_collection: 'e', actor_property: 'user', timeframe, filters },
    ] }],
  ] as const) {
    t.same(await outcome(two.run('p', analysis, query)), await outcome(one.run('p', analysis, query)), analysis);
  }
  // Funnels fan out too (each worker finds its days' actor keys, united by step): as one worker,
  // for each kind of actor and of step, events scanned included.
  for (const actor of ['user', 'country', 'price', 'tags', 'flag']) {
    const query = { include_metadata: true, steps: [
      { event_collection: 'e', actor_property: actor, timeframe },
      { event_collection: 'e', actor_property: actor, timeframe, optional: true, filters },
      { event_collection: 'e', actor_property: actor, timeframe, inverted: true, filters: [{ property_name: 'country', operator: 'eq', property_value: 'US' }] },
      { event_collection: 'e', actor_property: actor, timeframe: { start: timeframe.start, end: '2024-03-02T00:00:00.000Z' } },
    ] };
    const noTime = (body: unknown) => {
      const copy = body as { execution_metadata?: Record<string, unknown> };
      if (copy.execution_metadata !== undefined) copy.execution_metadata.total_processing_time = 0;
      return copy;
    };
    const want = noTime(await outcome(one.run('p', 'funnel', query)));
    t.ok(Array.isArray((want as { result?: unknown }).result), `funnel on ${actor}: answered`);
    t.same(noTime(await outcome(two.run('p', 'funnel', query))), want, `funnel on ${actor}, fanned out`);
  }
  // The actor limit holds over the united keys: each worker's share of the prices is under it.
  const prices = [{ event_collection: 'e', actor_property: 'price', timeframe }];
  const united = (await two.run('p', 'funnel', { steps: prices }) as { result: number[] }).result[0];
  for (const share of splitSource(source, 2)) {
    const alone = new QueryService({ source: () => share!, clock: options.clock, workers: 0 });
    const count = (await alone.run('p', 'funnel', { steps: prices }) as { result: number[] }).result[0];
    t.ok(count < united, `a share's prices (${count}) are fewer than all (${united})`);
  }
  const actorsMax = new QueryService({ ...options, workers: 2, fanOut: 2, limits: { funnelActorsMax: united - 1 } });
  t.teardown(() => actorsMax.close());
  t.match(await outcome(actorsMax.run('p', 'funnel', { steps: prices })), /^TooManyGroupsError/, 'the actor limit holds over the united keys');
});

t.test('segments are assigned to workers by file, evenly for numbered files', async (t) => {
  const counts = [0, 0];
  for (let d = 0; d < 90; d++) counts[workerOfSegment(`/data/events/${d}.arrow`, 2)]++;
  t.same(counts, [45, 45]);
  // Day directories: any run of days splits evenly, whatever the files' sequence numbers.
  const byDay = [0, 0, 0];
  for (let d = 0; d < 30; d++) {
    const day = new Date(Date.UTC(2026, 1, 20) + d * 86_400_000).toISOString().slice(0, 10);
    byDay[workerOfSegment(`/data/p/views/${day}/${String(d % 4 === 0 ? 2 * d : 7).padStart(12, '0')}-1.arrow`, 3)]++;
  }
  t.same(byDay, [10, 10, 10]);
  t.equal(workerOfSegment('/data/p/views/2026-03-01/000000000001-5.arrow', 2),
    workerOfSegment('/data/p/views/2026-03-01/000000000002-9.arrow', 2), 'a day stays with one worker');
  t.equal(workerOfSegment('/a/b/x.arrow', 3), workerOfSegment('/a/b/x.arrow', 3), 'deterministic');
  t.equal(workerOfSegment('/a/b/x.arrow', 1), 0);
  const source = await writeSource(events.slice(0, 300), 3);
  const shares = splitSource(source, 2);
  t.same(shares.map((share) => share?.segments.map((ref) => path.basename(ref.file))), [['0.arrow', '2.arrow'], ['1.arrow']]);
  t.equal(shares.filter((share) => share?.memory !== null).length, 1, 'the buffer goes to one worker');
});

t.test('a fanned-out query past its timeout is cancelled on every worker (504)', async (t) => {
  // A catastrophic regex in every segment: each worker spins inside RegExp.
  const slow: TestEvent[] = [];
  for (let i = 0; i < 40; i++) slow.push({ ts: START + 7 * 3_600_000 + i, props: { s: `${'a'.repeat(40)}!` } });
  const source = await writeSource(slow, 3);
  const s = new QueryService({
    source: () => source, clock: () => START + 4 * DAY, workers: 2, fanOut: 2,
    limits: { timeoutMs: 1500, runningMax: 2, waitingMax: 4 },
    // The first query loads Arrow on both workers: not part of what this test times.
    projectLimits: (project) => (project === 'warm' ? { timeoutMs: 60_000 } : undefined),
  });
  t.teardown(() => s.close());
  t.same(await s.run('warm', 'count', { ...base, group_by: 's' }),
    { result: [{ s: `${'a'.repeat(40)}!`, result: 40 }] }, 'the workers are up');
  const started = Date.now();
  const filters = [{ property_name: 's', operator: 'regex', property_value: '^(a+)+$' }];
  const error = await s.run('p', 'count', { ...base, filters }).catch((e: ApiError) => e);
  t.equal((error as ApiError).error_code, 'QueryIncompleteError');
  t.equal((error as ApiError).status, 504);
  t.ok(Date.now() - started < 1500 + 3000, `cancelled promptly (${Date.now() - started} ms)`);
  t.same(await s.run('p', 'count', base), { result: 40 }, 'fresh workers serve the next query');
  t.same(await s.run('p', 'count', { ...base, group_by: 's' }),
    { result: [{ s: `${'a'.repeat(40)}!`, result: 40 }] }, 'and fanned-out ones');
});
