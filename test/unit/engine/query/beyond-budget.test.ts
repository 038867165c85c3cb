/**
 * A store ten times the memory budget answers every analysis as the naive reference does, through
 * the whole engine: real query workers whose caches hold a tenth of what a query reads, segment
 * files written by real flushes and merges, events of every type (numbers, strings, booleans,
 * lists, nulls, missing, a column mixing them), and deletes applied both ways: while they hide
 * rows at query time and once the segments are rewritten without them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { openEngine, type TallyEngine } from '../../../../engine/index.js';
import { planMemory } from '../../../../engine/base/memory.js';
import { parseRequest } from '../../../../engine/query/plan/request.js';
import type { AggregatePlan } from '../../../../engine/query/plan/plan.js';
import { readSegment } from '../../../../engine/storage/segment/reader.js';
import type { ColumnChunk } from '../../../../engine/storage/chunk.js';
import { close, expectedAnswer } from '../../../helpers/query/expected.js';
import { matches } from '../../../helpers/query/reference.js';
import { randomEvents, type TestEvent } from '../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const NOW = START + 12 * DAY;
/** The least budget planMemory works with: each of the two query workers' caches gets 256 KiB. */
const BUDGET = 1024 * 1024;
const EVENTS = 320_000;
const ctx = { ip: '203.0.113.9', userAgent: 'test/1.0' };
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
  select_unique: 'country',
};

const MODES: Record<string, Record<string, unknown>> = {
  plain: {},
  filters: { filters: FILTERS },
  eq: { filters: [{ property_name: 'country', operator: 'eq', property_value: 'FR' }] },
  group_by: { group_by: 'country' },
  interval: { interval: 'daily', timezone: 'Europe/Berlin' },
  group_by_interval: { group_by: ['country', 'flag'], interval: 'every_2_days', filters: FILTERS.slice(0, 1) },
};

/** The event as a client sends it: nested objects from the dotted paths, and its timestamp. */
function sent(event: TestEvent): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [property, value] of Object.entries(event.props)) {
    if (value === undefined) continue;
    const parts = property.split('.');
    let target = root;
    for (const part of parts.slice(0, -1)) target = (target[part] ??= {}) as Record<string, unknown>;
    target[parts[parts.length - 1]] = value;
  }
  const svc = (root.svc ??= {}) as Record<string, unknown>;
  svc.timestamp = new Date(event.ts).toISOString();
  return root;
}

/** Bytes a segment's rows take decoded, at the least: times, and each column's tags, numbers and codes. */
function decodedBytes(chunk: ColumnChunk): number {
  let bytes = chunk.rows * Float64Array.BYTES_PER_ELEMENT;
  for (const column of chunk.columns.values()) {
    bytes += column.tags.byteLength + (column.str?.byteLength ?? 0) +
      (column.scaled ? column.scaled.values.byteLength : column.num?.byteLength ?? 0);
  }
  return bytes;
}

function segmentFiles(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.arrow')).map((name) => path.join(dir, name));
}

async function agreeWithReference(t: Test, engine: TallyEngine, project: string, events: readonly TestEvent[], state: string): Promise<void> {
  for (const [kind, target] of Object.entries(KINDS)) {
    for (const [mode, extra] of Object.entries(MODES)) {
      const params: Record<string, unknown> = { event_collection: 'e', timeframe, ...extra };
      if (target) params.target_property = target;
      if (kind === 'percentile') params.percentile = 90;
      const actual = await engine.queries.run(project, kind, params, false);
      t.equal(close(actual, expectedAnswer(events, kind, target, params, NOW)), null, `${state}: ${kind} × ${mode}`);
    }
  }
  const multi = await engine.queries.run(project, 'multi_analysis', {
    event_collection: 'e', timeframe, group_by: 'country',
    analyses: { n: { analysis_type: 'count' }, top: { analysis_type: 'maximum', target_property: 'nested.level' } },
  }, false) as { result: { country: unknown; n: number; top: unknown }[] };
  const counts = expectedAnswer(events, 'count', null, { event_collection: 'e', timeframe, group_by: 'country' }, NOW) as { result: { country: unknown; result: number }[] };
  const tops = expectedAnswer(events, 'maximum', 'nested.level', { event_collection: 'e', timeframe, group_by: 'country', target_property: 'nested.level' }, NOW) as
    { result: { country: unknown; result: unknown }[] };
  t.equal(close(multi.result, counts.result.map((row, i) => ({ country: row.country, n: row.result, top: tops.result[i].result }))), null,
    `${state}: multi_analysis`);
  const filters = [{ property_name: 'user', operator: 'eq', property_value: 'u7' }, { property_name: 'price', operator: 'gte', property_value: 99 }];
  const extracted = await engine.queries.run(project, 'extraction', { event_collection: 'e', timeframe, filters }, false) as
    { result: { user: string; price: number; svc: { timestamp: string } }[] };
  const extractParams = { event_collection: 'e', timeframe, filters };
  const plan = parseRequest('count', extractParams, { nowMs: NOW }) as AggregatePlan;
  const want = events.filter((event) => event.ts >= plan.range.startMs && event.ts < plan.range.endMs &&
    plan.filters.every((node) => matches(event, node))).map((event) => `${event.ts}/${event.props.price as number}`).sort();
  t.ok(want.length > 0, `${state}: the extraction selects some events`);
  t.same(extracted.result.map((event) => `${Date.parse(event.svc.timestamp)}/${event.price}`).sort(), want, `${state}: extraction`);
}

t.test('a store ten times the memory budget answers every analysis as the reference does, deletes applied', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-beyond-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const engine = await openEngine({ dataDir, queryWorkers: 2, memoryBudgetBytes: BUDGET, flushIntervalMs: 3_600_000, clock: () => NOW });
  t.teardown(() => engine.close());
  const project = engine.projects.list()[0]!.id;
  // Ten days (some outside the timeframe), written as ten loads each flushed to its own segments.
  const all = randomEvents(29, EVENTS, START - DAY, 10 * DAY);
  for (let load = 0; load < 10; load++) {
    const part = all.slice((load * EVENTS) / 10, ((load + 1) * EVENTS) / 10);
    for (let at = 0; at < part.length; at += 5000) {
      await engine.events.append(project, part.slice(at, at + 5000).map((event) => ({ collection: 'e', event: sent(event) })), ctx);
    }
    await engine.flush();
  }

  const { chunkCacheBytes } = planMemory(BUDGET, 2);
  let decoded = 0;
  for (const file of segmentFiles(dataDir)) decoded += decodedBytes(readSegment(file));
  t.ok(decoded >= 10 * BUDGET, `the segments take ${(decoded / 2 ** 20).toFixed(1)} MiB decoded, ten times the budget or more`);
  t.ok(decoded >= 20 * 2 * chunkCacheBytes, 'twenty times what the query caches hold together');

  await agreeWithReference(t, engine, project, all, 'as written');

  // A delete of rows (by a filter and a timeframe) and of a property: hidden at query time first.
  await engine.collections.deleteEvents(project, 'e', {
    filters: [{ property_name: 'country', operator: 'eq', property_value: 'DE' }, { property_name: 'price', operator: 'gt', property_value: 50 }],
    timeframe: { start: '2024-03-02T00:00:00.000Z', end: '2024-03-06T12:00:00.000Z' },
  });
  await engine.collections.deleteProperty(project, 'e', 'nested');
  const gone = (event: TestEvent) => event.props.country === 'DE' && typeof event.props.price === 'number' &&
    event.props.price > 50 && event.ts >= Date.UTC(2024, 2, 2) && event.ts < Date.UTC(2024, 2, 6, 12);
  const kept = all.filter((event) => !gone(event)).map((event) => {
    const props = { ...event.props };
    delete props['nested.level'];
    return { ts: event.ts, props };
  });
  t.ok(all.length - kept.length > 1000, `the delete removes ${all.length - kept.length} events`);
  const pending = () => engine.collections.scanSource(project, 'e', 0, 8.64e15).deletes?.length ?? 0;
  t.ok(pending() > 0, 'the deletes are still applied at query time');
  await agreeWithReference(t, engine, project, kept, 'deletes hidden at query time');

  // Then rewritten out of the segments.
  // Each flush runs one rewrite step (a segment); the store has a few dozen segments.
  for (let round = 0; round < 500 && pending() > 0; round++) await engine.flush();
  t.equal(pending(), 0, 'the segments were rewritten without the deleted rows');
  await agreeWithReference(t, engine, project, kept, 'deletes rewritten');
});
