/**
 * Access keys (docs/api.md §8) against the real server: management and its error shapes, the
 * permission matrix (routes × permitted values × active/revoked), autofill on every write path
 * (HTTP single, batch, beacon, Kafka produce), and forced filters tried as an attacker would.
 */
import { Kafka, logLevel } from 'kafkajs';
import t from 'tap';
import { client, type Res } from '../helpers/http.js';
import { freePort, serverForFile } from '../helpers/server.js';


const kafkaPort = await freePort();
const shared = serverForFile(t, { args: ['--kafka-in-port', String(kafkaPort)] });
const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };
const PERMISSIONS = ['writes', 'queries', 'saved_queries', 'cached_queries', 'datasets', 'schema'];

const base = () => `/3.0/projects/${shared.server.projectId}`;

async function createKey(body: unknown, key = shared.server.keys.master): Promise<Res> {
  return shared.api.post(`${base()}/keys`, { key, body });
}

t.test('keys are created, listed, read, updated, revoked, unrevoked and deleted', async (t) => {
  const { server, api } = shared;
  const created = await createKey({ name: 'tenant-a', permitted: ['writes', 'queries'], options: { writes: { autofill: { tenant: 'a' } } } });
  t.equal(created.status, 201);
  t.match(created.body, { name: 'tenant-a', is_active: true, permitted: ['writes', 'queries'], options: { writes: { autofill: { tenant: 'a' } } } });
  t.match(created.body.key, /^[0-9a-f]{64}$/);
  const key = created.body.key as string;
  const byOrg = await createKey({ name: 'by-org', permitted: [] }, server.orgKey);
  t.equal(byOrg.status, 201, 'the organization key manages keys too');

  t.same((await api.get(`${base()}/keys?name=tenant-a`, { key: server.keys.master })).body.map((k: { key: string }) => k.key), [key]);
  t.equal((await api.get(`${base()}/keys`, { key: server.keys.master })).body.length, 2);
  t.equal((await api.get(`${base()}/keys/${key}`, { key: server.keys.master })).body.name, 'tenant-a');
  const updated = await api.post(`${base()}/keys/${key}`, { key: server.keys.master, body: { name: 'tenant-a2', permitted: ['queries'] } });
  t.equal(updated.status, 200);
  t.match(updated.body, { key, name: 'tenant-a2', permitted: ['queries'], is_active: true });
  t.equal((await api.post(`${base()}/keys/${key}/revoke`, { key: server.keys.master })).body.is_active, false);
  t.equal((await api.post(`${base()}/keys/${key}/unrevoke`, { key: server.keys.master })).body.is_active, true);
  t.equal((await api.send('DELETE', `${base()}/keys/${key}`, { key: server.keys.master })).status, 204);
  const gone = await api.get(`${base()}/keys/${key}`, { key: server.keys.master });
  t.equal(gone.status, 404);
  t.equal(gone.body.error_code, 'ResourceNotFoundError');

  for (const [body, why] of [
    [{ permitted: ['writes'] }, 'no name'], [{ name: 'x', permitted: ['everything'] }, 'unknown permission'],
    [{ name: 'x', permitted: 'writes' }, 'permitted not a list'], [{ name: 'x', permitted: [], options: { bogus: 1 } }, 'unknown option'],
    [{ name: 'x', permitted: [], options: { queries: { filters: [{ property_name: 'a', operator: 'nope', property_value: 1 }] } } }, 'bad filter'],
    [{ name: 'x', permitted: [], options: { writes: { autofill: { svc: { timestamp: 'x' } } } } }, 'autofill into svc'],
  ] as const) {
    const response = await createKey(body);
    t.equal(response.status, 400, why);
    t.equal(response.body.error_code, 'InvalidAccessKeyDefinitionError', why);
  }
  for (const [name, manager] of Object.entries({ write: server.keys.write, read: server.keys.read })) {
    t.equal((await createKey({ name: 'x', permitted: [] }, manager)).status, 403, `the ${name} key manages no keys`);
  }
  const all = (await createKey({ name: 'all', permitted: PERMISSIONS })).body.key as string;
  t.equal((await createKey({ name: 'x', permitted: [] }, all)).status, 403, 'an access key manages no keys');
  t.equal((await api.get(`${base()}/keys`, { key: all })).status, 403);
});

/** One request per route category; `ok` is its success status. */
interface Probe {
  readonly category: string;
  readonly ok: number;
  run(key: string): Promise<Res>;
}

function probes(): Probe[] {
  const { api } = shared;
  const q = `${base()}/queries`;
  const count = { event_collection: 'matrix', timeframe: ALL_TIME };
  return [
    { category: 'writes', ok: 201, run: (key) => api.post(`${base()}/events/matrix`, { key, body: { n: 1 } }) },
    { category: 'writes', ok: 200, run: (key) => api.post(`${base()}/events`, { key, body: { matrix: [{ n: 2 }] } }) },
    { category: 'writes', ok: 201, run: (key) => api.get(`${base()}/events/matrix?api_key=${key}&data=${Buffer.from('{"n":3}').toString('base64')}`) },
    { category: 'queries', ok: 200, run: (key) => api.post(`${q}/count`, { key, body: count }) },
    { category: 'queries', ok: 200, run: (key) => api.get(`${q}/count?api_key=${key}&event_collection=matrix&timeframe=this_1_days`) },
    { category: 'queries', ok: 200, run: (key) => api.post(`${q}/extraction`, { key, body: { ...count, latest: 5 } }) },
    { category: 'schema', ok: 200, run: (key) => api.get(`${base()}/events`, { key }) },
    { category: 'schema', ok: 200, run: (key) => api.get(`${base()}/events/matrix`, { key }) },
    { category: 'schema', ok: 200, run: (key) => api.get(`${base()}/events/matrix/properties/n`, { key }) },
    { category: 'saved_queries', ok: 200, run: (key) => api.get(`${q}/saved`, { key }) },
    { category: 'saved_queries', ok: 200, run: (key) => api.get(`${q}/saved/matrix-live`, { key }) },
    { category: 'saved_queries', ok: 200, run: (key) => api.get(`${q}/saved/matrix-live/result`, { key }) },
    { category: 'cached_result', ok: 200, run: (key) => api.get(`${q}/saved/matrix-cached/result`, { key }) },
    { category: 'never', ok: 204, run: (key) => api.send('DELETE', `${base()}/events/matrix/properties/zz`, { key }) },
    { category: 'never', ok: 200, run: (key) => api.send('PUT', `${q}/saved/matrix-x`, { key, body: { query: { analysis_type: 'count', ...count } } }) },
    { category: 'never', ok: 200, run: (key) => api.post(`${base()}/api_keys/write/regenerate`, { key }) },
    { category: 'never', ok: 200, run: (key) => api.get(`/3.0/organizations/default/projects`, { key }) },
    { category: 'never', ok: 200, run: (key) => api.get(`/metrics`, { key }) },
  ];
}

function allowedFor(category: string, permission: string | null): boolean {
  if (permission === null || category === 'never') return false;
  if (category === 'cached_result') return permission === 'cached_queries' || permission === 'saved_queries';
  return category === permission;
}

t.test('the permission matrix: every route × every permitted value × active and revoked', async (t) => {
  const { server, api } = shared;
  t.equal((await api.post(`${base()}/events/matrix`, { key: server.keys.write, body: { n: 0 } })).status, 201);
  const count = { analysis_type: 'count', event_collection: 'matrix', timeframe: ALL_TIME };
  t.equal((await api.send('PUT', `${base()}/queries/saved/matrix-live`, { key: server.keys.master, body: { query: count } })).status, 201);
  t.equal((await api.send('PUT', `${base()}/queries/saved/matrix-cached`, { key: server.keys.master, body: { query: count, refresh_rate: 14_400 } })).status, 201);
  const failures: string[] = [];
  let checked = 0;
  for (const permission of [...PERMISSIONS, null]) {
    const key = (await createKey({ name: `matrix-${permission}`, permitted: permission === null ? [] : [permission] })).body.key as string;
    for (const active of [true, false]) {
      if (!active) await api.post(`${base()}/keys/${key}/revoke`, { key: server.keys.master });
      for (const probe of probes()) {
        const response = await probe.run(key);
        const expected = active && allowedFor(probe.category, permission) ? probe.ok : 403;
        checked++;
        if (response.status !== expected || (expected === 403 && response.body?.error_code !== 'KeyNotPermittedError')) {
          failures.push(`${permission} ${active ? 'active' : 'revoked'} ${probe.category}: ${response.status} ${response.text.slice(0, 120)}`);
        }
      }
    }
  }
  t.same(failures, [], `${checked} route × permission × state checks`);
});

t.test('autofill goes into every event a key writes, on every write path, overriding the client', async (t) => {
  const { server, api } = shared;
  const key = (await createKey({ name: 'filler', permitted: ['writes'], options: { writes: { autofill: { tenant: 'a', org: { id: 7 } } } } })).body.key as string;
  const path = `${base()}/events/filled`;
  t.equal((await api.post(path, { key, body: { via: 'single', tenant: 'b' } })).status, 201);
  t.equal((await api.post(`${base()}/events`, { key, body: { filled: [{ via: 'batch', tenant: 'b', org: { id: 8, name: 'kept' } }, { via: 'batch2' }] } })).status, 200);
  t.equal((await api.get(`${path}?api_key=${key}&data=${Buffer.from('{"via":"beacon","tenant":{"nested":"b"}}').toString('base64')}`)).status, 201);
  const kafka = new Kafka({
    brokers: [`127.0.0.1:${kafkaPort}`], clientId: 'tenant', logLevel: logLevel.NOTHING,
    sasl: { mechanism: 'plain', username: server.projectId, password: key },
  });
  const producer = kafka.producer();
  await producer.connect();
  const [sent] = await producer.send({ topic: 'filled', messages: [{ value: JSON.stringify({ via: 'kafka', tenant: 'b' }) }] });
  await producer.disconnect();
  t.equal(sent!.errorCode, 0, 'an access key with writes is a SASL password on the inbound listener');
  const extraction = await api.post(`${base()}/queries/extraction`, { key: server.keys.master, body: { event_collection: 'filled', timeframe: ALL_TIME } });
  const events = extraction.body.result as { via: string; tenant: unknown; org: { id: number; name?: string } }[];
  t.same(events.map((e) => e.via).sort(), ['batch', 'batch2', 'beacon', 'kafka', 'single']);
  t.ok(events.every((e) => e.tenant === 'a' && e.org.id === 7), 'every event carries the autofill, whatever the client sent');
  t.equal(events.find((e) => e.via === 'batch')?.org.name, 'kept', 'autofill merges deeply: other members stay');
  const revoked = (await createKey({ name: 'reader', permitted: ['queries'] })).body.key as string;
  const refused = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], clientId: 'r', logLevel: logLevel.NOTHING, retry: { retries: 0 },
    sasl: { mechanism: 'plain', username: server.projectId, password: revoked } }).producer();
  await t.rejects(refused.connect(), /SASL|authentication/i, 'a key without writes is no SASL password');
});

t.test('forced filters hold against every way a tenant might ask for another tenant\'s rows', async (t) => {
  const { server, api } = shared;
  const rows = [...Array.from({ length: 3 }, (_, i) => ({ tenant: 'a', step: 'view', user: `a${i}`, price: i })),
    ...Array.from({ length: 5 }, (_, i) => ({ tenant: 'b', step: 'view', user: `b${i}`, price: 100 + i })),
    { tenant: 'a', step: 'buy', user: 'a0', price: 1 }, { tenant: 'b', step: 'buy', user: 'b0', price: 1 }];
  t.equal((await api.post(`${base()}/events`, { key: server.keys.write, body: { shop: rows } })).status, 200);
  const forced = [{ property_name: 'tenant', operator: 'eq', property_value: 'a' }];
  const key = (await createKey({ name: 'tenant-a', permitted: ['queries', 'saved_queries'], options: { queries: { filters: forced } } })).body.key as string;
  const q = (analysis: string, body: Record<string, unknown>) => api.post(`${base()}/queries/${analysis}`, { key, body: { event_collection: 'shop', timeframe: ALL_TIME, ...body } });

  t.equal((await q('count', {})).body.result, 4, 'a count sees only tenant a');
  t.equal((await q('count', { filters: [{ property_name: 'tenant', operator: 'eq', property_value: 'b' }] })).body.result, 0, 'asking for b finds nothing');
  t.equal((await q('count', { filters: [{ property_name: 'tenant', operator: 'ne', property_value: 'a' }] })).body.result, 0);
  t.equal((await q('count', { filters: null })).body.result, 4, 'null filters do not drop the forced ones');
  t.equal((await q('count', { filters: '' })).body.result, 4, 'nor do empty ones');
  const notAList = await q('count', { filters: { property_name: 'tenant', operator: 'eq', property_value: 'b' } });
  t.equal(notAList.status, 400, 'filters that are not a list are refused, not ignored');
  const viaGet = await api.get(`${base()}/queries/count?api_key=${key}&event_collection=shop&timeframe=this_1_days&filters=${encodeURIComponent('[]')}`);
  t.equal(viaGet.body.result, 4, 'GET parameters too');
  const grouped = (await q('count', { group_by: 'tenant' })).body.result as { tenant: string; result: number }[];
  t.same(grouped, [{ tenant: 'a', result: 4 }], 'group_by shows only a');
  t.same((await q('select_unique', { target_property: 'user' })).body.result.sort(), ['a0', 'a1', 'a2']);
  t.equal((await q('sum', { target_property: 'price' })).body.result, 4);
  const extracted = (await q('extraction', { property_names: ['user', 'tenant'] })).body.result as { tenant: string }[];
  t.ok(extracted.length === 4 && extracted.every((e) => e.tenant === 'a'), 'extractions return only a\'s rows');
  const funnel = await api.post(`${base()}/queries/funnel`, { key, body: { steps: [
    { event_collection: 'shop', actor_property: 'user', timeframe: ALL_TIME, filters: [{ property_name: 'step', operator: 'eq', property_value: 'view' }] },
    { event_collection: 'shop', actor_property: 'user', timeframe: ALL_TIME },
  ] } });
  t.same(funnel.body.result, [3, 3], 'every funnel step is filtered');
  const multi = await q('multi_analysis', { analyses: { n: { analysis_type: 'count' }, total: { analysis_type: 'sum', target_property: 'price' } } });
  t.same(multi.body.result, { n: 4, total: 4 }, 'multi_analysis too');

  const count = { analysis_type: 'count', event_collection: 'shop', timeframe: ALL_TIME };
  t.equal((await api.send('PUT', `${base()}/queries/saved/all-shop`, { key: server.keys.master, body: { query: count } })).status, 201);
  t.equal((await api.send('PUT', `${base()}/queries/saved/a-shop`, { key: server.keys.master, body: { query: { ...count, filters: forced } } })).status, 201);
  t.equal((await api.get(`${base()}/queries/saved/all-shop/result`, { key })).status, 403, 'a saved query without the key\'s filters is closed to it');
  const own = await api.get(`${base()}/queries/saved/a-shop/result`, { key });
  t.equal(own.body.result, 4, 'one that carries them is open');

  const other = await api.post(`/3.0/organizations/default/projects`, { key: server.orgKey, body: { name: 'other' } });
  t.equal(other.status, 201);
  const elsewhere = await api.post(`/3.0/projects/${other.body.id}/queries/count`, { key, body: { event_collection: 'shop', timeframe: ALL_TIME } });
  t.equal(elsewhere.status, 401, 'a key of one project is no key in another');
});

t.test('access keys survive a restart', async (t) => {
  const { server } = shared;
  const key = (await createKey({ name: 'durable', permitted: ['queries'] })).body.key as string;
  t.equal(await server.stop(), 0);
  const again = await server.restart();
  t.teardown(async () => {
    await again.stop();
  });
  const response = await client(again.url).post(`/3.0/projects/${again.projectId}/queries/count`, {
    key, body: { event_collection: 'shop', timeframe: ALL_TIME },
  });
  t.equal(response.status, 200);
});
