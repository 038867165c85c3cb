/**
 * Shared metadata (docs/cluster.md, server/cluster/meta.ts): two Tally nodes on one real Kafka
 * broker share the organization, projects and keys, access keys, saved queries and dataset
 * definitions through the compacted tally.meta topic. A change asked of node 0 is in force on
 * node 1 (each delay is measured, polling every 50 ms; the bound asserted is a generous 5 s);
 * node 1 started again with an empty data dir gets everything from the topic before it answers;
 * two nodes starting at once on an empty topic adopt one organization; with the broker stopped a
 * project creation is answered 503 and not applied.
 */
import t, { type Test } from 'tap';
import { Kafka, logLevel } from 'kafkajs';
import { createServedTopic, startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { ALL_TIME, clusterArgs, stopAll } from '../helpers/cluster.js';

const POLL_MS = 50;
const BOUND_MS = 5_000;

let kafka: RealKafka;
const servers: TestServer[] = [];
const delays: Record<string, number> = {};
t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
});
t.teardown(async () => {
  await stopAll(servers, kafka);
  t.comment(`delays until in force on the other node (ms): ${JSON.stringify(delays)}`);
});

/** ms until `check` holds (polled every 50 ms), recorded under `name`; fails the test past the bound. */
async function delayUntil(t: Test, name: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > BOUND_MS) {
      t.fail(`${name}: not in force within ${BOUND_MS} ms`);
      return -1;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const ms = Date.now() - started;
  delays[name] = ms;
  t.pass(`${name}: in force on node 1 after ${ms} ms`);
  return ms;
}

function writeEvent(server: TestServer, project: string, key: string, body: Record<string, unknown> = { n: 1 }) {
  return client(server.url).post(`/3.0/projects/${project}/events/things`, { key, body });
}

async function countThings(server: TestServer, project: string, key: string): Promise<number> {
  const r = await client(server.url).post(`/3.0/projects/${project}/queries/count`, { key, body: { event_collection: 'things', timeframe: ALL_TIME } });
  return r.status === 200 ? r.body.result : -1;
}

interface Project {
  id: string;
  api_keys: { master: string; write: string; read: string };
}

t.test('changes made on node 0 are in force on node 1', async (t) => {
  const a = await startServer({ args: clusterArgs(kafka.bootstrap, 0) });
  servers.push(a);
  const b = await startServer({ orgKey: a.orgKey, args: clusterArgs(kafka.bootstrap, 1) });
  servers.push(b);
  t.equal(b.projectId, a.projectId, 'node 1 adopted node 0\'s default project');
  const api0 = client(a.url);
  const api1 = client(b.url);

  // A project created on node 0 with the organization key: written and queried on node 1 with its keys.
  const created = await api0.post('/3.0/organizations/default/projects', { key: a.orgKey, body: { name: 'shared' } });
  t.equal(created.status, 201);
  const project = created.body as Project;
  await delayUntil(t, 'project', async () => (await writeEvent(b, project.id, project.api_keys.write)).status === 201);
  t.ok(await delayUntil(t, 'project: its event counted on node 1', async () => (await countThings(b, project.id, project.api_keys.read)) >= 1) >= 0);
  t.equal((await api1.get(`/3.0/organizations/default/projects/${project.id}`, { key: a.orgKey })).body.name, 'shared');

  // An access key created on node 0 works on node 1; revoked on node 0, refused on node 1.
  const keyMade = await api0.post(`/3.0/projects/${project.id}/keys`, { key: project.api_keys.master, body: { name: 'writer', permitted: ['writes'] } });
  t.equal(keyMade.status, 201);
  const access = keyMade.body.key as string;
  await delayUntil(t, 'access key created', async () => (await writeEvent(b, project.id, access)).status === 201);
  t.equal((await api0.post(`/3.0/projects/${project.id}/keys/${access}/revoke`, { key: project.api_keys.master })).status, 200);
  await delayUntil(t, 'access key revoked', async () => {
    const r = await writeEvent(b, project.id, access);
    return r.status === 403 && r.body.error_code === 'KeyNotPermittedError' && /revoked/.test(r.body.message);
  });

  // A regenerated write key: the old one refused on node 1, the new one accepted.
  const regenerated = await api0.post(`/3.0/projects/${project.id}/api_keys/write/regenerate`, { key: project.api_keys.master });
  t.equal(regenerated.status, 200);
  const fresh = regenerated.body.write as string;
  t.not(fresh, project.api_keys.write);
  await delayUntil(t, 'write key regenerated', async () => (await writeEvent(b, project.id, project.api_keys.write)).status === 401);
  t.equal((await writeEvent(b, project.id, fresh)).status, 201, 'the new write key is accepted on node 1');

  // A saved query created on node 0 is listed on node 1 and runs there.
  const saved = await api0.send('PUT', `/3.0/projects/${project.id}/queries/saved/things-count`, {
    key: project.api_keys.master, body: { query: { analysis_type: 'count', event_collection: 'things', timeframe: ALL_TIME } },
  });
  t.equal(saved.status, 201);
  await delayUntil(t, 'saved query', async () => {
    const r = await api1.get(`/3.0/projects/${project.id}/queries/saved`, { key: project.api_keys.read });
    return r.status === 200 && r.body.some((q: { query_name: string }) => q.query_name === 'things-count');
  });
  const result = await api1.get(`/3.0/projects/${project.id}/queries/saved/things-count/result`, { key: project.api_keys.read });
  t.equal(result.status, 200);
  t.equal(result.body.result, await countThings(b, project.id, project.api_keys.read), 'the saved query runs on node 1');

  // A dataset definition too, and a delete.
  const dataset = await api0.send('PUT', `/3.0/projects/${project.id}/datasets/by-n`, {
    key: project.api_keys.master,
    body: { query: { analysis_type: 'count', event_collection: 'things', timeframe: 'this_30_days', interval: 'daily' }, index_by: 'n' },
  });
  t.equal(dataset.status, 201);
  await delayUntil(t, 'dataset', async () => (await api1.get(`/3.0/projects/${project.id}/datasets/by-n`, { key: project.api_keys.read })).status === 200);
  t.equal((await api0.send('DELETE', `/3.0/projects/${project.id}/queries/saved/things-count`, { key: project.api_keys.master })).status, 204);
  await delayUntil(t, 'saved query deleted', async () => (await api1.get(`/3.0/projects/${project.id}/queries/saved/things-count`, { key: project.api_keys.read })).status === 404);

  // Node 1 again, with an EMPTY data dir and another organization key of its own: the topic's
  // organization, projects and keys are there as soon as it answers, /ready included.
  t.equal(await b.stop(), 0);
  const ownKey = 'f'.repeat(64);
  const c = await startServer({ orgKey: ownKey, listKey: a.orgKey, args: clusterArgs(kafka.bootstrap, 1) });
  servers.push(c);
  const api2 = client(c.url);
  // Its first answers: the catalog is applied before the node listens (and /ready is 200 once it
  // also read the events topic again).
  const listed = await api2.get('/3.0/organizations/default/projects', { key: a.orgKey });
  t.equal(listed.status, 200);
  t.same(listed.body.map((p: Project) => p.id), [a.projectId, project.id], 'the projects of the topic, and only those');
  t.same(listed.body[1].api_keys, { ...project.api_keys, write: fresh }, 'with their current keys');
  t.equal((await api2.get('/3.0/organizations/default/projects', { key: ownKey })).status, 401, 'its own organization key was replaced');
  t.match(c.stderr(), /organization differed from the metadata topic's; adopted the topic's/);
  const keys = await api2.get(`/3.0/projects/${project.id}/keys`, { key: project.api_keys.master });
  t.same(keys.body.map((k: { key: string; is_active: boolean }) => [k.key, k.is_active]), [[access, false]], 'the access key, revoked');
  t.equal((await api2.get(`/3.0/projects/${project.id}/datasets/by-n`, { key: project.api_keys.read })).status, 200, 'the dataset');
  t.equal((await api2.get(`/3.0/projects/${project.id}/queries/saved/things-count`, { key: project.api_keys.read })).status, 404, 'not the deleted saved query');
  t.ok(await delayUntil(t, 'ready after a start with an empty data dir', async () => (await api2.get('/ready')).status === 200) >= 0);
  t.ok(await delayUntil(t, 'events of the new node', async () => (await countThings(c, project.id, project.api_keys.read)) >= 3) >= 0);
});

t.test('two nodes starting at once on an empty topic adopt one organization', async (t) => {
  const topics = ['--cluster-topic', 'race.events', '--cluster-meta-topic', 'race.meta'];
  const orgKey = 'e'.repeat(64);
  const [x, y] = await Promise.all([0, 1].map((id) => startServer({ orgKey, args: [...clusterArgs(kafka.bootstrap, id), ...topics] })));
  servers.push(x!, y!);
  const lists = await Promise.all([x!, y!].map(async (node) => (await client(node.url).get('/3.0/organizations/default/projects', { key: orgKey })).body));
  t.equal(lists[0].length, 1, 'one default project, not one per node');
  t.same(lists[1], lists[0], 'the same on both nodes');
  const raced = /another node published its organization first/.test(x!.stderr() + y!.stderr());
  t.comment(raced ? 'both nodes published a seed; the first one won on both' : 'one node published, the other read it');
});

t.test('the first organization in the topic wins; objects published with another are ignored', async (t) => {
  // What two nodes starting at once on an empty topic leave in it: two seeds, one after the other.
  const admin = new Kafka({ clientId: 'tally-test', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING });
  const kafkaAdmin = admin.admin();
  await kafkaAdmin.connect();
  await createServedTopic(kafkaAdmin, { topic: 'seeded.meta', numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] });
  await kafkaAdmin.disconnect();
  const producer = admin.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const [first, second] = ['a'.repeat(64), 'b'.repeat(64)];
  const projectOf = (id: string) => JSON.stringify({ id, name: id, api_keys: { master: `${id}m`.padEnd(64, '0'), write: `${id}w`.padEnd(64, '0'), read: `${id}r`.padEnd(64, '0') } });
  await producer.send({ topic: 'seeded.meta', acks: -1, messages: [
    { key: 'org/seed-1', value: JSON.stringify({ id: 'default', key: first }), headers: { 'tally-seed': 'seed-1' } },
    { key: 'org/seed-2', value: JSON.stringify({ id: 'default', key: second }), headers: { 'tally-seed': 'seed-2' } },
    { key: 'project/p2', value: projectOf('p2'), headers: { 'tally-seed': 'seed-2' } },
    { key: 'project/p1', value: projectOf('p1'), headers: { 'tally-seed': 'seed-1' } },
    { key: 'project/p3', value: projectOf('p3') },
  ] });
  await producer.disconnect();
  const node = await startServer({ orgKey: second, listKey: first, args: [...clusterArgs(kafka.bootstrap, 5), '--cluster-topic', 'seeded.events', '--cluster-meta-topic', 'seeded.meta'] });
  servers.push(node);
  const listed = await client(node.url).get('/3.0/organizations/default/projects', { key: first });
  t.same(listed.body.map((p: Project) => p.id), ['p1', 'p3'], 'the first seed\'s project and a later change; not the other seed\'s');
  t.equal((await client(node.url).get('/3.0/organizations/default/projects', { key: second })).status, 401);
});

t.test('with the broker stopped a project creation is 503 and not applied', async (t) => {
  const a = servers[0]!;
  await kafka.stop();
  const started = Date.now();
  const refused = await client(a.url).post('/3.0/organizations/default/projects', { key: a.orgKey, body: { name: 'lost' } });
  t.comment(`answered ${refused.status} after ${Date.now() - started} ms`);
  t.equal(refused.status, 503);
  t.equal(refused.body.error_code, 'ServiceUnavailableError');
  t.match(refused.body.message, /^Kafka did not acknowledge the change .*nothing was changed/);
  const listed = await client(a.url).get('/3.0/organizations/default/projects', { key: a.orgKey });
  t.notOk(listed.body.some((p: { name: string }) => p.name === 'lost'), 'not applied');
});
