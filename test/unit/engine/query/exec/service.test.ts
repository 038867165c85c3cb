/**
 * The service's limits: rate limits per project and category, admission (429 past the waiting
 * queue, 503 past the start deadline), real cancellation of a query on a worker (504), and the
 * worker pool answering like the in-process path.
 */
import t from 'tap';
import { ApiError } from '../../../../../engine/base/errors.js';
import { QueryService } from '../../../../../engine/query/exec/service.js';
import { memorySource, randomEvents, type TestEvent } from '../../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const events = randomEvents(11, 2000, START, 86_400_000);
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-02T00:00:00.000Z' };
const base = { event_collection: 'e', timeframe };

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof ApiError ? error.error_code : `bug: ${String(error)}`;
  }
}

t.test('rate limit blocks one category of one project for the next minute', async (t) => {
  let now = START;
  const s = new QueryService({
    source: () => memorySource(events), clock: () => now, workers: 0,
    limits: { queriesPerMinute: 3, extractionsPerMinute: 2 },
  });
  for (let i = 0; i < 3; i++) t.equal(await code(s.run('p', 'count', base)), 'ok');
  try {
    await s.run('p', 'count', base);
    t.fail('4th query allowed');
  } catch (error) {
    t.equal((error as ApiError).error_code, 'RateLimitExceededError');
    t.equal((error as ApiError).status, 429);
    t.match((error as ApiError).message, /3 ad-hoc queries per minute/);
    t.match((error as ApiError).message, /blocked until 2024-03-01T00:01:00.000Z/);
  }
  t.equal(await code(s.run('q', 'count', base)), 'ok', 'another project is unaffected');
  t.equal(await code(s.run('p', 'extraction', { ...base, latest: 1 })), 'ok', 'extractions are their own category');
  now += 30_000;
  t.equal(await code(s.run('p', 'count', base)), 'RateLimitExceededError', 'still blocked');
  now += 30_001;
  t.equal(await code(s.run('p', 'count', base)), 'ok', 'block lifted after a minute');
  const perProject = new QueryService({
    source: () => memorySource(events), clock: () => now, workers: 0,
    projectLimits: (project) => (project === 'tiny' ? { queriesPerMinute: 1 } : undefined),
  });
  t.equal(await code(perProject.run('tiny', 'count', base)), 'ok');
  t.equal(await code(perProject.run('tiny', 'count', base)), 'RateLimitExceededError', 'tuned per project');
  t.equal(await code(perProject.run('big', 'count', base)), 'ok');
});

t.test('admission: 429 past the waiting queue', async (t) => {
  const s = new QueryService({
    source: () => memorySource(events), clock: () => START, workers: 0,
    limits: { runningMax: 1, waitingMax: 1 },
  });
  const runs = [0, 1, 2].map(() => code(s.run('p', 'count', base)));
  t.same(await Promise.all(runs), ['ok', 'ok', 'TooManyConcurrentQueriesError']);
});

t.test('a query on a worker is cancelled past the timeout (504); waiters get 503', async (t) => {
  // A catastrophic regex: the worker spins inside RegExp, so only terminating it can stop it.
  const slow: TestEvent[] = [{ ts: START + 1, props: { s: `${'a'.repeat(40)}!` } }];
  const s = new QueryService({
    source: () => memorySource(slow), clock: () => START, workers: 1,
    limits: { timeoutMs: 1500, startDeadlineMs: 300, runningMax: 1, waitingMax: 4 },
  });
  t.teardown(() => s.close());
  const filters = [{ property_name: 's', operator: 'regex', property_value: '^(a+)+$' }];
  t.same(await s.run('p', 'count', base), { result: 1 }, 'the worker is up');
  const started = Date.now();
  const stuck = s.run('p', 'count', { ...base, filters }).catch((error: ApiError) => error);
  // (A filter: a plain count the footers answer would not wait for a worker.)
  const waiting = code(s.run('p', 'count', { ...base, filters: [{ property_name: 's', operator: 'exists', property_value: true }] }));
  t.equal(await waiting, 'ServiceUnavailableError', '503 when a query cannot start in time');
  const error = await stuck;
  t.equal((error as ApiError).error_code, 'QueryIncompleteError');
  t.equal((error as ApiError).status, 504);
  t.match((error as ApiError).message, /did not finish in 1500 ms/);
  t.ok(Date.now() - started < 1500 + 3000, `cancelled promptly (${Date.now() - started} ms)`);
  t.same(await s.run('p', 'count', { ...base, filters: [{ property_name: 's', operator: 'exists', property_value: true }] }),
    { result: 1 }, 'a fresh worker serves the next query');
});

t.test('a plain count its footers answer is counted on the coordinator, not behind a busy worker', async (t) => {
  const slow: TestEvent[] = [{ ts: START + 1, props: { s: `${'a'.repeat(40)}!` } }, ...events];
  const s = new QueryService({
    source: () => memorySource(slow), clock: () => START, workers: 1,
    limits: { timeoutMs: 1500, startDeadlineMs: 5000, runningMax: 2, waitingMax: 4 },
  });
  const local = new QueryService({ source: () => memorySource(slow), clock: () => START, workers: 0 });
  t.teardown(() => s.close());
  t.same(await s.run('p', 'count', base), await local.run('p', 'count', base), 'the worker is up; the same answer as in process');
  let stuckDone = false;
  const stuck = s.run('p', 'count', { ...base, filters: [{ property_name: 's', operator: 'regex', property_value: '^(a+)+$' }] })
    .catch((error: ApiError) => error).finally(() => { stuckDone = true; });
  const withMetadata = { ...base, include_metadata: true };
  const body = await s.run('p', 'count', withMetadata) as { result: number; execution_metadata: { events_scanned: number } };
  t.notOk(stuckDone, 'answered while the worker is stuck in a query');
  t.equal(body.result, slow.length);
  t.equal(body.execution_metadata.events_scanned, slow.length, 'its metadata as a worker gives it');
  t.same(await s.run('p', 'multi_analysis', { ...base, analyses: { a: { analysis_type: 'count' }, b: { analysis_type: 'count' } } }),
    { result: { a: slow.length, b: slow.length } }, 'a multi_analysis of counts too');
  // The timeframe cuts the rows: their times are read, by the worker, once it is free again.
  const cut = { ...base, timeframe: { start: timeframe.start, end: '2024-03-01T12:00:00.000Z' } };
  const later = s.run('p', 'count', cut);
  t.equal((await stuck as ApiError).error_code, 'QueryIncompleteError');
  t.same(await later, await local.run('p', 'count', cut), 'a cut timeframe: the worker\'s answer');
});

t.test('the worker pool answers like the in-process path', async (t) => {
  const pooled = new QueryService({ source: () => memorySource(events), clock: () => START, workers: 1 });
  const local = new QueryService({ source: () => memorySource(events), clock: () => START, workers: 0 });
  t.teardown(() => pooled.close());
  const params = { ...base, target_property: 'price', group_by: 'country', interval: 'hourly' };
  t.same(await pooled.run('p', 'average', params), await local.run('p', 'average', params));
  t.equal(await code(pooled.run('p', 'average', { ...base, target_property: 'tags' })),
    'NonNumericTargetPropertyError', 'ApiErrors cross the thread boundary');
});
