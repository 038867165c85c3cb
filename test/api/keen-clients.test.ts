/**
 * The real npm clients of this API family against our server: keen-tracking records (single and
 * batch), keen-analysis queries. keen-analysis in Node always speaks HTTPS to port 443, so the test
 * reroutes its https.request to our plain HTTP port; the requests themselves are the client's own.
 */
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const require = createRequire(import.meta.url);
const KeenTracking = require('keen-tracking');
const KeenAnalysis = require('keen-analysis');

let server: TestServer;
let port: number;

t.before(async () => {
  server = await startServer();
  port = Number(new URL(server.url).port);
  const original = https.request;
  (https as { request: unknown }).request = (options: http.RequestOptions, callback?: (res: http.IncomingMessage) => void) =>
    http.request({ ...options, host: '127.0.0.1', port }, callback);
  t.teardown(() => { (https as { request: unknown }).request = original; });
});
t.teardown(async () => {
  await server.stop();
  server.cleanup();
});

function tracker() {
  return new KeenTracking({
    projectId: server.projectId, writeKey: server.keys.write,
    host: `127.0.0.1:${port}`, protocol: 'http', nodeRequestConfig: { host: '127.0.0.1', port },
  });
}

function analysis() {
  return new KeenAnalysis({
    projectId: server.projectId, readKey: server.keys.read, masterKey: server.keys.master,
    host: `127.0.0.1:${port}`, protocol: 'http',
  });
}

t.test('keen-tracking recordEvent and recordEvents', async (t) => {
  const keen = tracker();
  const one = await keen.recordEvent('purchases', { item: 'golden widget', price: 25.5, keen: { timestamp: new Date().toISOString() } });
  t.same(one, { created: true });
  const many = await keen.recordEvents({
    purchases: [{ item: 'a', price: 1 }, { item: 'b', price: 2 }],
    pageviews: [{ page: '/' }],
  });
  t.same(many, { purchases: [{ success: true }, { success: true }], pageviews: [{ success: true }] });
  const rejected = await keen.recordEvent('purchases', { ['x'.repeat(300)]: 1 }).then(
    () => null, (error: { code?: string }) => error);
  t.equal(rejected?.code, 'InvalidPropertyNameError', 'errors reach the client as error codes');
});

t.test('keen-analysis count, sum and extraction', async (t) => {
  const keen = analysis();
  const counted = await eventually(async () => {
    const response = await keen.query('count', { event_collection: 'purchases', timeframe: 'this_1_days' });
    return response.result === 3;
  });
  t.ok(counted, 'count is 3');
  const sum = await keen.query('sum', { eventCollection: 'purchases', targetProperty: 'price', timeframe: 'this_1_days' });
  t.equal(sum.result, 28.5);
  const grouped = await keen.query({
    analysis_type: 'count', event_collection: 'purchases', timeframe: 'this_1_days', group_by: 'item',
  });
  t.equal(grouped.result.length, 3);
  const rows = await keen.query('extraction', { event_collection: 'pageviews', timeframe: 'this_1_days' });
  t.equal(rows.result.length, 1);
  t.equal(rows.result[0].page, '/');
  const failure = await keen.query('count', { event_collection: 'purchases' }).then(() => null, (e: { code?: string }) => e);
  t.type(failure?.code, 'string', 'a bad query rejects with its error_code');
});

t.test('keen-analysis generic GET of the schema endpoint', async (t) => {
  const keen = analysis();
  const schema = await keen.get({ url: keen.url('events', 'purchases'), api_key: keen.masterKey() });
  t.equal(schema.name, 'purchases');
  t.equal(schema.properties.price, 'num');
  const all = await client(server.url).get(`/3.0/projects/${server.projectId}/events`, { key: server.keys.read });
  t.same(all.body.map((c: { name: string }) => c.name).sort(), ['pageviews', 'purchases']);
});

t.test('keen-analysis saves a query, lists it and reads its result', async (t) => {
  const keen = analysis();
  await tracker().recordEvents({ saved_views: [{ page: '/a' }, { page: '/b' }] });
  const saved = await keen.put({
    url: keen.url('queries', 'saved', 'views-this-14-days'),
    api_key: server.keys.master,
    params: {
      refreshRate: 0,
      query: { analysisType: 'count', eventCollection: 'saved_views', timeframe: 'this_14_days' },
      metadata: { displayName: 'Views (14 days)', visualization: { chartType: 'metric' } },
    },
  });
  t.match(saved, { query_name: 'views-this-14-days', query: { analysis_type: 'count', event_collection: 'saved_views' },
    metadata: { display_name: 'Views (14 days)' } }, 'the client snake-cases the body; the server keeps it');
  const listed = await keen.get({ url: keen.url('queries', 'saved'), api_key: server.keys.master });
  t.ok(listed.some((q: { query_name: string }) => q.query_name === 'views-this-14-days'), 'listed');
  const viaName = await keen.query({ savedQueryName: 'views-this-14-days' });
  t.equal(viaName.result, 2);
  const viaRun = await keen.query('saved', 'views-this-14-days');
  t.equal(viaRun.result, 2);
  t.equal(viaRun.query.analysis_type, 'count', 'charting clients read the analysis from the result');
});

t.test('keen-analysis defines a dataset and reads its results', async (t) => {
  const keen = analysis();
  await tracker().recordEvents({ ds_views: [{ page: '/a', country: 'FR' }, { page: '/b', country: 'FR' }, { page: '/c', country: 'US' }] });
  const defined = await keen.put({
    url: keen.url('datasets', 'views-by-country'),
    api_key: server.keys.master,
    params: {
      displayName: 'Views by country',
      query: { analysisType: 'count', eventCollection: 'ds_views', timeframe: 'this_30_days', interval: 'daily', timezone: 'UTC' },
      indexBy: ['country'],
    },
  });
  t.match(defined, { dataset_name: 'views-by-country', index_by: ['country'] });
  const path = `/3.0/projects/${server.projectId}/datasets/views-by-country`;
  t.ok(await eventually(async () => (await client(server.url).get(path, { key: server.keys.read })).body.status === 'OK'), 'bootstrapped');
  const response = await keen.query({ datasetName: 'views-by-country', indexBy: 'FR', timeframe: 'this_7_days' });
  const total = (response.result as { value: number }[]).reduce((sum, bucket) => sum + bucket.value, 0);
  t.equal(total, 2, 'the index value\'s buckets, read the way keen-analysis asks');
});
