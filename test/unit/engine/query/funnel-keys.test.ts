/**
 * A funnel without with_actors keeps its actors as a distinct count's 64-bit keys (funnel.ts
 * stepActorKeys), one with them as values: on seeded random events (strings, numbers, booleans,
 * lists, nulls, mixed types), in write buffers and in real segment files, both count the same
 * actors at every step, for every kind of step (optional, inverted, its own timeframe).
 */
import t from 'tap';
import { QueryService } from '../../../../engine/query/exec/service.js';
import type { ScanSource } from '../../../../engine/storage/chunk.js';
import { memorySource, randomEvents } from '../../../helpers/query/test-support.js';
import { writeDaySegments } from '../../../helpers/query/segments.js';

const START = Date.UTC(2024, 0, 1);
const DAY = 86_400_000;
const ROWS = 2000;
const events = randomEvents(34, 3 * ROWS, START, 3 * DAY);
const timeframe = { start: '2024-01-01T00:00:00.000Z', end: '2024-01-04T00:00:00.000Z' };

function service(source: () => ScanSource): QueryService {
  return new QueryService({ source, clock: () => START + 4 * DAY, workers: 0 });
}

const inMemory = service(() => memorySource(events));
// The same properties in three day segments (writeDaySegments: a day each, a second a row).
const refs = writeDaySegments(t, 3, ROWS, (s, i) => events[s * ROWS + i].props);
const inSegments = service(() => ({ idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} }));

/** Funnels over each actor property: filtered, optional, inverted, and a step with a timeframe of its own. */
function funnels(actor: string): Record<string, unknown>[][] {
  const step = (extra: Record<string, unknown>) => ({ event_collection: 'e', actor_property: actor, ...extra });
  return [
    [step({}), step({ filters: [{ property_name: 'country', operator: 'eq', property_value: 'US' }] })],
    [
      step({ filters: [{ property_name: 'flag', operator: 'eq', property_value: true }] }),
      step({ optional: true, filters: [{ property_name: 'price', operator: 'gt', property_value: 50 }] }),
      step({ inverted: true, filters: [{ property_name: 'tags', operator: 'contains', property_value: 'd' }] }),
      step({ timeframe: { start: '2024-01-02T00:00:00.000Z', end: '2024-01-03T00:00:00.000Z' } }),
    ],
    [step({}), step({ inverted: true, filters: [{ property_name: 'country', operator: 'in', property_value: ['DE', 'FR'] }] })],
  ];
}

for (const [where, queries] of [['write buffers', inMemory], ['segment files', inSegments]] as const) {
  t.test(`in ${where}: keyed actors count as actor values do`, async (t) => {
    let nonZero = 0;
    for (const actor of ['user', 'country', 'flag', 'price', 'tags', 'nested.level']) {
      for (const steps of funnels(actor)) {
        const keyed = await queries.run('p', 'funnel', { timeframe, steps }) as { result: number[]; actors?: unknown };
        const withActors = steps.map((step, index) => (index === steps.length - 1 ? { ...step, with_actors: true } : step));
        const valued = await queries.run('p', 'funnel', { timeframe, steps: withActors }) as { result: number[] };
        t.same(keyed.result, valued.result, `${actor}: ${steps.length} steps`);
        t.equal(keyed.actors, undefined, 'no actors asked for, none listed');
        nonZero += keyed.result.filter((count) => count > 0).length;
      }
    }
    t.ok(nonZero > 20, `most steps count actors (${nonZero})`);
  });
}

t.test('a step past funnelActorsMax actors is refused, keyed or not', async (t) => {
  const small = new QueryService({
    source: () => ({ idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} }),
    clock: () => START + 4 * DAY, workers: 0, limits: { funnelActorsMax: 5 },
  });
  const steps = [{ event_collection: 'e', actor_property: 'user' }];
  await t.rejects(small.run('p', 'funnel', { timeframe, steps }), { error_code: 'TooManyGroupsError' } as never);
  await t.rejects(small.run('p', 'funnel', { timeframe, steps: [{ ...steps[0], with_actors: true }] }), { error_code: 'TooManyGroupsError' } as never);
  const few = [{ event_collection: 'e', actor_property: 'flag' }];
  t.same((await small.run('p', 'funnel', { timeframe, steps: few }) as { result: number[] }).result, [2], 'true and false');
});
