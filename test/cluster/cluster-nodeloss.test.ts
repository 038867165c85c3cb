/**
 * Node loss on a real cluster: three Kafka brokers (RF 3, min.insync.replicas 2) and three Tally
 * nodes with --cluster-replicas 2 (every partition stored by two nodes). Writers over HTTP to every
 * node (single events and batches, half the collections with svc.uniqueness_token) and a kafkajs
 * idempotent producer to a surviving node's inbound Kafka listener; a Tally node is killed -9, then a
 * broker, while they write. While the node is down every collection still
 * answers from the surviving nodes (the replica) and their writes are still acknowledged; /metrics
 * shows the node down. Both restarted: every acknowledged event is counted exactly once asked of
 * every node, a token-carrying retry of acknowledged events counts nothing again, every
 * partition's lag goes to 0. A node whose data dir is wiped is rebuilt from
 * the topic (kept forever) and answers the same rows; a node whose records Kafka deleted while it
 * was away logs the gap. Needs Java 17+ and Maven: without them this fails.
 */
import t from 'tap';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Assignment } from '../../server/cluster/assignment.js';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { ALL_TIME, caughtUp, clusterArgs, countOf, emptyOutcome, stopAll, settle, storedIds, type WriteOutcome, writeUntil } from '../helpers/cluster.js';

const SECRET = 'a-test-cluster-secret-0123456789';
const NODES = [0, 1, 2];
const TOPIC = 'tally.events';

let kafka: RealKafka;
/** The running (or last) process of each node. */
const nodes: TestServer[] = [];
let ports: number[];
/** Each node's inbound Kafka listener (--kafka-in-port). */
let kinPorts: number[];
let argsOf: (id: number) => string[];
const assignment = new Assignment(NODES.map((id) => ({ id, url: '' })), 2, 12, TOPIC);

t.before(async () => {
  kafka = await startKafka({ nodes: 3 });
  ports = [await freePort(), await freePort(), await freePort()];
  kinPorts = [await freePort(), await freePort(), await freePort()];
  const list = NODES.map((id) => `${id}=http://127.0.0.1:${ports[id]}`).join(',');
  argsOf = (id) => [...clusterArgs(kafka.bootstrap, id), '--http-port', String(ports[id]),
    '--cluster-nodes', list, '--cluster-replicas', '2', '--cluster-secret', SECRET, '--kafka-in-port', String(kinPorts[id])];
});
t.teardown(() => stopAll(nodes, kafka));

const started = Date.now();
/** Where the time goes (the file should stay well under 90 s). */
const mark = (t: { comment(message: string): void }, what: string) => t.comment(`${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);

/** `name{labels} value` lines of a node's /metrics whose name starts with `prefix`. */
async function metrics(node: TestServer, prefix: string): Promise<Map<string, number>> {
  const response = await client(node.url).get('/metrics', { key: node.orgKey });
  const found = new Map<string, number>();
  for (const line of response.text.split('\n')) {
    const match = /^(\S+) (\S+)$/.exec(line);
    if (match !== null && match[1]!.startsWith(prefix)) found.set(match[1]!, Number(match[2]));
  }
  return found;
}

/** True when every partition `node` stores has lag 0 in its /metrics. */
async function noLag(node: TestServer, id: number): Promise<boolean> {
  const lags = await metrics(node, 'tally_cluster_partition_lag');
  const owned = assignment.ownedBy(id);
  return lags.size === owned.length && owned.every((p) => lags.get(`tally_cluster_partition_lag{partition="${p}"}`) === 0);
}

/** Extraction of `collection` asked of `node`, sorted by id. */
async function rows(node: TestServer, collection: string): Promise<unknown[]> {
  const response = await client(node.url).post(`/3.0/projects/${node.projectId}/queries/extraction`, {
    key: node.keys.read, body: { event_collection: collection, timeframe: ALL_TIME },
  });
  if (response.status !== 200) throw new Error(`extraction: ${response.status} ${response.text.slice(0, 300)}`);
  return [...response.body.result as { id: string }[]].sort((a, b) => a.id.localeCompare(b.id));
}

/** Two collections per pair of owners (one with tokens, one without): every node shares some with each other. */
function pickCollections(projectId: string): { name: string; tokens: boolean; owners: number[] }[] {
  const picked: { name: string; tokens: boolean; owners: number[] }[] = [];
  const seen = new Map<string, number>();
  for (let i = 0; picked.length < 6; i++) {
    const name = `c${i}`;
    const owners = assignment.ownersOf(assignment.partitionOf(`${projectId}/${name}`)).map((m) => m.id).sort();
    const pair = owners.join('+');
    const n = seen.get(pair) ?? 0;
    if (n >= 2) continue;
    seen.set(pair, n + 1);
    picked.push({ name, tokens: n === 0, owners });
  }
  return picked;
}

interface Writers {
  stop: boolean;
  readonly outcomes: Map<string, WriteOutcome>;
  readonly running: Promise<void>[];
}

/** A single-event writer and a batch writer per collection, spread over `through`. */
function startWriters(collections: ReturnType<typeof pickCollections>, through: readonly TestServer[], phase: string, w: Writers): void {
  collections.forEach(({ name, tokens }, i) => {
    const out = w.outcomes.get(name)!;
    for (const [k, size] of [[0, 1], [1, 20]] as const) {
      const node = through[(i + k) % through.length]!;
      w.running.push(writeUntil(node, name, `${name}-${phase}-${k}-${node.url.slice(-5)}`, size, () => w.stop, out, { tokens }));
    }
  });
}

/** What a kafkajs producer sent: ids of sends resolved (acknowledged) and of sends that failed (fate unknown). */
interface KafkaOutcome { readonly acked: string[]; readonly failed: string[]; sends: number }

/** A collection stored on node 2 (the one killed) and `also`. */
function kafkaCollection(projectId: string, also: number): string {
  for (let i = 0; ; i++) {
    const owners = assignment.ownersOf(assignment.partitionOf(`${projectId}/kin${i}`)).map((m) => m.id);
    if (owners.includes(2) && owners.includes(also)) return `kin${i}`;
  }
}

/**
 * A kafkajs idempotent producer to `id`'s inbound listener sending batches of 10 to `topic` until
 * `stop()`. A send that failed (retries exhausted) leaves its batch's fate unknown: the producer is
 * replaced by a new one (a new producer id) so no later batch reuses the failed one's sequence.
 */
async function produceUntil(node: TestServer, id: number, topic: string, stop: () => boolean, out: KafkaOutcome): Promise<void> {
  const connect = async () => {
    const producer = new Kafka({
      clientId: 'nodeloss-kafka-in', brokers: [`127.0.0.1:${kinPorts[id]}`], logLevel: logLevel.NOTHING,
      sasl: { mechanism: 'plain', username: node.projectId, password: node.keys.write },
      retry: { retries: 60, initialRetryTime: 200, maxRetryTime: 1000 }, connectionTimeout: 2000,
    }).producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    return producer;
  };
  let producer = await connect();
  for (let n = 0; !stop(); n += 10) {
    const ids = Array.from({ length: 10 }, (_, j) => `${topic}-${n + j}`);
    out.sends++;
    try {
      await producer.send({ topic, acks: -1, messages: ids.map((eventId) => ({ value: JSON.stringify({ id: eventId, writer: 'kafkajs' }) })) });
      out.acked.push(...ids);
    } catch {
      out.failed.push(...ids);
      await producer.disconnect().catch(() => undefined);
      producer = await connect();
    }
  }
  await producer.disconnect();
}

const ackedOf = (w: Writers) => [...w.outcomes.values()].reduce((n, o) => n + o.acked.length, 0);

t.test('a node and a broker killed mid-ingest: replicas answer, every acknowledged event counted once on every node', async (t) => {
  nodes[0] = await startServer({ args: argsOf(0) });
  // The same organization and project on every node, through the shared metadata topic.
  await Promise.all([1, 2].map(async (id) => {
    nodes[id] = await startServer({ orgKey: nodes[0]!.orgKey, args: argsOf(id) });
  }));
  await Promise.all(nodes.map((node) => caughtUp(node)));
  mark(t, 'three nodes up');
  const [a, b] = nodes as [TestServer, TestServer, TestServer];
  const collections = pickCollections(a.projectId);

  const admin = new Kafka({ clientId: 'tally-test', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: TOPIC, configNames: ['retention.ms', 'min.insync.replicas'] }],
  });
  const config = Object.fromEntries(resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
  t.same(config, { 'retention.ms': '-1', 'min.insync.replicas': '2' }, 'the topic keeps every record; two copies per write');

  // The peers answer their probe (every 2 s) once they are up.
  t.ok(await eventually(async () => (await client(a.url).get('/health')).body.cluster.peers_up.length === 2, 10_000));
  const health = await client(a.url).get('/health');
  t.same(health.body, { status: 'ok', cluster: {
    node_id: 0, owned_partitions: assignment.ownedBy(0), caught_up: true, peers_up: [1, 2], peers_down: [],
  } }, '/health: the node, its partitions, its peers');

  const w: Writers = { stop: false, outcomes: new Map(collections.map((c) => [c.name, emptyOutcome()])), running: [] };
  startWriters(collections, nodes, 'a', w);
  const kinTopic = kafkaCollection(a.projectId, 1);
  const kin: KafkaOutcome = { acked: [], failed: [], sends: 0 };
  w.running.push(produceUntil(b, 1, kinTopic, () => w.stop, kin));
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  await nodes[2]!.kill9();
  await new Promise((resolve) => setTimeout(resolve, 500));
  await kafka.killNode(3);
  mark(t, 'node 2 and broker 3 killed');
  const ackedAtKill = ackedOf(w);
  const kinAtKill = kin.acked.length;

  // Node 2 and broker 3 down: the survivors answer every collection and take writes.
  for (const node of [a, b]) {
    t.ok(await eventually(async () => (await metrics(node, 'tally_cluster_node_up')).get('tally_cluster_node_up{node="2"}') === 0, 10_000),
      'a killed peer shows 0 in /metrics');
    t.same((await client(node.url).get('/health')).body.cluster.peers_down, [2], 'and is down in /health');
    for (const { name } of collections) {
      const count = await countOf(node, name);
      t.ok(count > 0, `${name} (stored on ${assignment.ownersOf(assignment.partitionOf(`${a.projectId}/${name}`)).map((m) => m.id)}) answers from node ${node.url.slice(-5)}: ${count}`);
    }
  }
  t.ok(await eventually(async () => ackedOf(w) >= ackedAtKill + 200, 45_000), `writes through the survivors acknowledged (${ackedOf(w) - ackedAtKill} since the kills)`);
  t.ok(await eventually(async () => kin.acked.length >= kinAtKill + 50, 45_000),
    `the kafkajs producer's sends acknowledged since the kills (${kin.acked.length - kinAtKill} events)`);

  mark(t, 'writes acknowledged by the survivors');
  const restarted = nodes[2]!.restart(argsOf(2)).then((node) => (nodes[2] = node));
  await kafka.startNode(3);
  await restarted;
  mark(t, 'broker 3 and node 2 restarted');
  startWriters(collections, [nodes[2]], 'c', w);
  await caughtUp(nodes[2]);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  w.stop = true;
  await Promise.all(w.running);

  // Events a token carries whose fate is unknown (503, no answer): retried until acknowledged.
  for (const { name } of collections.filter((c) => c.tokens)) {
    const out = w.outcomes.get(name)!;
    await settle(b, name, [...out.refused, ...out.unanswered]);
    out.acked.push(...out.refused.splice(0), ...out.unanswered.splice(0));
  }
  for (const [id, node] of nodes.entries()) t.ok(await eventually(() => noLag(node, id), 30_000), `node ${id}: every partition's lag is 0`);

  mark(t, 'unknown fates retried, lags 0');
  const expected = new Map<string, number>();
  for (const { name, tokens } of collections) {
    const out = w.outcomes.get(name)!;
    const seen = await storedIds(a, name);
    t.same(out.acked.filter((id) => !seen.has(id)), [], `${name}: no acknowledged event lost`);
    t.same([...seen].filter(([, n]) => n > 1).map(([id]) => id), [], `${name}: none twice`);
    const sent = new Set([...out.acked, ...out.refused, ...out.unanswered]);
    t.same([...seen.keys()].filter((id) => !sent.has(id)), [], `${name}: nothing never sent`);
    if (tokens) t.equal(seen.size, out.acked.length, `${name}: exactly the acknowledged events`);
    expected.set(name, seen.size);
    t.comment(`${name}: ${out.acked.length} acknowledged, ${out.refused.length} refused, ${out.unanswered.length} unanswered, ${seen.size} stored`);
  }
  const countsEverywhere = async () => {
    for (const node of nodes) for (const { name } of collections) if (await countOf(node, name) !== expected.get(name)) return false;
    return true;
  };
  t.ok(await countsEverywhere(), 'every collection asked of every node counts the same');

  // The kafkajs producer's events, asked of every node: every acknowledged one once, none twice.
  t.ok(kin.acked.length >= 100, `the kafkajs producer's sends were acknowledged (${kin.acked.length} events)`);
  const kinSent = new Set([...kin.acked, ...kin.failed]);
  for (const [id, node] of nodes.entries()) {
    const seen = await storedIds(node, kinTopic);
    t.same(kin.acked.filter((e) => !seen.has(e)), [], `${kinTopic} asked of node ${id}: no acknowledged kafkajs event lost`);
    t.same([...seen].filter(([, n]) => n > 1).map(([e]) => e), [], `${kinTopic} asked of node ${id}: none twice`);
    t.same([...seen.keys()].filter((e) => !kinSent.has(e)), [], `${kinTopic} asked of node ${id}: nothing never sent`);
    if (id === 0) t.comment(`${kinTopic}: ${kin.sends} sends, ${kin.acked.length} events acknowledged, ${kin.failed.length} failed, ${seen.size} stored`);
  }

  // A retry of every acknowledged token-carrying event, through another node: nothing counted twice.
  for (const { name } of collections.filter((c) => c.tokens)) await settle(nodes[2], name, w.outcomes.get(name)!.acked);
  for (const [id, node] of nodes.entries()) t.ok(await eventually(() => noLag(node, id), 30_000), `node ${id}: the retries were read`);
  t.ok(await countsEverywhere(), 'the retries of acknowledged events changed no count');
  mark(t, 'retries of acknowledged events checked');
  for (const node of nodes) {
    const up = await metrics(node, 'tally_cluster_node_up');
    t.same([...up.values()], [1, 1, 1], 'every node up again');
  }
  if (!t.passing()) for (const node of nodes) t.comment(node.stderr().slice(-3000));
});

t.test('a node wiped is rebuilt from the topic and answers the same rows', async (t) => {
  const node = nodes[1]!;
  t.equal(await node.stop(), 0);
  for (const entry of readdirSync(node.dataDir)) rmSync(join(node.dataDir, entry), { recursive: true, force: true });
  nodes[1] = await node.restart(argsOf(1));
  await caughtUp(nodes[1]);
  mark(t, 'node 1 rebuilt');
  t.ok(await eventually(() => noLag(nodes[1]!, 1), 20_000), 'its lag goes to 0');
  const collections = pickCollections(nodes[1].projectId).filter((c) => c.owners.includes(1));
  t.ok(collections.length >= 4);
  for (const { name, owners } of collections) {
    const other = nodes[owners.find((id) => id !== 1)!]!;
    const rebuilt = await rows(nodes[1], name);
    t.ok(rebuilt.length > 0);
    t.same(rebuilt, await rows(other, name), `${name}: the rebuilt node's rows are its replica's (svc ids and all)`);
  }
});

t.test('records deleted from Kafka while a node was away: the gap is logged and the node reads on', async (t) => {
  const [a] = nodes as [TestServer];
  const name = pickCollections(a.projectId).find((c) => c.owners.includes(1) && c.owners.includes(0))!.name;
  const partition = assignment.partitionOf(`${a.projectId}/${name}`);
  t.equal(await nodes[1]!.stop(), 0);
  const before = await countOf(a, name);
  const out = emptyOutcome();
  let rounds = 0;
  await writeUntil(a, name, 'gone', 10, () => rounds++ >= 2, out);
  t.equal(out.acked.length, 20);
  t.ok(await eventually(async () => (await countOf(a, name)) === before + 20, 20_000));
  const admin = new Kafka({ clientId: 'tally-test', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const end = Number((await admin.fetchTopicOffsets(TOPIC)).find((o) => o.partition === partition)!.high);
  await admin.deleteTopicRecords({ topic: TOPIC, partitions: [{ partition, offset: String(end) }] });

  nodes[1] = await nodes[1]!.restart(argsOf(1));
  await caughtUp(nodes[1]);
  const gap = nodes[1].stderr().split('\n').find((l) => l.includes('records of the events topic are gone before this node stored them'));
  t.ok(gap, 'the gap is logged');
  t.match(JSON.parse(gap!), { level: 'warn', partition, from: end - 20, to: end - 1, records: 20, when: 'at start' });
  t.ok(await eventually(() => noLag(nodes[1]!, 1), 20_000), 'and the node is not behind for records that are gone');
  t.equal(await countOf(nodes[1], name), before, 'a node answers what it has (the gap is not filled)');
  mark(t, 'gap checked');
});
