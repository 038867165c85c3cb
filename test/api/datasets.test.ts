/**
 * Cached datasets (docs/api.md §10) over the real server: definitions and their 400s, bootstrap to
 * OK, results per index value and bucket equal to the ad-hoc query's, kept current while events
 * stream in, started over after a delete, and rebuilt after a restart.
 */
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { serverForFile } from '../helpers/server.js';

const shared = serverForFile(t);
const DAY = 86_400_000;
const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());

function sale(daysAgo: number, country: string, price: number, device = 'web') {
  return { country, device, price, svc: { timestamp: new Date(today - daysAgo * DAY + 3_600_000).toISOString() } };
}

const base = () => `/3.0/projects/${shared.server.projectId}`;

async function record(events: unknown[]): Promise<void> {
  const response = await shared.api.post(`${base()}/events`, { key: shared.server.keys.write, body: { sales: events } });
  if (response.status !== 200) throw new Error(`write failed: ${response.status}`);
}

async function adHoc(analysis: string, filters: unknown[], extra: Record<string, unknown> = {}): Promise<unknown[]> {
  const response = await shared.api.post(`${base()}/queries/${analysis}`, {
    key: shared.server.keys.read, body: { event_collection: 'sales', timeframe: 'this_7_days', interval: 'daily', filters, ...extra },
  });
  return (response.body.result as { value: unknown }[]).map((bucket) => bucket.value);
}

async function results(name: string, indexBy: string): Promise<unknown[] | null> {
  const response = await shared.api.get(`${base()}/datasets/${name}/results?index_by=${encodeURIComponent(indexBy)}&timeframe=this_7_days`, { key: shared.server.keys.read });
  return response.status === 200 ? (response.body.result as { value: unknown }[]).map((bucket) => bucket.value) : null;
}

async function ready(name: string): Promise<boolean> {
  return eventually(async () => (await shared.api.get(`${base()}/datasets/${name}`, { key: shared.server.keys.read })).body.status === 'OK');
}

const byCountry = (country: string) => [{ property_name: 'country', operator: 'eq', property_value: country }];

t.test('a dataset bootstraps, then answers per index value and bucket as the ad-hoc query does', async (t) => {
  const { server, api } = shared;
  await record([sale(0, 'US', 10), sale(0, 'US', 20), sale(1, 'US', 5), sale(2, 'FR', 7), sale(5, 'FR', 1), sale(1, 'US', 3, 'app')]);
  const put = await api.send('PUT', `${base()}/datasets/sales-by-country`, { key: server.keys.master, body: {
    display_name: 'Sales by country',
    query: { analysis_type: 'count', event_collection: 'sales', timeframe: 'this_90_days', interval: 'daily', timezone: 'UTC' },
    index_by: ['country'],
  } });
  t.equal(put.status, 201);
  t.match(put.body, { dataset_name: 'sales-by-country', display_name: 'Sales by country', index_by: ['country'], status: /Created|Bootstrapping|OK/ });
  t.ok(await ready('sales-by-country'), 'status goes to OK');
  for (const country of ['US', 'FR', 'DE']) {
    t.same(await results('sales-by-country', country), await adHoc('count', byCountry(country)), `${country}: every bucket equals the ad-hoc count`);
  }
  t.same(await results('sales-by-country', '"US"'), await results('sales-by-country', 'US'), 'a JSON string is the same value');
  t.same(await results('sales-by-country', '{"country":"FR"}'), await adHoc('count', byCountry('FR')), 'a JSON object of index_by values');

  t.equal((await api.send('PUT', `${base()}/datasets/revenue`, { key: server.keys.master, body: {
    query: { analysis_type: 'sum', event_collection: 'sales', target_property: 'price', timeframe: 'this_90_days', interval: 'daily',
      filters: [{ property_name: 'device', operator: 'eq', property_value: 'web' }] },
    index_by: ['country', 'device'],
  } })).status, 201);
  t.equal((await api.send('PUT', `${base()}/datasets/avg-price`, { key: server.keys.master, body: {
    query: { analysis_type: 'average', event_collection: 'sales', target_property: 'price', timeframe: 'this_90_days', interval: 'daily' },
    index_by: 'country',
  } })).status, 201);
  t.ok(await ready('revenue'));
  t.ok(await ready('avg-price'));
  const web = [...byCountry('US'), { property_name: 'device', operator: 'eq', property_value: 'web' }];
  t.same(await results('revenue', '{"country":"US","device":"web"}'), await adHoc('sum', web, { target_property: 'price' }), 'sum with filters and two index_by');
  t.same(await results('avg-price', 'US'), await adHoc('average', byCountry('US'), { target_property: 'price' }), 'average');

  const listed = await api.get(`${base()}/datasets`, { key: server.keys.read });
  t.equal(listed.body.count, 3);
  t.same(listed.body.datasets.map((d: { dataset_name: string }) => d.dataset_name), ['avg-price', 'revenue', 'sales-by-country']);
});

t.test('kept current while events stream in, and started over after a delete', async (t) => {
  const { server, api } = shared;
  // Bound: five rounds of writes.
  for (let round = 0; round < 5; round++) {
    await record(Array.from({ length: 20 }, (_, i) => sale(i % 4, i % 3 === 0 ? 'FR' : 'US', round + i)));
    const expected = await adHoc('count', byCountry('US'));
    t.ok(await eventually(async () => JSON.stringify(await results('sales-by-country', 'US')) === JSON.stringify(expected)),
      `round ${round}: the new events are in their buckets`);
  }
  const sums = await adHoc('sum', [...byCountry('FR'), { property_name: 'device', operator: 'eq', property_value: 'web' }], { target_property: 'price' });
  t.ok(await eventually(async () => JSON.stringify(await results('revenue', '{"country":"FR","device":"web"}')) === JSON.stringify(sums)));

  const deleted = await api.send('DELETE', `${base()}/events/sales`, { key: server.keys.master, body: { filters: byCountry('US'), timeframe: 'this_2_days' } });
  t.equal(deleted.status, 204, deleted.text);
  const afterDelete = await adHoc('count', byCountry('US'));
  t.ok(await eventually(async () => JSON.stringify(await results('sales-by-country', 'US')) === JSON.stringify(afterDelete)),
    'deleted events leave the dataset');
});

t.test('errors have the documented shapes', async (t) => {
  const { server, api } = shared;
  const put = (name: string, body: unknown) => api.send('PUT', `${base()}/datasets/${name}`, { key: server.keys.master, body });
  const query = { analysis_type: 'count', event_collection: 'sales', timeframe: 'this_7_days', interval: 'daily' };
  const expect400 = async (name: string, body: unknown, code: string) => {
    const response = await put(name, body);
    t.equal(response.status, 400, `${code}: ${JSON.stringify(body).slice(0, 50)}`);
    t.equal(response.body.error_code, code);
  };
  await expect400('bad.name', { query, index_by: ['country'] }, 'InvalidResourceNameError');
  await expect400('x', { query }, 'MissingRequiredRequestFieldError');
  await expect400('x', { query, index_by: ['a', 'b', 'c', 'd'] }, 'MissingRequiredRequestFieldError');
  await expect400('x', { query: { ...query, analysis_type: 'median', target_property: 'price' }, index_by: ['country'] }, 'InvalidQueryError');
  await expect400('x', { query: { ...query, interval: undefined }, index_by: ['country'] }, 'InvalidQueryError');
  await expect400('x', { query: { ...query, timeframe: 'soon' }, index_by: ['country'] }, 'TimeframeDefinitionError');
  t.equal((await api.get(`${base()}/datasets/nope`, { key: server.keys.read })).status, 404);
  t.equal((await api.get(`${base()}/datasets/sales-by-country/results?timeframe=this_7_days`, { key: server.keys.read })).body.error_code, 'MissingRequiredRequestFieldError');
  t.equal((await api.get(`${base()}/datasets/revenue/results?index_by=US&timeframe=this_7_days`, { key: server.keys.read })).body.error_code, 'InvalidQueryError', 'two index_by need an object');
  t.equal((await put('x', { query, index_by: ['country'] }).then(() => api.send('PUT', `${base()}/datasets/y`, { key: server.keys.read, body: { query, index_by: ['c'] } }))).status, 403, 'only the Master Key defines');
  const reader = (await api.post(`${base()}/keys`, { key: server.keys.master, body: { name: 'dash', permitted: ['datasets'] } })).body.key as string;
  t.equal((await api.get(`${base()}/datasets/sales-by-country/results?index_by=US&timeframe=this_7_days`, { key: reader })).status, 200, 'an access key with datasets reads results');
  t.equal((await api.get(`${base()}/queries/count?event_collection=sales&timeframe=this_7_days`, { key: reader })).status, 403, 'and nothing else');
  const scoped = (await api.post(`${base()}/keys`, { key: server.keys.master, body: { name: 'fr-dash', permitted: ['datasets'],
    options: { datasets: { operations: ['retrieve'], allowed: { 'sales-by-country': { index_by: { country: ['FR'] } } } } } } })).body.key as string;
  const read = (name: string, index: string) => api.get(`${base()}/datasets/${name}/results?index_by=${encodeURIComponent(index)}&timeframe=this_7_days`, { key: scoped });
  t.equal((await read('sales-by-country', 'FR')).status, 200, 'an allowed index value');
  t.equal((await read('sales-by-country', '{"country":"FR"}')).status, 200, 'the same as an object');
  t.equal((await read('sales-by-country', 'US')).status, 403, 'another index value is refused');
  t.equal((await read('revenue', '{"country":"FR","device":"web"}')).status, 403, 'a dataset not allowed is refused');
  t.equal((await api.get(`${base()}/datasets`, { key: scoped })).status, 403, 'operations limit listing');
  t.equal((await api.send('DELETE', `${base()}/datasets/x`, { key: server.keys.master })).status, 204);
});

t.test('a dataset filters as the query engine does: lists, text operators, missing values', async (t) => {
  const { server, api } = shared;
  const at = (daysAgo: number) => ({ timestamp: new Date(today - daysAgo * DAY + 3_600_000).toISOString() });
  const events = [
    { tags: ['alpha', 'beta'], path: '/home', n: 1 },
    { tags: ['gamma'], path: '/about', n: 2 },
    { tags: 'alphabet', path: ['/x', '/home/y'], n: 3 },
    { tags: [], n: 4 },
    { path: null, n: 5 },
    { tags: ['beta', 'alpine'], path: '/h', n: 6, nested: { tags: ['alpha'] } },
  ].flatMap((event, i) => [{ ...event, group: 'g', svc: at(i % 3) }, { ...event, group: 'g', svc: at(4) }]);
  t.equal((await api.post(`${base()}/events`, { key: server.keys.write, body: { tagged: events } })).status, 200);
  const cases: readonly [string, unknown[]][] = [
    ['starts_with on a list', [{ property_name: 'tags', operator: 'starts_with', property_value: 'alp' }]],
    ['regex on a list', [{ property_name: 'tags', operator: 'regex', property_value: '^b.t' }]],
    ['regex on a list of paths', [{ property_name: 'path', operator: 'regex', property_value: '^/home' }]],
    ['contains on lists and strings', [{ property_name: 'tags', operator: 'contains', property_value: 'alpha' }]],
    ['not_contains', [{ property_name: 'tags', operator: 'not_contains', property_value: 'alpha' }]],
    ['in', [{ property_name: 'tags', operator: 'in', property_value: ['gamma', 'alphabet'] }]],
    ['not_in', [{ property_name: 'tags', operator: 'not_in', property_value: ['gamma'] }]],
    ['ne on a list', [{ property_name: 'tags', operator: 'ne', property_value: 'beta' }]],
    ['exists false', [{ property_name: 'path', operator: 'exists', property_value: false }]],
    ['a nested list', [{ property_name: 'nested.tags', operator: 'starts_with', property_value: 'al' }]],
    ['or', [{ operator: 'or', property_value: [
      { property_name: 'tags', operator: 'starts_with', property_value: 'gam' },
      { property_name: 'n', operator: 'gte', property_value: 6 },
    ] }]],
  ];
  for (const [index, [what, filters]] of cases.entries()) {
    const name = `tagged-${index}`;
    const put = await api.send('PUT', `${base()}/datasets/${name}`, { key: server.keys.master, body: {
      query: { analysis_type: 'count', event_collection: 'tagged', timeframe: 'this_90_days', interval: 'daily', timezone: 'UTC', filters },
      index_by: ['group'],
    } });
    t.equal(put.status, 201, put.text);
    t.ok(await ready(name), `${what}: bootstrapped`);
    const got = await results(name, 'g');
    const want = await adHoc('count', filters, { event_collection: 'tagged' });
    t.same(got, want, `${what}: every bucket equals the ad-hoc count`);
    t.equal((await api.send('DELETE', `${base()}/datasets/${name}`, { key: server.keys.master })).status, 204);
  }
});

t.test('definitions survive a restart and the buckets are rebuilt', async (t) => {
  const { server } = shared;
  const before = await results('sales-by-country', 'FR');
  t.equal(await server.stop(), 0);
  const again = await server.restart();
  t.teardown(async () => {
    await again.stop();
  });
  const api = client(again.url);
  const path = `/3.0/projects/${again.projectId}/datasets/sales-by-country`;
  t.ok(await eventually(async () => (await api.get(path, { key: again.keys.read })).body.status === 'OK'), 'bootstrapped again');
  const after = await api.get(`${path}/results?index_by=FR&timeframe=this_7_days`, { key: again.keys.read });
  t.same(after.body.result.map((b: { value: unknown }) => b.value), before);
});
