/**
 * The HTTP surface around the writes: versions, CORS, 404/405, the GET beacon, the organization API,
 * key regeneration, inspection shapes, query parameter parsing and the error body shape.
 */
import t from 'tap';
import { client } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: ReturnType<typeof client>;
const p = () => `/3.0/projects/${server.projectId}`;
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');

t.before(async () => {
  server = await startServer();
  api = client(server.url);
});
t.teardown(async () => {
  await server.stop();
  server.cleanup();
});

t.test('versions: GET and HEAD /', async (t) => {
  const response = await api.get('/', { key: server.keys.master });
  t.equal(response.status, 200);
  t.same(response.body, [
    { is_public: true, url: '/3.0', version: '3.0' },
    { is_public: false, url: '/2.0', version: '2.0' },
    { is_public: false, url: '/1.0', version: '1.0' },
  ]);
  const head = await api.head(`/?api_key=${server.orgKey}`);
  t.equal(head.status, 200);
  t.equal(head.text, '');
  t.equal(head.headers.get('content-length'), String(Buffer.byteLength(response.text)));
});

t.test('CORS: preflight on every route and the allow-origin header on every response', async (t) => {
  for (const path of ['/', `${p()}/events`, `${p()}/events/x`, `${p()}/queries/count`, '/nowhere']) {
    const response = await api.send('OPTIONS', path, {
      headers: { Origin: 'https://example.com', 'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type, keen-sdk' },
    });
    t.ok(response.status === 204 || response.status === 200, path);
    t.equal(response.headers.get('access-control-allow-origin'), '*');
    t.match(response.headers.get('access-control-allow-methods'), /POST/);
    const allowed = response.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const header of ['authorization', 'content-type', 'keen-sdk']) t.match(allowed, header);
  }
  const error = await api.get(`${p()}/events`);
  t.equal(error.status, 401);
  t.equal(error.headers.get('access-control-allow-origin'), '*');
});

t.test('unknown paths 404, known paths with the wrong method 405, errors have the documented shape', async (t) => {
  const missing = await api.get('/3.0/nothing/here', { key: server.keys.master });
  t.equal(missing.status, 404);
  t.equal(missing.body.error_code, 'ResourceNotFoundError');
  t.type(missing.body.message, 'string');
  const wrong = await api.send('PUT', `${p()}/events/x`, { key: server.keys.master, body: {} });
  t.equal(wrong.status, 405);
  t.equal(wrong.body.error_code, 'MethodNotAllowedError');
  t.same(Object.keys(wrong.body).sort(), ['error_code', 'message']);
  const del = await api.send('DELETE', '/', { key: server.keys.master });
  t.equal(del.status, 405);
});

t.test('beacon: GET with base64 data records; url-safe and unpadded base64 work', async (t) => {
  const std = await api.get(`${p()}/events/beacon?api_key=${server.keys.write}&data=${encodeURIComponent(b64({ n: 1, s: '??>>' }))}`);
  t.equal(std.status, 201);
  t.same(std.body, { created: true });
  const urlSafe = b64({ n: 2, s: '??>>' }).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  t.equal((await api.get(`${p()}/events/beacon?api_key=${server.keys.write}&data=${urlSafe}`)).status, 201);
  const bad = await api.get(`${p()}/events/beacon?api_key=${server.keys.write}&data=%25%25notbase64`);
  t.equal(bad.status, 400);
  const notJson = await api.get(`${p()}/events/beacon?api_key=${server.keys.write}&data=${b64('x').slice(0, 2)}`);
  t.equal(notJson.status, 400);
  t.equal(notJson.body.error_code, 'InvalidJsonError');
});

t.test('beacon: redirect (protocol added when missing) and the image response', async (t) => {
  const data = b64({ click: true });
  const bare = await api.get(`${p()}/events/beacon?api_key=${server.keys.write}&data=${data}&redirect=example.com/landing`);
  t.equal(bare.status, 302);
  t.equal(bare.headers.get('location'), 'http://example.com/landing');
  const full = await api.get(`${p()}/events/beacon?api_key=${server.keys.write}&data=${data}&redirect=${encodeURIComponent('https://example.org/x?y=1')}`);
  t.equal(full.headers.get('location'), 'https://example.org/x?y=1');
  for (const hostile of ['javascript:alert(1)', 'example.com/%0d%0aSet-Cookie:%20x=1', 'http://[bad']) {
    const refused = await api.get(`${p()}/events/refused?api_key=${server.keys.write}&data=${data}&redirect=${encodeURIComponent(hostile)}`);
    t.ok(refused.status === 400 || !/[\r\n]/.test(refused.headers.get('location') ?? ''), hostile);
    t.equal(refused.headers.get('set-cookie'), null, `${hostile}: no injected header`);
  }
  const image = await fetch(`${server.url}${p()}/events/beacon?api_key=${server.keys.write}&data=${data}`, {
    headers: { Accept: 'image/avif,image/webp,image/apng,image/*,*/*;q=0.8' },
  });
  t.equal(image.status, 200);
  t.equal(image.headers.get('content-type'), 'image/gif');
  const bytes = Buffer.from(await image.arrayBuffer());
  t.equal(bytes.subarray(0, 6).toString(), 'GIF89a');
  const count = await api.post(`${p()}/queries/count`, {
    key: server.keys.read, body: { event_collection: 'beacon', timeframe: 'this_1_days' },
  });
  t.equal(count.body.result, 5, 'every beacon that answered success was recorded');
});

t.test('organization API: create, list, get', async (t) => {
  const created = await api.post('/3.0/organizations/default/projects', { key: server.orgKey, body: { name: 'Shop' } });
  t.equal(created.status, 201);
  t.equal(created.body.name, 'Shop');
  for (const kind of ['master', 'write', 'read']) t.match(created.body.api_keys[kind], /^[0-9a-f]{64}$/);
  const list = await api.get('/3.0/organizations/default/projects', { key: server.orgKey });
  t.equal(list.status, 200);
  t.ok(list.body.some((project: any) => project.id === created.body.id));
  const one = await api.get(`/3.0/organizations/default/projects/${created.body.id}`, { key: server.orgKey });
  t.same(one.body, created.body);
  const unknown = await api.get('/3.0/organizations/default/projects/nope', { key: server.orgKey });
  t.equal(unknown.status, 404);
  const otherOrg = await api.get('/3.0/organizations/elsewhere/projects', { key: server.orgKey });
  t.equal(otherOrg.status, 404);
  const noName = await api.post('/3.0/organizations/default/projects', { key: server.orgKey, body: {} });
  t.equal(noName.status, 400);
});

t.test('key regeneration: new key works, old key answers 401', async (t) => {
  const project = (await api.post('/3.0/organizations/default/projects', { key: server.orgKey, body: { name: 'Regen' } })).body;
  const path = `/3.0/projects/${project.id}`;
  for (const kind of ['write', 'read'] as const) {
    const response = await api.post(`${path}/api_keys/${kind}/regenerate`, { key: project.api_keys.master });
    t.equal(response.status, 200);
    t.same(Object.keys(response.body), [kind]);
    t.match(response.body[kind], /^[0-9a-f]{64}$/);
    t.not(response.body[kind], project.api_keys[kind]);
    const probe = kind === 'write'
      ? (key: string) => api.post(`${path}/events/x`, { key, body: { a: 1 } })
      : (key: string) => api.get(`${path}/events`, { key });
    t.equal((await probe(project.api_keys[kind])).status, 401, `old ${kind} key → 401`);
    t.ok((await probe(response.body[kind])).status < 300, `new ${kind} key works`);
  }
  const master = await api.post(`${path}/api_keys/master/regenerate`, { key: project.api_keys.master });
  t.equal(master.status, 404, 'the master key is not regenerated through the API');
});

t.test('inspect: list, include_schema=false, one collection, one property, 404s, /v3 alias', async (t) => {
  await api.post(`${p()}/events/orders`, { key: server.keys.write, body: { price: 2.5, item: { name: 'x' }, tags: ['a'], ok: true } });
  const list = await api.get(`${p()}/events`, { key: server.keys.read });
  t.equal(list.status, 200);
  const orders = list.body.find((c: any) => c.name === 'orders');
  t.same(Object.keys(orders).sort(), ['name', 'properties', 'url']);
  t.equal(orders.url, `${p()}/events/orders`);
  t.equal(orders.properties.price, 'num');
  t.equal(orders.properties['item.name'], 'string');
  t.equal(orders.properties.tags, 'list');
  t.equal(orders.properties.ok, 'bool');
  t.equal(orders.properties['svc.timestamp'], 'datetime');
  const bare = await api.get(`${p()}/events?include_schema=false`, { key: server.keys.read });
  t.same(Object.keys(bare.body.find((c: any) => c.name === 'orders')).sort(), ['name', 'url']);
  const one = await api.get(`/v3/projects/${server.projectId}/events/orders`, { key: server.keys.read });
  t.equal(one.status, 200);
  t.same(one.body, orders);
  const property = await api.get(`${p()}/events/orders/properties/item.name`, { key: server.keys.read });
  t.same(property.body, { property_name: 'item.name', url: `${p()}/events/orders/properties/item.name`, type: 'string' });
  t.equal((await api.get(`${p()}/events/nope`, { key: server.keys.read })).status, 404);
  t.equal((await api.get(`${p()}/events/orders/properties/nope`, { key: server.keys.read })).status, 404);
  t.equal((await api.get(`${p()}/events/nope/properties/x`, { key: server.keys.read })).body.error_code, 'ResourceNotFoundError');
});

t.test('queries: GET values parsed leniently, POST body, HEAD, unknown analysis 404', async (t) => {
  await api.post(`${p()}/events`, { key: server.keys.write, body: { q: [{ n: 1 }, { n: 5 }, { n: 'x' }] } });
  const filters = encodeURIComponent(JSON.stringify([{ property_name: 'n', operator: 'gte', property_value: 1 }]));
  const get = await api.get(`${p()}/queries/count?event_collection=q&timeframe=this_1_days&filters=${filters}`, { key: server.keys.read });
  t.equal(get.status, 200, get.text);
  t.same(get.body, { result: 2 });
  const quoted = await api.get(`${p()}/queries/count?event_collection=q&timeframe=%22this_1_days%22`, { key: server.keys.read });
  t.same(quoted.body, { result: 3 });
  const max = await api.post(`${p()}/queries/maximum`, { key: server.keys.read, body: { event_collection: 'q', timeframe: 'this_1_days', target_property: 'n' } });
  t.same(max.body, { result: 5 });
  const head = await api.head(`${p()}/queries/count?event_collection=q&timeframe=this_1_days`, { key: server.keys.read });
  t.equal(head.status, 200);
  t.equal(head.text, '');
  const unknown = await api.get(`${p()}/queries/bogus?event_collection=q&timeframe=this_1_days`, { key: server.keys.read });
  t.equal(unknown.status, 404);
  const missing = await api.get(`${p()}/queries/count?event_collection=q`, { key: server.keys.read });
  t.equal(missing.status, 400);
  t.type(missing.body.error_code, 'string');
});

t.test('X-Forwarded-For is ignored without --trust-proxy', async (t) => {
  await api.post(`${p()}/events/ips`, { key: server.keys.write, body: { ip: '${svc.ip}' }, headers: { 'X-Forwarded-For': '203.0.113.9' } });
  const rows = await api.post(`${p()}/queries/extraction`, { key: server.keys.read, body: { event_collection: 'ips', timeframe: 'this_1_days' } });
  t.equal(rows.body.result[0].ip, '127.0.0.1');
});

t.test('with --trust-proxy the first X-Forwarded-For entry is the client IP', async (t) => {
  const proxied = await startServer({ args: ['--trust-proxy'] });
  t.teardown(async () => { await proxied.stop(); proxied.cleanup(); });
  const papi = client(proxied.url);
  const path = `/3.0/projects/${proxied.projectId}`;
  await papi.post(`${path}/events/ips`, { key: proxied.keys.write, body: { ip: '${svc.ip}' }, headers: { 'X-Forwarded-For': '203.0.113.9, 10.0.0.1' } });
  const rows = await papi.post(`${path}/queries/extraction`, { key: proxied.keys.read, body: { event_collection: 'ips', timeframe: 'this_1_days' } });
  t.equal(rows.body.result[0].ip, '203.0.113.9');
});
