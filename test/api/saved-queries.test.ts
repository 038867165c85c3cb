/**
 * Saved and cached queries (docs/api.md §9) over the real server: each endpoint's success and error
 * shapes, results equal to the ad-hoc answer, a cached result served while the ad-hoc rate limit
 * refuses queries, and definitions (and a recomputed cache) after a restart.
 */
import t from 'tap';
import { client, type Res } from '../helpers/http.js';
import { serverForFile } from '../helpers/server.js';

const shared = serverForFile(t);
const COUNT = { analysis_type: 'count', event_collection: 'views', timeframe: 'this_14_days' };

function paths() {
  const base = `/3.0/projects/${shared.server.projectId}/queries`;
  return { base, saved: (name: string) => `${base}/saved/${name}` };
}

async function put(name: string, body: unknown): Promise<Res> {
  return shared.api.send('PUT', paths().saved(name), { key: shared.server.keys.master, body });
}

async function adHocCount(): Promise<number> {
  const response = await shared.api.post(`${paths().base}/count`, { key: shared.server.keys.read, body: COUNT });
  return response.body.result;
}

t.test('record, read, replace, rename and delete a saved query', async (t) => {
  const { server, api } = shared;
  t.equal((await api.post(`/3.0/projects/${server.projectId}/events`, { key: server.keys.write, body: { views: [{ p: 1 }, { p: 2 }, { p: 3 }] } })).status, 200);
  const created = await put('pv-14', { query: COUNT, metadata: { display_name: 'Views', visualization: { chart_type: 'metric' } } });
  t.equal(created.status, 201);
  t.match(created.body, { query_name: 'pv-14', refresh_rate: 0, run_information: null, query: COUNT, metadata: { display_name: 'Views' } });
  t.match(created.body.created_date, /^\d{4}-\d\d-\d\dT/);
  t.equal((await put('pv-14', { query: COUNT })).status, 200, 'a second PUT replaces');

  const result = await api.get(`${paths().saved('pv-14')}/result`, { key: server.keys.read });
  t.equal(result.status, 200);
  t.equal(result.body.result, 3);
  t.equal(result.body.result, await adHocCount(), 'the ad-hoc answer');
  t.equal(result.body.query.analysis_type, 'count');

  const listed = await api.get(`${paths().base}/saved?analysis_type=saved`, { key: server.keys.master });
  t.same(listed.body.map((q: { query_name: string }) => q.query_name), ['pv-14']);
  t.equal((await api.get(`${paths().base}/saved`, { key: server.keys.write })).status, 403, 'the Write Key reads none');
  t.equal((await api.post(paths().saved('x'), { key: server.keys.master, body: {} })).status, 405);
  t.equal((await api.send('PUT', paths().saved('y'), { key: server.keys.read, body: { query: COUNT } })).status, 403, 'only the Master Key saves');

  const got = await api.get(paths().saved('pv-14'), { key: server.keys.read });
  t.equal((await put('pv-14', got.body)).status, 200, 'a GET body can be PUT back');
  const renamed = await put('pv-14', { ...got.body, query_name: 'views-14' });
  t.equal(renamed.body.query_name, 'views-14');
  t.equal((await api.get(paths().saved('pv-14'), { key: server.keys.read })).status, 404);
  t.equal((await api.send('DELETE', paths().saved('views-14'), { key: server.keys.master })).status, 204);
  const gone = await api.get(paths().saved('views-14'), { key: server.keys.read });
  t.equal(gone.status, 404);
  t.equal(gone.body.error_code, 'ResourceNotFoundError');
});

t.test('bad definitions get the documented 400s', async (t) => {
  const expect = async (name: string, body: unknown, code: string) => {
    const response = await put(name, body);
    t.equal(response.status, 400, `${JSON.stringify(body).slice(0, 60)} → 400`);
    t.equal(response.body.error_code, code);
    t.type(response.body.message, 'string');
  };
  await expect('bad.name', { query: COUNT }, 'InvalidResourceNameError');
  await expect('x'.repeat(65), { query: COUNT }, 'InvalidResourceNameError');
  await expect('ok', {}, 'MissingRequiredRequestFieldError');
  await expect('ok', { query: { event_collection: 'views', timeframe: 'this_1_days' } }, 'MissingRequiredRequestFieldError');
  await expect('ok', { query: { ...COUNT, timeframe: 'this_fortnight' } }, 'TimeframeDefinitionError');
  await expect('ok', { query: { ...COUNT, filters: [{ property_name: 'p', operator: 'nope', property_value: 1 }] } }, 'InvalidFilterError');
  await expect('ok', { query: COUNT, refresh_rate: 14_399 }, 'InvalidQueryError');
  await expect('ok', { query: COUNT, refresh_rate: 86_401 }, 'InvalidQueryError');
  await expect('ok', { query: COUNT, refresh_rate: '4h' }, 'InvalidQueryError');
  await expect('ok', '"a string"', 'InvalidQueryError');
  await expect('ok', '{nope', 'InvalidJsonError');
  t.equal((await shared.api.get(paths().saved('ok'), { key: shared.server.keys.read })).status, 404, 'nothing was saved');
});

t.test('a cached query is served from its last run, outside the ad-hoc rate limit', async (t) => {
  const { server, api } = shared;
  const created = await put('cached-views', { query: COUNT, refresh_rate: 14_400 });
  t.equal(created.status, 201);
  t.not(created.body.run_information, null, 'a cached query has run information');
  t.equal((await put('live-views', { query: COUNT })).status, 201);
  const first = await api.get(`${paths().saved('cached-views')}/result`, { key: server.keys.read });
  t.equal(first.status, 200);
  t.equal(first.body.result, await adHocCount());
  t.match(first.body.run_information, { last_run_status: 'success', last_run_date: /T/, next_run_date: /T/ });

  t.equal((await api.post(`/3.0/projects/${server.projectId}/events/views`, { key: server.keys.write, body: { p: 9 } })).status, 201);
  const after = await api.get(`${paths().saved('cached-views')}/result`, { key: server.keys.read });
  t.equal(after.body.result, first.body.result, 'the cached result waits for its refresh');
  t.equal(await adHocCount(), first.body.result + 1, 'while the ad-hoc count moved');

  // Use up the ad-hoc limit (200 a minute): ad-hoc and refresh_rate-0 results are refused,
  // cached results are not.
  let limited: Res | null = null;
  // Bound: the limit is 200 a minute; 260 tries exceed it.
  for (let i = 0; i < 260 && limited === null; i++) {
    const response = await api.post(`${paths().base}/count`, { key: server.keys.read, body: COUNT });
    if (response.status === 429) limited = response;
  }
  t.equal(limited?.body.error_code, 'RateLimitExceededError', 'ad-hoc queries are refused');
  for (let i = 0; i < 5; i++) {
    t.equal((await api.get(`${paths().saved('cached-views')}/result`, { key: server.keys.read })).status, 200, 'cached result read under the limit');
  }
  const uncached = await api.get(`${paths().saved('live-views')}/result`, { key: server.keys.read });
  t.equal(uncached.status, 429, 'a saved query that is not cached counts as ad-hoc');
});

t.test('definitions survive a restart and cached results are computed again', async (t) => {
  const { server } = shared;
  t.equal(await server.stop(), 0);
  const again = await server.restart();
  t.teardown(async () => {
    await again.stop();
  });
  const api = client(again.url);
  const listed = await api.get(`/3.0/projects/${again.projectId}/queries/saved`, { key: again.keys.read });
  t.same(listed.body.map((q: { query_name: string }) => q.query_name), ['cached-views', 'live-views']);
  const result = await api.get(`/3.0/projects/${again.projectId}/queries/saved/cached-views/result`, { key: again.keys.read });
  t.equal(result.status, 200);
  t.equal(result.body.result, 4, 'recomputed after the restart: it now sees the fourth event');
});
