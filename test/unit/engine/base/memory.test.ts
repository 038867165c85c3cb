/**
 * The memory budget bounds caches, not answers: a store many times larger than its budget answers
 * every analysis exactly as the same store with a generous budget does.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { openEngine, type TallyEngine } from '../../../../engine/index.js';
import { defaultMemoryBudget, parseBytes, planMemory } from '../../../../engine/base/memory.js';

const ctx = { ip: '203.0.113.9', userAgent: 'test/1.0' };
const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const timeframe = { start: '2024-01-01T00:00:00Z', end: '2024-02-01T00:00:00Z' };

const QUERIES: [string, Record<string, unknown>][] = [
  ['count', {}],
  ['count', { filters: [{ property_name: 'country', operator: 'eq', property_value: 'DE' }] }],
  ['count', { filters: [{ property_name: 'price', operator: 'gte', property_value: 50 }], interval: 'daily' }],
  ['count_unique', { target_property: 'user' }],
  ['minimum', { target_property: 'price' }],
  ['maximum', { target_property: 'price', group_by: 'country' }],
  ['sum', { target_property: 'price', group_by: ['country', 'member'] }],
  ['average', { target_property: 'quantity', interval: 'weekly' }],
  ['median', { target_property: 'price' }],
  ['percentile', { target_property: 'price', percentile: 90 }],
  ['standard_deviation', { target_property: 'price' }],
  ['select_unique', { target_property: 'country' }],
  ['extraction', { latest: 50 }],
  ['multi_analysis', { analyses: { n: { analysis_type: 'count' }, s: { analysis_type: 'sum', target_property: 'quantity' } } }],
];

function rounded(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? value : Number(value.toPrecision(10));
  if (Array.isArray(value)) return value.map(rounded);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, rounded(inner)]));
  }
  return value;
}

async function answers(engine: TallyEngine, project: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const [analysis, params] of QUERIES) {
    out.push(await engine.queries.run(project, analysis, { event_collection: 'views', timeframe, ...params }));
  }
  out.push(await engine.queries.run(project, 'funnel', {
    timeframe,
    steps: [
      { event_collection: 'views', actor_property: 'user' },
      { event_collection: 'views', actor_property: 'user', filters: [{ property_name: 'member', operator: 'eq', property_value: true }] },
    ],
  }));
  return out;
}

t.test('a store far larger than the memory budget answers every analysis as with a large budget', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-budget-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const small = 2 * 1024 * 1024;
  let engine = await openEngine({ dataDir: dir, queryWorkers: 1, memoryBudgetBytes: small, flushIntervalMs: 3_600_000 });
  const project = engine.projects.list()[0].id;
  const random = mulberry32(7);
  const countries = ['US', 'DE', 'FR', 'JP', 'BR'];
  for (let batch = 0; batch < 30; batch++) {
    const events = Array.from({ length: 5_000 }, () => ({
      collection: 'views',
      event: {
        user: `u${Math.floor(random() * 20_000)}`,
        country: countries[Math.floor(random() * countries.length)],
        price: Math.round(random() * 10_000) / 100,
        quantity: 1 + Math.floor(random() * 5),
        member: random() < 0.3,
        svc: { timestamp: new Date(START + Math.floor(random() * 20 * DAY)).toISOString() },
      },
    }));
    const results = await engine.events.append(project, events, ctx);
    t.equal(results.filter((result) => !result.ok).length, 0);
  }
  await engine.flush();
  const bounded = await answers(engine, project);
  await engine.close();
  const onDisk = fs.readdirSync(path.join(dir, 'projects', project, 'views')).length;
  t.ok(onDisk >= 20, `the rows span ${onDisk} day partitions`);

  engine = await openEngine({ dataDir: dir, queryWorkers: 1, memoryBudgetBytes: 4 * 1024 ** 3, flushIntervalMs: 3_600_000 });
  const generous = await answers(engine, project);
  await engine.close();
  t.equal((bounded[0] as { result: number }).result, 150_000);
  // Sums over segments in another order differ in the last bits of a double.
  t.same(rounded(bounded), rounded(generous));
});

t.test('budget sizes: flag syntax, the default and the split', async (t) => {
  t.equal(parseBytes('1g'), 1024 ** 3);
  t.equal(parseBytes('512m'), 512 * 1024 ** 2);
  t.equal(parseBytes('1.5GiB'), 1.5 * 1024 ** 3);
  t.equal(parseBytes('4096'), 4096);
  t.ok(Number.isNaN(parseBytes('lots')));
  t.equal(defaultMemoryBudget(24 * 1024 ** 3), 768 * 1024 ** 2);
  t.equal(defaultMemoryBudget(1024 ** 3), 256 * 1024 ** 2);
  t.equal(defaultMemoryBudget(256 * 1024 ** 3), 2 * 1024 ** 3);
  const plan = planMemory(1024 ** 3, 2);
  t.ok(2 * (plan.chunkCacheBytes + plan.footerCacheBytes) + plan.bufferBytes + plan.logCacheBytes <= 1024 ** 3);
});
