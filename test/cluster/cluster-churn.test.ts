/**
 * Brokers killed again and again under load: three Kafka brokers (RF 3, min.insync.replicas 2) and
 * two Tally nodes storing every partition (R = 2). Writers send single events and batches through
 * both nodes, half the collections with uniqueness tokens, while one broker after another is killed
 * with -9 and started again. Afterwards each node, asked alone, stores every acknowledged event,
 * and none twice. Before each kafkajs send held one partition (server/cluster/producer.ts), a
 * send spanning partitions on two brokers could be acknowledged without one partition's messages,
 * or send a partition's messages twice, when a leader moved (tulios/kafkajs#1798): this file lost
 * 21 acknowledged events on both nodes in one of three runs, and stored a batch twice in a CI run
 * with only Kafka's answer checked. Needs Java 17+ and Maven: without them this fails.
 */
import t from 'tap';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { caughtUp, clusterArgs, emptyOutcome, stopAll, settle, storedIds, type WriteOutcome, writeUntil } from '../helpers/cluster.js';

const SECRET = 'a-test-cluster-secret-0123456789';
const ROUNDS = 6;
let kafka: RealKafka;
const nodes: TestServer[] = [];
t.teardown(() => stopAll(nodes, kafka));

/** True when every partition `node` stores has lag 0 in its /metrics. */
async function noLag(node: TestServer): Promise<boolean> {
  const text = (await client(node.url).get('/metrics', { key: node.orgKey })).text;
  const lags = text.split('\n').filter((line) => line.startsWith('tally_cluster_partition_lag{'));
  return lags.length > 0 && lags.every((line) => line.endsWith(' 0'));
}

t.test('brokers killed one after another: every acknowledged event stored once on each replica', async (t) => {
  kafka = await startKafka({ nodes: 3 });
  const ports = [await freePort(), await freePort()];
  const list = [0, 1].map((id) => `${id}=http://127.0.0.1:${ports[id]}`).join(',');
  const argsOf = (id: number) => [...clusterArgs(kafka.bootstrap, id), '--http-port', String(ports[id]),
    '--cluster-nodes', list, '--cluster-replicas', '2', '--cluster-secret', SECRET];
  nodes[0] = await startServer({ args: argsOf(0) });
  nodes[1] = await startServer({ orgKey: nodes[0].orgKey, args: argsOf(1) });
  await Promise.all(nodes.map((node) => caughtUp(node)));

  const collections = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'].map((name, i) => ({ name, tokens: i % 2 === 0 }));
  const outcomes = new Map<string, WriteOutcome>(collections.map((c) => [c.name, emptyOutcome()]));
  let stop = false;
  const running: Promise<void>[] = [];
  collections.forEach(({ name, tokens }, i) => {
    // A single-event writer and two batch writers per collection, over both nodes: a node's send
    // to Kafka then holds several partitions' messages.
    for (const [k, size] of [[0, 1], [1, 20], [2, 20]] as const) {
      const node = nodes[(i + k) % 2]!;
      running.push(writeUntil(node, name, `${name}-${k}-${node.url.slice(-5)}`, size, () => stop, outcomes.get(name)!, { tokens }));
    }
  });
  for (let round = 0; round < ROUNDS; round++) {
    const broker = 1 + (round % 3);
    await new Promise((resolve) => setTimeout(resolve, 1_500 + Math.random() * 1_500));
    await kafka.killNode(broker);
    await new Promise((resolve) => setTimeout(resolve, 2_000 + Math.random() * 2_000));
    await kafka.startNode(broker);
    t.comment(`round ${round}: broker ${broker} killed and started again`);
  }
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  stop = true;
  await Promise.all(running);
  for (const { name } of collections.filter((c) => c.tokens)) {
    const out = outcomes.get(name)!;
    await settle(nodes[0]!, name, [...out.refused, ...out.unanswered]);
    out.acked.push(...out.refused.splice(0), ...out.unanswered.splice(0));
  }
  for (const [id, node] of nodes.entries()) t.ok(await eventually(() => noLag(node), 60_000), `node ${id}: every partition's lag is 0`);

  for (const { name, tokens } of collections) {
    const out = outcomes.get(name)!;
    for (const [id, node] of nodes.entries()) {
      // Each node stores every partition, so each answers from its own store.
      const seen = await storedIds(node, name);
      const lost = out.acked.filter((e) => !seen.has(e));
      t.same(lost, [], `${name} on node ${id}: no acknowledged event lost (${out.acked.length} acknowledged, ${lost.length} missing)`);
      t.same([...seen].filter(([, n]) => n > 1).map(([e]) => e), [], `${name} on node ${id}: none twice`);
      if (tokens) t.equal(seen.size, out.acked.length, `${name} on node ${id}: exactly the acknowledged events`);
    }
  }
});
