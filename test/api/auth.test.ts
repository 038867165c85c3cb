/**
 * docs/api.md §3 on every route: no key or an unknown key → 401 InvalidApiKeyError, a valid key of the
 * wrong kind → 403 KeyNotPermittedError, the right kind (and the Master Key) → through. Keys work from
 * the Authorization header and from ?api_key=.
 */
import t from 'tap';
import { client } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: ReturnType<typeof client>;

t.before(async () => {
  server = await startServer();
  api = client(server.url);
  await api.post(`/3.0/projects/${server.projectId}/events/seen`, { key: server.keys.write, body: { a: 1 } });
});
t.teardown(async () => {
  await server.stop();
  server.cleanup();
});

type Kind = 'none' | 'bogus' | 'org' | 'master' | 'write' | 'read';
const KINDS: readonly Kind[] = ['none', 'bogus', 'org', 'master', 'write', 'read'];

function keyOf(kind: Kind): string | undefined {
  if (kind === 'none') return undefined;
  if (kind === 'bogus') return 'f'.repeat(64);
  if (kind === 'org') return server.orgKey;
  return server.keys[kind];
}

interface Case {
  readonly name: string;
  readonly method: string;
  readonly path: () => string;
  readonly body?: unknown;
  /** Kinds that get through; every other valid key kind gets 403. */
  readonly allowed: readonly Kind[];
  /** Valid keys that are not keys of this resource at all → 401. */
  readonly foreign: readonly Kind[];
}

const p = () => `/3.0/projects/${server.projectId}`;
const timeframe = encodeURIComponent(JSON.stringify({ start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' }));
const beacon = Buffer.from(JSON.stringify({ b: 1 })).toString('base64');

const CASES: readonly Case[] = [
  { name: 'versions', method: 'GET', path: () => '/', allowed: ['org', 'master'], foreign: [] },
  { name: 'record one', method: 'POST', path: () => `${p()}/events/seen`, body: { a: 2 }, allowed: ['master', 'write'], foreign: ['org'] },
  { name: 'beacon', method: 'GET', path: () => `${p()}/events/seen?data=${beacon}`, allowed: ['master', 'write'], foreign: ['org'] },
  { name: 'batch', method: 'POST', path: () => `${p()}/events`, body: { seen: [{ a: 3 }] }, allowed: ['master', 'write'], foreign: ['org'] },
  { name: 'inspect all', method: 'GET', path: () => `${p()}/events`, allowed: ['master', 'read'], foreign: ['org'] },
  { name: 'inspect one', method: 'GET', path: () => `${p()}/events/seen`, allowed: ['master', 'read'], foreign: ['org'] },
  { name: 'inspect property', method: 'GET', path: () => `${p()}/events/seen/properties/a`, allowed: ['master', 'read'], foreign: ['org'] },
  { name: 'query GET', method: 'GET', path: () => `${p()}/queries/count?event_collection=seen&timeframe=${timeframe}`, allowed: ['master', 'read'], foreign: ['org'] },
  { name: 'query POST', method: 'POST', path: () => `${p()}/queries/count`, body: { event_collection: 'seen', timeframe: 'this_1_days' }, allowed: ['master', 'read'], foreign: ['org'] },
  { name: 'list projects', method: 'GET', path: () => '/3.0/organizations/default/projects', allowed: ['org'], foreign: [] },
  { name: 'get project', method: 'GET', path: () => `/3.0/organizations/default/projects/${server.projectId}`, allowed: ['org'], foreign: [] },
];

for (const c of CASES) {
  t.test(`${c.name}: 401 / 403 / through`, async (t) => {
    for (const kind of KINDS) {
      const key = keyOf(kind);
      const response = await api.send(c.method, c.path(), { ...(key !== undefined && { key }), body: c.body });
      if (c.allowed.includes(kind)) {
        t.ok(response.status < 300, `${kind} key gets through (${response.status} ${response.text.slice(0, 120)})`);
      } else if (kind === 'none' || kind === 'bogus' || c.foreign.includes(kind)) {
        t.equal(response.status, 401, `${kind} key → 401`);
        t.equal(response.body?.error_code, 'InvalidApiKeyError', `${kind} key → InvalidApiKeyError`);
      } else {
        t.equal(response.status, 403, `${kind} key → 403`);
        t.equal(response.body?.error_code, 'KeyNotPermittedError', `${kind} key → KeyNotPermittedError`);
      }
      t.type(response.body?.message ?? 'ok', 'string');
    }
  });
}

t.test('create project and regenerate need their keys', async (t) => {
  for (const kind of ['none', 'bogus', 'master', 'write', 'read'] as const) {
    const key = keyOf(kind);
    const created = await api.post('/3.0/organizations/default/projects', { ...(key && { key }), body: { name: 'x' } });
    t.equal(created.status, kind === 'none' || kind === 'bogus' ? 401 : 403, `create with ${kind}`);
  }
  for (const kind of ['none', 'bogus', 'org', 'write', 'read'] as const) {
    const key = keyOf(kind);
    const regen = await api.post(`${p()}/api_keys/read/regenerate`, { ...(key && { key }) });
    t.equal(regen.status, kind === 'write' || kind === 'read' ? 403 : 401, `regenerate with ${kind}`);
  }
});

t.test('api_key query parameter works like the header', async (t) => {
  const ok = await api.get(`${p()}/events/seen?api_key=${server.keys.read}`);
  t.equal(ok.status, 200);
  const wrong = await api.get(`${p()}/events/seen?api_key=${server.keys.write}`);
  t.equal(wrong.status, 403);
});

t.test('an unknown project id answers 401, not whether it exists', async (t) => {
  const response = await api.get('/3.0/projects/000000000000000000000000/events', { key: server.keys.read });
  t.equal(response.status, 401);
  t.equal(response.body.error_code, 'InvalidApiKeyError');
});

t.test('keys of one project do not open another', async (t) => {
  const other = await api.post('/3.0/organizations/default/projects', { key: server.orgKey, body: { name: 'other' } });
  t.equal(other.status, 201);
  const response = await api.get(`/3.0/projects/${other.body.id}/events`, { key: server.keys.master });
  t.equal(response.status, 401);
  const own = await api.get(`/3.0/projects/${other.body.id}/events`, { key: other.body.api_keys.read });
  t.equal(own.status, 200);
  t.same(own.body, []);
});
