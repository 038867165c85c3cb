/**
 * Operator endpoints over the real server: liveness and readiness need no key and say nothing else;
 * /metrics is Prometheus text for the organization key only, and its numbers move with traffic.
 */
import t from 'tap';
import { client, sample } from '../helpers/http.js';
import { serverForFile, startServer } from '../helpers/server.js';

const shared = serverForFile(t);

t.test('health and readiness answer without a key and reveal nothing', async (t) => {
  const { server, api } = shared;
  const health = await api.get('/health');
  t.equal(health.status, 200);
  t.same(health.body, { status: 'ok' });
  const ready = await api.get('/ready');
  t.equal(ready.status, 200);
  t.same(ready.body, { status: 'ready' });
  t.equal((await api.send('POST', '/health')).status, 405);
});

t.test('metrics need the organization key', async (t) => {
  const { server, api } = shared;
  const none = await api.get('/metrics');
  t.equal(none.status, 401);
  t.equal(none.body.error_code, 'InvalidApiKeyError');
  const project = await api.get('/metrics', { key: server.keys.master });
  t.equal(project.status, 403);
  t.equal(project.body.error_code, 'KeyNotPermittedError');
  t.equal((await api.get('/metrics', { key: 'f'.repeat(64) })).status, 401);
});

t.test('metrics are Prometheus text whose numbers move with the traffic', async (t) => {
  const { server, api } = shared;
  const scrape = async () => {
    const response = await api.get('/metrics', { key: server.orgKey });
    t.equal(response.status, 200);
    t.match(response.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    return response.text;
  };
  const before = await scrape();
  t.ok(sample(before, 'tally_process_resident_memory_bytes') > 0, 'process memory');
  const base = `/3.0/projects/${server.projectId}`;
  for (let i = 0; i < 3; i++) {
    t.equal((await api.post(`${base}/events/clicks`, { key: server.keys.write, body: { i } })).status, 201);
  }
  const batch = await api.post(`${base}/events`, { key: server.keys.write, body: { clicks: [{ a: 1 }, { 'bad.name': 1 }] } });
  t.equal(batch.status, 200);
  const query = await api.get(`${base}/queries/count?event_collection=clicks&timeframe=this_1_days`, { key: server.keys.read });
  t.equal(query.status, 200);
  const after = await scrape();
  t.equal(sample(after, 'tally_events_accepted_total') - (sample(before, 'tally_events_accepted_total') || 0), 4);
  t.equal(sample(after, 'tally_events_refused_total') - (sample(before, 'tally_events_refused_total') || 0), 1);
  t.equal(sample(after, 'tally_query_duration_seconds_count', 'analysis="count"'), 1);
  const moved = (name: string, labels: string) => sample(after, name, labels) - (sample(before, name, labels) || 0);
  t.equal(moved('tally_writes_accepted_total', 'path="http_single"'), 3, 'accepted by path: single');
  t.equal(moved('tally_writes_accepted_total', 'path="http_batch"'), 1, 'accepted by path: batch');
  t.equal(moved('tally_writes_refused_total', 'path="http_batch"'), 1, 'refused by path: batch');
  t.ok(sample(after, 'tally_http_request_duration_seconds_count', 'status="201"') >= 3);
  t.ok(sample(after, 'tally_buffer_rows') + sample(after, 'tally_segment_rows') >= 4, 'rows are buffered or in segments');
  t.ok(sample(after, 'tally_wal_fsync_seconds_count') - (sample(before, 'tally_wal_fsync_seconds_count') || 0) >= 2,
    'each acknowledged write waited for a WAL fsync');
  for (const name of ['tally_segments', 'tally_segment_bytes', 'tally_compaction_backlog', 'tally_memory_budget_bytes',
    'tally_queries_running', 'tally_queries_waiting', 'tally_events_failed_total', 'tally_wal_failures_total',
    'tally_background_paused_seconds_total']) {
    t.ok(Number.isFinite(sample(after, name)), name);
  }
});

t.test('logs are JSON lines with levels and request ids, and never hold a key', async (t) => {
  const debug = await startServer({ args: ['--log-level', 'debug'] });
  const logged = client(debug.url);
  const base = `/3.0/projects/${debug.projectId}`;
  const write = await logged.post(`${base}/events/clicks`, { key: debug.keys.write, body: { a: 1 } });
  t.equal(write.status, 201);
  const requestId = write.headers.get('x-request-id');
  t.match(requestId, /^[0-9a-f]{8}-[0-9a-z]+$/, 'every response carries X-Request-Id');
  const viaQuery = await logged.get(`${base}/queries/count?api_key=${debug.keys.read}&event_collection=clicks&timeframe=this_1_days`);
  t.equal(viaQuery.status, 200);
  t.equal((await logged.get('/metrics', { key: debug.orgKey })).status, 200);
  t.equal((await logged.get(`${base}/queries/count?event_collection=clicks`, { key: 'f'.repeat(64) })).status, 401);
  await debug.stop();
  const lines = debug.stderr().trim().split('\n');
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  t.ok(records.every((r) => typeof r.time === 'string' && ['debug', 'info', 'warn', 'error'].includes(r.level as string) && typeof r.msg === 'string'),
    'every stderr line is a JSON object with time, level and msg');
  const request = records.find((r) => r.msg === 'request' && r.request_id === requestId);
  t.match(request, { level: 'debug', method: 'POST', route: '/3.0/projects/:project/events/:collection', status: 201 }, 'a line per request at debug');
  t.ok(records.filter((r) => r.msg === 'request').length >= 4, 'the other requests too');
  const text = debug.stderr();
  for (const [name, key] of Object.entries({ ...debug.keys, org: debug.orgKey, bad: 'f'.repeat(64) })) {
    t.notOk(text.includes(key), `the ${name} key is in no log line`);
  }
  debug.cleanup();
});

t.test('--log-level rejects an unknown level', async (t) => {
  await t.rejects(startServer({ args: ['--log-level', 'loud'] }), /exited with 2/);
});
