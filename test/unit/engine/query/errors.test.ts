/** Every query error of docs/api.md §3 that the query service raises, with its code and status. */
import t from 'tap';
import { ApiError } from '../../../../engine/base/errors.js';
import { QueryService, type QueryLimits } from '../../../../engine/query/exec/service.js';
import { memorySource, randomEvents, type TestEvent } from '../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const NOW = START + 5 * 86_400_000;
const events: TestEvent[] = [
  ...randomEvents(3, 500, START, 86_400_000),
  { ts: START + 1000, props: { word: 'x' } },
  { ts: START + 2000, props: { word: 'y' } },
];
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-02T00:00:00.000Z' };
const base = { event_collection: 'e', timeframe };

function service(limits: Partial<QueryLimits> = {}): QueryService {
  const s = new QueryService({
    source: (_p, collection) => collection === 'e' ? memorySource(events) : { idKey: 0, memoryVersion: 0, segments: [], memory: null, schema: {} },
    clock: () => NOW, workers: 0, limits,
  });
  t.teardown(() => s.close());
  return s;
}

const cases: [string, string, Record<string, unknown>, Partial<QueryLimits>?][] = [
  ['MissingRequiredRequestFieldError', 'count', { timeframe }],
  ['MissingRequiredRequestFieldError', 'count', { event_collection: 'e' }],
  ['MissingRequiredRequestFieldError', 'sum', base],
  ['MissingRequiredRequestFieldError', 'percentile', { ...base, target_property: 'price' }],
  ['MissingRequiredRequestFieldError', 'funnel', { timeframe }],
  ['MissingRequiredRequestFieldError', 'multi_analysis', base],
  ['MissingRequiredRequestFieldError', 'funnel', { timeframe, steps: [{ event_collection: 'e' }] }],
  ['TimeframeDefinitionError', 'count', { ...base, timeframe: 'this_7_eons' }],
  ['TimeframeDefinitionError', 'count', { ...base, timeframe: 'this_7_days', timezone: 'Nowhere/City' }],
  ['InvalidFilterError', 'count', { ...base, filters: { property_name: 'a' } }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'a', operator: 'like', property_value: 1 }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'a', operator: 'in', property_value: 1 }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'a', operator: 'regex', property_value: '(' }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'a', operator: 'regex', property_value: 'a'.repeat(257) }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'a', operator: 'exists', property_value: 'yes' }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'a', operator: 'gt', property_value: null }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ operator: 'or', property_value: [] }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'svc.timestamp', operator: 'gt', property_value: 'soon' }] }],
  ['InvalidPropertyNameForGeoFilter', 'count', { ...base, filters: [{ property_name: 'place', operator: 'within', property_value: { coordinates: [0, 0], max_distance_miles: 1 } }] }],
  ['InvalidFilterError', 'count', { ...base, filters: [{ property_name: 'svc.location.coordinates', operator: 'within', property_value: { coordinates: [0], max_distance_miles: 1 } }] }],
  ['InvalidQueryError', 'count', { ...base, interval: 'sometimes' }],
  ['InvalidQueryError', 'percentile', { ...base, target_property: 'price', percentile: 101 }],
  ['InvalidQueryError', 'count', { ...base, order_by: 'result' }],
  ['InvalidQueryError', 'count', { ...base, group_by: 'country', limit: -1 }],
  ['InvalidQueryError', 'count', { ...base, group_by: 'country', order_by: { property_name: 'nope' } }],
  ['InvalidQueryError', 'count', { ...base, force_exact: 'maybe' }],
  ['InvalidQueryError', 'funnel', { timeframe, steps: [{ event_collection: 'e', actor_property: 'user', optional: true }] }],
  ['InvalidQueryError', 'multi_analysis', { ...base, analyses: { a: { analysis_type: 'extraction' } } }],
  ['ResourceNotFoundError', 'mode', base],
  ['NonNumericTargetPropertyError', 'minimum', { ...base, target_property: 'word' }],
  ['NonNumericTargetPropertyError', 'average', { ...base, target_property: 'tags' }],
  ['ApproximationRequiredError', 'count_unique', { ...base, target_property: 'user', force_exact: true }, { countUniqueExactMax: 10 }],
  ['TooManyGroupsError', 'count', { ...base, group_by: 'user' }, { groupsMax: 5 }],
  ['TooManyGroupsError', 'count', { ...base, group_by: ['country', 'user'] }, { groupsMax: 20 }],
  ['TooManyGroupsError', 'funnel', { timeframe, steps: [{ event_collection: 'e', actor_property: 'user' }] }, { funnelActorsMax: 5 }],
  ['TooManyIntervalsError', 'count', { ...base, timeframe: 'this_30_days', interval: 'minutely' }],
  ['TooManyIntervalsError', 'count', { ...base, interval: 'hourly' }, { intervalsMax: 10 }],
  ['ResponseTooLargeError', 'select_unique', { ...base, target_property: 'user' }, { responseBytesMax: 100 }],
  ['ExtractionTooLargeError', 'extraction', base, { extractionScanMax: 100 }],
  ['ExtractionTooLargeError', 'extraction', base, { extractionResultMax: 100 }],
];

for (const [code, analysis, params, limits] of cases) {
  t.test(`${code}: ${analysis} ${JSON.stringify(params).slice(0, 120)}`, async (t) => {
    try {
      await service(limits).run('p', analysis, params);
      t.fail('no error');
    } catch (error) {
      t.ok(error instanceof ApiError, 'an ApiError');
      const api = error as ApiError;
      t.equal(api.error_code, code);
      t.ok(api.status === 400 || api.status === 404, 'a client error status');
      t.ok(api.message.length > 10, 'a message that explains');
    }
  });
}

t.test('null and zero semantics over no values', async (t) => {
  const s = service();
  const empty = { ...base, filters: [{ property_name: 'country', operator: 'eq', property_value: 'none' }] };
  t.same(await s.run('p', 'count', empty), { result: 0 });
  t.same(await s.run('p', 'sum', { ...empty, target_property: 'price' }), { result: 0 });
  t.same(await s.run('p', 'average', { ...empty, target_property: 'price' }), { result: null });
  t.same(await s.run('p', 'median', { ...empty, target_property: 'price' }), { result: null });
  t.same(await s.run('p', 'count_unique', { ...empty, target_property: 'user' }), { result: 0 });
  t.same(await s.run('p', 'select_unique', { ...empty, target_property: 'user' }), { result: [] });
  t.same(await s.run('p', 'minimum', { ...base, target_property: 'never_seen' }), { result: null });
  t.same(await s.run('p', 'count', { ...base, event_collection: 'unknown' }), { result: 0 });
});

t.test('count_unique estimates above the exact limit; percentile sketches', async (t) => {
  const many: TestEvent[] = [];
  for (let i = 0; i < 20_000; i++) many.push({ ts: START + i, props: { id: `user-${i}`, n: i, v: i % 5000 } });
  const s = new QueryService({
    source: () => memorySource(many), clock: () => NOW, workers: 0,
    limits: { countUniqueExactMax: 1000, percentileExactMax: 1000 },
  });
  const strings = (await s.run('p', 'count_unique', { ...base, target_property: 'id' })) as { result: number };
  t.ok(Math.abs(strings.result - 20_000) / 20_000 < 0.03, `string estimate ${strings.result}`);
  const numbers = (await s.run('p', 'count_unique', { ...base, target_property: 'v' })) as { result: number };
  t.ok(Math.abs(numbers.result - 5000) / 5000 < 0.03, `number estimate ${numbers.result}`);
  const p90 = (await s.run('p', 'percentile', { ...base, target_property: 'n', percentile: 90 })) as { result: number };
  t.ok(Math.abs(p90.result - 17_999) / 17_999 < 0.011, `percentile estimate ${p90.result}`);
  const exact = new QueryService({ source: () => memorySource(many), clock: () => NOW, workers: 0 });
  t.same(await exact.run('p', 'count_unique', { ...base, target_property: 'id', force_exact: true }), { result: 20_000 });
  t.same(await exact.run('p', 'median', { ...base, target_property: 'n' }), { result: 9999.5 });
});

t.test('unfiltered count_unique far above the exact limit merges the segment sketches', async (t) => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const { writeSegment } = await import('../../../../engine/storage/segment/writer.js');
  const { makeChunk } = await import('../../../helpers/query/test-support.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-hll-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const segments = [0, 1, 2].map((s) => {
    const part: TestEvent[] = [];
    for (let i = 0; i < 3000; i++) part.push({ ts: START + s * 3_600_000 + i, props: { id: `id-${s}-${i}` } });
    const file = path.join(dir, `${s}.arrow`);
    return { file, footer: writeSegment(file, makeChunk(part, s * 10_000), {}) };
  });
  const tail: TestEvent[] = [];
  for (let i = 0; i < 1000; i++) tail.push({ ts: START + 10 * 3_600_000 + i, props: { id: `tail-${i}` } });
  const source = { idKey: 0, memoryVersion: 0, segments, memory: makeChunk(tail, 99_000), schema: {} };
  const s = new QueryService({
    source: () => source, clock: () => NOW, workers: 0, limits: { countUniqueExactMax: 2000 },
  });
  const got = (await s.run('p', 'count_unique', { ...base, target_property: 'id', include_metadata: true })) as
    { result: number; execution_metadata: { events_scanned: number } };
  t.ok(Math.abs(got.result - 10_000) / 10_000 < 0.03, `estimate ${got.result}`);
  t.equal(got.execution_metadata.events_scanned, 10_000);
  const exact = new QueryService({ source: () => source, clock: () => NOW, workers: 0 });
  t.same(await exact.run('p', 'count_unique', { ...base, target_property: 'id' }), { result: 10_000 });
  try {
    await s.run('p', 'count_unique', { ...base, target_property: 'id', force_exact: true });
    t.fail('no error');
  } catch (error) {
    t.equal((error as ApiError).error_code, 'ApproximationRequiredError');
  }
});
