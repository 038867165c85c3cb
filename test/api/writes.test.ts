/**
 * The write rules of the seed and docs/api.md §4, each at its exact boundary, through the real server:
 * property names, string lengths, event and batch sizes, property counts, collection names, svc
 * timestamps, placeholders and per-event batch results.
 */
import t from 'tap';
import { client } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: ReturnType<typeof client>;
const ev = (c: string) => `/3.0/projects/${server.projectId}/events/${encodeURIComponent(c)}`;
const write = (c: string, body: unknown) => api.post(ev(c), { key: server.keys.write, body });

t.before(async () => {
  server = await startServer();
  api = client(server.url);
});
t.teardown(async () => {
  await server.stop();
  server.cleanup();
});

t.test('property names: 255 characters ok, 256 rejected, no periods', async (t) => {
  t.equal((await write('names', { ['a'.repeat(255)]: 1 })).status, 201);
  const long = await write('names', { ['b'.repeat(256)]: 1 });
  t.equal(long.status, 400);
  t.equal(long.body.error_code, 'InvalidPropertyNameError');
  const dotted = await write('names', { 'a.b': 1 });
  t.equal(dotted.status, 400);
  t.equal(dotted.body.error_code, 'InvalidPropertyNameError');
  const nestedDotted = await write('names', { outer: { 'x.y': 1 } });
  t.equal(nestedDotted.body.error_code, 'InvalidPropertyNameError');
  t.equal((await write('names', { outer: { inner: 1 } })).status, 201, 'nested objects are fine');
});

t.test('string values: 9,999 characters ok, 10,000 rejected, also inside lists and objects', async (t) => {
  t.equal((await write('strings', { s: 'x'.repeat(9_999) })).status, 201);
  const long = await write('strings', { s: 'x'.repeat(10_000) });
  t.equal(long.status, 400);
  t.equal(long.body.error_code, 'InvalidPropertyValueError');
  t.equal((await write('strings', { l: ['x'.repeat(10_000)] })).body.error_code, 'InvalidPropertyValueError');
  t.equal((await write('strings', { o: { s: 'x'.repeat(10_000) } })).body.error_code, 'InvalidPropertyValueError');
});

t.test('numbers: within -2^63..2^63-1', async (t) => {
  t.equal((await write('numbers', { n: 2 ** 62 })).status, 201);
  t.equal((await write('numbers', '{"n": -9223372036854775808}')).status, 201);
  // JSON.stringify(-(2 ** 63)) writes -9223372036854776000: past -2^63 as written (number-range.test.ts).
  t.equal((await write('numbers', { n: -(2 ** 63) })).status, 400);
  const big = await write('numbers', '{"n": 1e30}');
  t.equal(big.status, 400);
  t.equal(big.body.error_code, 'InvalidPropertyValueError');
});

t.test('lists hold one primitive type', async (t) => {
  t.equal((await write('lists', { l: [1, 2, null] })).status, 201);
  t.equal((await write('lists', { l: [1, 'a'] })).body.error_code, 'InvalidPropertyValueError');
  t.equal((await write('lists', { l: [{ a: 1 }] })).body.error_code, 'InvalidPropertyValueError');
});

t.test('single event body: just under 900,000 bytes → 201, just over → 413', async (t) => {
  const under = JSON.stringify({ pad: Array.from({ length: 90 }, () => 'y'.repeat(9_990)) });
  const fill = 900_000 - Buffer.byteLength(under);
  t.ok(fill >= 0, 'fits');
  const exact = under.slice(0, -1) + ' '.repeat(fill) + '}';
  t.equal(Buffer.byteLength(exact), 900_000);
  t.equal((await write('big', exact)).status, 201, 'exactly 900,000 bytes');
  const over = exact.slice(0, -1) + ' }';
  t.equal(Buffer.byteLength(over), 900_001);
  const response = await write('big', over);
  t.equal(response.status, 413);
  t.equal(response.body.error_code, 'RequestTooLargeError');
});

t.test('batch body over 10,000,000 bytes → 413; the server stays up', async (t) => {
  const events = Array.from({ length: 1_200 }, () => ({ s: 'x'.repeat(9_000) }));
  const body = JSON.stringify({ big: events });
  t.ok(Buffer.byteLength(body) > 10_000_000);
  const response = await api.post(`/3.0/projects/${server.projectId}/events`, { key: server.keys.write, body });
  t.equal(response.status, 413);
  t.equal(response.body.error_code, 'RequestTooLargeError');
  t.equal((await write('big', { after: true })).status, 201);
});

t.test('properties per collection: 1,000 ok, 1,001 rejected', async (t) => {
  t.equal((await write('wide', { p0: 0 })).status, 201);
  const before = await api.get(ev('wide'), { key: server.keys.read });
  // The svc properties the server sets are not the client's to count.
  const own = (schema: any) => Object.keys(schema.properties).filter((p) => !p.startsWith('svc.')).length;
  const have = own(before.body);
  const event: Record<string, number> = {};
  for (let index = 1; index <= 1_000 - have; index++) event[`p${index}`] = index;
  t.equal((await write('wide', event)).status, 201);
  const full = await api.get(ev('wide'), { key: server.keys.read });
  t.equal(own(full.body), 1_000);
  const over = await write('wide', { one_more: 1 });
  t.equal(over.status, 400);
  t.equal(over.body.error_code, 'TooManyPropertiesError');
  t.equal((await write('wide', { p1: 5 })).status, 201, 'known properties still write');
});

t.test('collection names', async (t) => {
  t.equal((await write('c'.repeat(64), { a: 1 })).status, 201);
  t.equal((await write('dotted.name', { a: 1 })).status, 201);
  for (const bad of ['c'.repeat(65), 'has$dollar', '_private', '.lead', 'trail.']) {
    const response = await write(bad, { a: 1 });
    t.equal(response.status, 400, bad);
    t.equal(response.body.error_code, 'InvalidCollectionNameError', bad);
  }
});

t.test('svc namespace: allowed keys only', async (t) => {
  const ok = await write('svc', { svc: { timestamp: '2024-01-02T03:04:05.678Z', uniqueness_token: 'u1' } });
  t.equal(ok.status, 201);
  const bad = await write('svc', { svc: { bogus: 1 } });
  t.equal(bad.status, 400);
  t.equal(bad.body.error_code, 'InvalidSvcNamespaceProperty');
  t.equal((await write('svc', { svc: { uniqueness_token: 'x'.repeat(65) } })).status, 400);
});

t.test('not an object, invalid JSON, text/plain', async (t) => {
  t.equal((await write('shape', [1, 2])).body.error_code, 'InvalidEventError');
  const invalid = await write('shape', '{"a":');
  t.equal(invalid.status, 400);
  t.equal(invalid.body.error_code, 'InvalidJsonError');
  const plain = await api.post(ev('shape'), {
    key: server.keys.write, body: '{"beacon": true}', headers: { 'Content-Type': 'text/plain' },
  });
  t.equal(plain.status, 201);
  t.same(plain.body, { created: true });
});

async function extract(collection: string, start = '2000-01-01T00:00:00Z'): Promise<any[]> {
  const timeframe = { start, end: '2100-01-01T00:00:00Z' };
  const response = await api.post(`/3.0/projects/${server.projectId}/queries/extraction`, {
    key: server.keys.read, body: { event_collection: collection, timeframe },
  });
  return response.status === 200 ? response.body.result : [];
}

t.test('svc.timestamp overrides with -0800, -08:00 and Z are stored in UTC', async (t) => {
  const stamps = ['2024-01-02T03:04:05.678-0800', '2024-01-02T03:04:05.678-08:00', '2024-01-02T11:04:05.678Z'];
  for (const [index, timestamp] of stamps.entries()) {
    t.equal((await write('stamps', { index, svc: { timestamp } })).status, 201, timestamp);
  }
  const events = await extract('stamps');
  t.equal(events.length, 3);
  for (const event of events) t.equal(event.svc.timestamp, '2024-01-02T11:04:05.678Z');
  for (const event of events) t.match(event.svc.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  for (const event of events) t.match(event.svc.id, /^[0-9a-f]{24}$/);
});

t.test('client svc.id and svc.created_at are replaced', async (t) => {
  const response = await write('replaced', { svc: { id: 'mine', created_at: '2001-01-01T00:00:00.000Z' } });
  if (response.status !== 201) {
    t.equal(response.body.error_code, 'InvalidSvcNamespaceProperty', 'or rejected outright');
    return;
  }
  const [event] = await extract('replaced');
  t.not(event.svc.id, 'mine');
  t.not(event.svc.created_at, '2001-01-01T00:00:00.000Z');
});

t.test('placeholders at any depth', async (t) => {
  const body = {
    ip: '${svc.ip}', a: { b: { c: { ua: '${svc.user_agent}' } } }, list: ['${svc.ip}'], other: 'x ${svc.ip}',
  };
  const response = await api.post(ev('placeholders'), {
    key: server.keys.write, body, headers: { 'User-Agent': 'tally-test/1.0' },
  });
  t.equal(response.status, 201);
  const [event] = await extract('placeholders');
  t.equal(event.ip, '127.0.0.1');
  t.equal(event.a.b.c.ua, 'tally-test/1.0');
  t.same(event.list, ['127.0.0.1']);
  t.equal(event.other, 'x ${svc.ip}', 'only exact matches are replaced');
});

t.test('batch: per-event results in submitted order; one bad event sinks nothing', async (t) => {
  const response = await api.post(`/3.0/projects/${server.projectId}/events`, {
    key: server.keys.write,
    body: {
      first: [{ a: 1 }, { ['x'.repeat(256)]: 1 }, { b: 2 }, 'not an object'],
      second: [{ s: 'x'.repeat(10_000) }, { ok: true }],
      'bad$name': [{ a: 1 }],
      'quote"back\\slash\u2028é': [{ a: 1 }, { a: 2 }],
    },
  });
  t.equal(response.status, 200);
  const { first, second } = response.body;
  t.same(Object.keys(response.body), ['first', 'second', 'bad$name', 'quote"back\\slash\u2028é'], 'every collection, in order, its name as sent');
  t.same(response.body['quote"back\\slash\u2028é'].length, 2);
  t.same(first[0], { success: true }, 'a stored event: exactly { success: true }');
  t.same(first.map((r: any) => r.success), [true, false, true, false]);
  // A collection named __proto__ gets its results too (set on a plain object, it was dropped).
  const proto = await api.post(`/3.0/projects/${server.projectId}/events`, {
    key: server.keys.write, body: '{"__proto__": [{"a": 1}], "after": [{"a": 1}]}',
  });
  t.equal(proto.status, 200);
  t.same(Object.keys(JSON.parse(proto.text)), ['__proto__', 'after'], 'a result list for __proto__ as well');
  t.equal(JSON.parse(proto.text)['__proto__'].length, 1);
  t.equal(first[1].error.name, 'InvalidPropertyNameError');
  t.type(first[1].error.description, 'string');
  t.equal(first[3].error.name, 'InvalidEventError');
  t.same(second.map((r: any) => r.success), [false, true]);
  t.equal(second[0].error.name, 'InvalidPropertyValueError');
  t.equal(response.body['bad$name'][0].error.name, 'InvalidCollectionNameError');
  t.equal((await extract('first')).length, 2);
});

t.test('batch shape errors', async (t) => {
  const path = `/3.0/projects/${server.projectId}/events`;
  for (const body of ['[1,2]', '{"a": 1}', '"str"', 'null']) {
    const response = await api.post(path, { key: server.keys.write, body });
    t.equal(response.status, 400, body);
    t.equal(response.body.error_code, 'InvalidBatchError', body);
  }
  const invalid = await api.post(path, { key: server.keys.write, body: '{"a": [' });
  t.equal(invalid.body.error_code, 'InvalidJsonError');
});

t.test('a large batch, parsed on an ingest worker: per-event results, and shape errors as for small ones', async (t) => {
  const path = `/3.0/projects/${server.projectId}/events`;
  const filler = Array.from({ length: 1_500 }, (_, i) => ({ i, note: 'n'.repeat(40) }));
  const response = await api.post(path, {
    key: server.keys.write,
    body: { large: [{ a: 1 }, { ['x'.repeat(256)]: 1 }, 'not an object', ...filler], 'bad$name': [{ a: 1 }] },
  });
  t.equal(response.status, 200);
  const { large: big } = response.body;
  t.equal(big.length, 1_503);
  t.same(big.slice(0, 3).map((r: any) => r.success), [true, false, false]);
  t.equal(big[1].error.name, 'InvalidPropertyNameError');
  t.equal(big[2].error.name, 'InvalidEventError');
  t.ok(big.slice(3).every((r: any) => r.success), 'the filler is stored');
  t.equal(response.body['bad$name'][0].error.name, 'InvalidCollectionNameError');
  const count = await api.post(`/3.0/projects/${server.projectId}/queries/count`, {
    key: server.keys.read,
    body: { event_collection: 'large', timeframe: { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' } },
  });
  t.equal(count.body.result, 1_501, 'every accepted event is stored');
  const padding = 'p'.repeat(100_000);
  for (const [body, code] of [[`{"a": ["${padding}"`, 'InvalidJsonError'], [`["${padding}"]`, 'InvalidBatchError']]) {
    const refused = await api.post(path, { key: server.keys.write, body });
    t.equal(refused.status, 400);
    t.equal(refused.body.error_code, code);
  }
});

t.test('concurrent single-event POSTs, written a turn\'s worth per call: each stored exactly, with its own body and headers', async (t) => {
  const count = 200;
  const responses = await Promise.all(Array.from({ length: count }, (_, i) => api.post(ev('concurrent'), {
    key: server.keys.write, headers: { 'User-Agent': `agent/${i}` },
    // Bodies of different lengths; every ninth refused (a property name with a period).
    body: i % 9 === 4 ? { 'bad.name': i } : { n: i, text: 'x'.repeat(i % 13), ua: '${svc.user_agent}' },
  })));
  for (const [i, response] of responses.entries()) {
    if (i % 9 === 4) t.match([response.status, response.body.error_code], [400, 'InvalidPropertyNameError'], `request ${i} refused alone`);
    else t.same([response.status, response.body], [201, { created: true }], `request ${i} stored`);
  }
  const events = await extract('concurrent');
  const expected = Array.from({ length: count }, (_, i) => i).filter((i) => i % 9 !== 4);
  t.same(events.map((e) => e.n).sort((a, b) => a - b), expected, 'each accepted event exactly once');
  t.ok(events.every((e) => e.text === 'x'.repeat(e.n % 13) && e.ua === `agent/${e.n}`), 'each with its own body and User-Agent');
});
