/**
 * Deletes in cluster mode go through the events topic (docs/cluster.md, "Deletes"): one real
 * broker, two nodes with R = 2 (both store every partition), so each node's count is its own
 * store's. A delete asked of either node is applied by both, to exactly the events before it in
 * the collection's partition (events written after it stay, on both); property and collection
 * deletes too. A node killed -9 and restarted applies no delete again; a node whose data dir is
 * wiped is rebuilt from the topic to the same rows. A bad filter is the single node's 400 and
 * nothing is produced. With the broker down a delete is 503.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Kafka, logLevel } from 'kafkajs';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client, eventually, type Res } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { ALL_TIME, caughtUp, clusterArgs } from '../helpers/cluster.js';

const SECRET = 'a-test-cluster-secret-0123456789';
const pro = [{ property_name: 'plan', operator: 'eq', property_value: 'pro' }];

let kafka: RealKafka;
const nodes: TestServer[] = [];
let reference: TestServer;
let argsOf: (id: number) => string[];
t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
  const ports = [await freePort(), await freePort()];
  const list = ports.map((port, id) => `${id}=http://127.0.0.1:${port}`).join(',');
  argsOf = (id) => [...clusterArgs(kafka.bootstrap, id), '--http-port', String(ports[id]),
    '--cluster-nodes', list, '--cluster-replicas', '2', '--cluster-secret', SECRET];
  const a = await startServer({ args: argsOf(0) });
  nodes.push(a);
  // Projects are shared through tally.meta: node 1 starts empty with the organization's key.
  nodes.push(await startServer({ orgKey: a.orgKey, args: argsOf(1) }));
  reference = await startServer();
  await Promise.all(nodes.map((node) => caughtUp(node)));
});
t.teardown(async () => {
  for (const server of [...nodes, reference]) {
    if (server === undefined) continue;
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill9();
    server.cleanup();
  }
  await kafka?.stop();
});

/** Events n = from..from+count-1: plan pro for even n, free for odd; one day each of May 2024 (n % 8). */
function events(from: number, count: number, more: Record<string, unknown> = {}): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    n: from + i, plan: (from + i) % 2 === 0 ? 'pro' : 'free', secret: `s${from + i}`, ...more,
    svc: { timestamp: new Date(Date.UTC(2024, 4, 1 + ((from + i) % 8), 12)).toISOString() },
  }));
}

async function write(node: TestServer, collection: string, batch: Record<string, unknown>[]): Promise<void> {
  const r = await client(node.url).post(`/3.0/projects/${node.projectId}/events`, { key: node.keys.write, body: { [collection]: batch } });
  if (r.status !== 200 || !(r.body[collection] as { success: boolean }[]).every((e) => e.success)) {
    throw new Error(`write: ${r.status} ${r.text.slice(0, 300)}`);
  }
}

/** The node's own count (R = 2: every node stores every partition and answers from its store). */
async function count(node: TestServer, collection: string, filters: unknown[] = []): Promise<number> {
  const r = await client(node.url).post(`/3.0/projects/${node.projectId}/queries/count`, {
    key: node.keys.read, body: { event_collection: collection, timeframe: ALL_TIME, filters },
  });
  return r.status === 200 ? r.body.result as number : -r.status;
}

function del(node: TestServer, tail: string, body?: unknown): Promise<Res> {
  return client(node.url).send('DELETE', `/3.0/projects/${node.projectId}/events/${tail}`, { key: node.keys.master, body });
}

/** True once every node counts `expected` (each [filters, count]) of `collection`. */
function everywhere(collection: string, expected: [unknown[], number][], timeoutMs = 20_000): Promise<boolean> {
  return eventually(async () => {
    for (const node of nodes) {
      for (const [filters, n] of expected) if (await count(node, collection, filters) !== n) return false;
    }
    return true;
  }, timeoutMs);
}

async function extraction(node: TestServer, collection: string): Promise<Record<string, unknown>[]> {
  const r = await client(node.url).post(`/3.0/projects/${node.projectId}/queries/extraction`, {
    key: node.keys.read, body: { event_collection: collection, timeframe: ALL_TIME },
  });
  t.equal(r.status, 200, `extraction of ${collection}`);
  return (r.body.result as Record<string, unknown>[]).sort((x, y) => Number(x.n) - Number(y.n));
}

async function topicEnd(): Promise<number> {
  const admin = new Kafka({ clientId: 'tally-test', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets('tally.events')).reduce((sum, p) => sum + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

t.test('a delete by filter through node 0: both nodes delete the events before it and keep those after', async (t) => {
  const [a, b] = nodes as [TestServer, TestServer];
  await write(a, 'purchases', events(0, 20));
  await write(b, 'purchases', events(20, 20));
  t.ok(await everywhere('purchases', [[[], 40], [pro, 20]]), 'both nodes store the 40 events');
  const r = await del(a, 'purchases', { filters: pro });
  t.equal(r.status, 204, 'the single node\'s answer');
  t.equal(r.text, '');
  // Written right after the 204, through the other node: after the delete in the partition.
  await write(b, 'purchases', events(100, 10));
  t.ok(await everywhere('purchases', [[[], 30], [pro, 5]]), 'both: the 20 pro events before the delete gone, the 5 after kept');
  // A timeframe: May 1-3 (n % 8 in 0..2), through node 1, and a timezone-relative one resolved where it was asked.
  t.equal((await del(b, 'purchases', { timeframe: { start: '2024-05-01T00:00:00Z', end: '2024-05-04T00:00:00Z' } })).status, 204);
  const left = [...events(0, 40), ...events(100, 10)].filter((e) => e.plan !== 'pro' || Number(e.n) >= 100)
    .filter((e) => Number(e.n) % 8 > 2);
  t.ok(await everywhere('purchases', [[[], left.length], [pro, left.filter((e) => e.plan === 'pro').length]]),
    `both: ${left.length} left after the timeframe delete`);
  t.same(await extraction(b, 'purchases'), await extraction(a, 'purchases'), 'the same rows on both nodes');
  t.equal((await extraction(a, 'purchases')).length, left.length);
});

t.test('a property delete and a collection delete are seen on both nodes', async (t) => {
  const [a, b] = nodes as [TestServer, TestServer];
  await write(a, 'profiles', events(0, 10));
  t.ok(await everywhere('profiles', [[[], 10]]));
  t.equal((await del(b, 'profiles/properties/secret')).status, 204);
  t.ok(await eventually(async () => {
    for (const node of nodes) {
      const schema = await client(node.url).get(`/3.0/projects/${node.projectId}/events/profiles`, { key: node.keys.read });
      if (schema.status !== 200 || 'secret' in schema.body.properties) return false;
    }
    return true;
  }, 20_000), 'the property is gone from both schemas');
  for (const node of nodes) t.notOk((await extraction(node, 'profiles')).some((e) => 'secret' in e), 'and from the rows');
  t.equal((await del(b, 'profiles/properties/svc.timestamp')).status, 404, 'an svc property: 404 as on a single node');

  await write(b, 'sessions', events(0, 12));
  t.ok(await everywhere('sessions', [[[], 12]]));
  t.equal((await del(a, 'sessions')).status, 204, 'the whole collection');
  await write(b, 'sessions', events(50, 3));
  t.ok(await everywhere('sessions', [[[], 3]]), 'both: only the 3 events written after the collection delete');
});

t.test('a bad delete filter: the single node\'s 400, nothing produced', async (t) => {
  const [a] = nodes as [TestServer];
  const bad = { filters: [{ property_name: 'plan', operator: 'nope', property_value: 1 }] };
  await client(reference.url).post(`/3.0/projects/${reference.projectId}/events/purchases`, { key: reference.keys.write, body: { n: 1 } });
  const single = await del(reference, 'purchases', bad);
  t.equal(single.status, 400);
  const end = await topicEnd();
  const cluster = await del(a, 'purchases', bad);
  t.equal(cluster.status, single.status);
  t.same(cluster.body, single.body, 'the same body');
  const badTimeframe = { timeframe: 'this_7_fortnights' };
  const singleTimeframe = await del(reference, 'purchases', badTimeframe);
  t.equal(singleTimeframe.status, 400);
  const clusterTimeframe = await del(a, 'purchases', badTimeframe);
  t.same([clusterTimeframe.status, clusterTimeframe.body], [singleTimeframe.status, singleTimeframe.body], 'a bad timeframe too');
  t.equal(await topicEnd(), end, 'no record was produced');
});

t.test('a node killed -9 and restarted applies no delete twice', async (t) => {
  const [a] = nodes as [TestServer];
  const before = await Promise.all(['purchases', 'profiles', 'sessions'].map((c) => count(a, c)));
  const expected = before[0]! - await count(a, 'purchases', pro) + 4;
  // A delete, then events it must not touch, then the kill: the restart reads on from after them.
  t.equal((await del(a, 'purchases', { filters: pro })).status, 204);
  await write(a, 'purchases', events(200, 4));
  t.ok(await everywhere('purchases', [[[], expected], [pro, 2]]));
  await nodes[1]!.kill9();
  nodes[1] = await nodes[1]!.restart(argsOf(1));
  await caughtUp(nodes[1]);
  t.notMatch(nodes[1].stderr(), /cluster: delete applied/, 'the restarted node read no delete again');
  t.equal(await count(nodes[1], 'purchases'), expected);
  t.equal(await count(nodes[1], 'purchases', pro), 2);
  t.equal(await count(nodes[1], 'profiles'), before[1]);
  t.equal(await count(nodes[1], 'sessions'), before[2]);
});

t.test('a node wiped is rebuilt from the topic to the same rows, deletes applied where they were', async (t) => {
  const node = nodes[1]!;
  t.equal(await node.stop(), 0);
  for (const entry of readdirSync(node.dataDir)) rmSync(join(node.dataDir, entry), { recursive: true, force: true });
  nodes[1] = await node.restart(argsOf(1));
  await caughtUp(nodes[1]);
  t.match(nodes[1].stderr(), /cluster: delete applied/, 'the deletes were read again from the topic');
  for (const collection of ['purchases', 'profiles', 'sessions']) {
    const rows = await extraction(nodes[1], collection);
    t.ok(rows.length > 0);
    t.same(rows, await extraction(nodes[0]!, collection), `${collection}: the rebuilt node's rows are node 0's`);
  }
  t.notOk((await extraction(nodes[1], 'profiles')).some((e) => 'secret' in e), 'the property delete applied again');
  t.equal(await count(nodes[1], 'sessions'), 3, 'the collection delete applied again, the events after it kept');
});

t.test('with the broker down a delete is answered 503, as a write is', async (t) => {
  const [a] = nodes as [TestServer];
  await kafka.stopNode(1);
  const r = await del(a, 'purchases', { filters: pro });
  t.equal(r.status, 503);
  t.equal(r.body.error_code, 'ServiceUnavailableError');
  t.match(r.body.message, /Kafka did not acknowledge the delete/);
});
