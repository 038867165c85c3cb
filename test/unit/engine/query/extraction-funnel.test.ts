/** extraction and funnel against the naive reference over seeded random events. */
import t from 'tap';
import { parseFilters } from '../../../../engine/query/plan/filter.js';
import { matches, valueAt } from '../../../helpers/query/reference.js';
import { QueryService } from '../../../../engine/query/exec/service.js';
import { memorySource, randomEvents, rawJson, type TestEvent } from '../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const events = randomEvents(21, 1500, START, 3 * DAY);
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-03T00:00:00.000Z' };
const inRange = (e: TestEvent) => e.ts >= START && e.ts < START + 2 * DAY;
const service = new QueryService({ source: () => memorySource(events), clock: () => START + 3 * DAY, workers: 0 });

function stored(filter: (e: TestEvent) => boolean): Record<string, unknown>[] {
  return events.map((event, seq) => ({ event, seq }))
    .filter(({ event }) => filter(event))
    .sort((a, b) => a.event.ts - b.event.ts || a.seq - b.seq)
    .map(({ event, seq }) => JSON.parse(rawJson(event, seq)));
}

t.test('extraction returns the stored events, oldest first', async (t) => {
  const got = await service.run('p', 'extraction', { event_collection: 'e', timeframe });
  t.same(got, { result: stored(inRange) });
});

t.test('extraction with filters, property_names and latest', async (t) => {
  const filters = [{ property_name: 'country', operator: 'in', property_value: ['US', 'DE'] }];
  const nodes = parseFilters(filters);
  const want = stored((e) => inRange(e) && nodes.every((n) => matches(e, n)));
  const got = await service.run('p', 'extraction', {
    event_collection: 'e', timeframe, filters, property_names: ['country', 'svc.timestamp', 'nested.level'],
  }) as { result: Record<string, unknown>[] };
  t.same(got.result, want.map((e) => {
    const out: Record<string, unknown> = { country: e.country, svc: { timestamp: (e.svc as Record<string, unknown>).timestamp } };
    if (e.nested !== undefined) out.nested = { level: (e.nested as Record<string, unknown>).level };
    return out;
  }));
  const latest = await service.run('p', 'extraction', { event_collection: 'e', timeframe, filters, latest: '5' });
  t.same(latest, { result: want.slice(-5) }, 'the 5 most recent');
});

t.test('latest N keeps the N most recent, ties on the timestamp broken by log order', async (t) => {
  for (const n of [1, 7, 50]) {
    const got = await service.run('p', 'extraction', { event_collection: 'e', timeframe, latest: n });
    t.same(got, { result: stored(inRange).slice(-n) }, `latest ${n}`);
  }
  // Ten distinct timestamps over 600 events, out of order: most rows tie with the N-th newest.
  const tied: TestEvent[] = randomEvents(5, 600, START, DAY).map((event, i) => ({ ...event, ts: START + ((i * 7) % 10) * 1000 }));
  const ties = new QueryService({ source: () => memorySource(tied), clock: () => START + 3 * DAY, workers: 0 });
  t.teardown(() => ties.close());
  const want = tied.map((event, seq) => ({ event, seq })).sort((a, b) => a.event.ts - b.event.ts || a.seq - b.seq)
    .map(({ event, seq }) => JSON.parse(rawJson(event, seq)));
  for (const n of [3, 60, 61, 599]) {
    const got = await ties.run('p', 'extraction', { event_collection: 'e', timeframe, latest: n });
    t.same(got, { result: want.slice(-n) }, `latest ${n} among ties`);
  }
});

t.test('funnel counts actors step by step', async (t) => {
  const steps = [
    { event_collection: 'e', actor_property: 'user', filters: [{ property_name: 'country', operator: 'eq', property_value: 'US' }] },
    { event_collection: 'e', actor_property: 'user', optional: true, filters: [{ property_name: 'flag', operator: 'eq', property_value: true }] },
    { event_collection: 'e', actor_property: 'user', with_actors: true, filters: [{ property_name: 'price', operator: 'gt', property_value: 50 }] },
    { event_collection: 'e', actor_property: 'user', inverted: true, filters: [{ property_name: 'tags', operator: 'contains', property_value: 'd' }] },
    { event_collection: 'e', actor_property: 'user', timeframe: 'this_day', filters: [] },
  ];
  const actorsOf = (step: typeof steps[number], timeframeOk: (e: TestEvent) => boolean) => {
    const nodes = parseFilters(step.filters);
    return new Set(events.filter((e) => timeframeOk(e) && nodes.every((n) => matches(e, n)))
      .map((e) => valueAt(e, 'user')).filter((v) => v !== undefined && v !== null));
  };
  const sets = steps.map((step, i) => actorsOf(step, i === 4 ? (e) => e.ts >= START + 3 * DAY : inRange));
  const step1 = sets[0];
  const step2 = [...step1].filter((a) => sets[1].has(a));
  const step3 = [...step1].filter((a) => sets[2].has(a));
  const step4 = step3.filter((a) => !sets[3].has(a));
  const step5 = step4.filter((a) => sets[4].has(a));
  const got = await service.run('p', 'funnel', { timeframe, steps }) as Record<string, unknown[]>;
  t.same(got.result, [step1.size, step2.length, step3.length, step4.length, step5.length]);
  t.same(new Set(got.actors[2] as unknown[]), new Set(step3), 'with_actors lists the actors');
  t.equal(got.actors[0], null);
  t.equal((got.steps[1] as Record<string, unknown>).optional, true);
  t.same((got.steps[0] as Record<string, unknown>).timeframe, timeframe, 'root timeframe as default');
});
