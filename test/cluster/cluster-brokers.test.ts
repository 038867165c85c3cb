/**
 * Cluster mode on three real Kafka brokers (replication factor 3, min.insync.replicas 2) and one
 * Tally node: with one broker stopped writes are still acknowledged; with a second one stopped
 * they are answered 503 ServiceUnavailableError within the bound (5 s), never acknowledged; once
 * the brokers are back writes are acknowledged again, and every acknowledged event is stored
 * exactly once. Needs Java 17+ and Maven: without them this fails.
 */
import t from 'tap';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client, eventually } from '../helpers/http.js';
import type { TestServer } from '../helpers/server.js';
import { emptyOutcome, startClusterNode, storedIds, writeUntil, type WriteOutcome } from '../helpers/cluster.js';

/** The write bound (server/common/limits.ts CLUSTER_WRITE_TIMEOUT_MS) and what the test allows beyond it. */
const BOUND_MS = 5_000;
const SLACK_MS = 2_000;

let kafka: RealKafka;
let server: TestServer | undefined;
t.before(async () => {
  kafka = await startKafka({ nodes: 3 });
});
t.teardown(async () => {
  if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) await server.stop();
  server?.cleanup();
  await kafka?.stop();
});

/** `rounds` single writes and `rounds` batches of 20, one after the other. */
async function writeSome(node: TestServer, name: string, rounds: number, out: WriteOutcome): Promise<void> {
  let single = 0;
  let batch = 0;
  await Promise.all([
    writeUntil(node, 'events', `${name}-single`, 1, () => single++ >= rounds, out),
    writeUntil(node, 'events', `${name}-batch`, 20, () => batch++ >= rounds, out),
  ]);
}

t.test('one broker down: acknowledged; two down: 503 within the bound; back: acknowledged; exactly once', async (t) => {
  server = await startClusterNode(kafka.bootstrap);
  t.match(server.stdout(), /^tally cluster node=1 topic=tally\.events partitions=12 replication=3 /m);
  const admin = new Kafka({ clientId: 'tally-test', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: 'tally.events', configNames: ['min.insync.replicas'] }],
  });
  t.equal(resources[0]?.configEntries[0]?.configValue, '2', 'min.insync.replicas=2');
  const [meta] = (await admin.fetchTopicMetadata({ topics: ['tally.events'] })).topics;
  t.ok(meta!.partitions.every((p) => p.replicas.length === 3), 'every partition has 3 replicas');
  await admin.disconnect();

  const acked: string[] = [];
  const refused: string[] = [];
  const phase = async (name: string, rounds: number) => {
    const out = emptyOutcome();
    await writeSome(server!, name, rounds, out);
    acked.push(...out.acked);
    refused.push(...out.refused);
    return out;
  };

  const up = await phase('three', 10);
  t.equal(up.acked.length, 10 + 10 * 20, 'three brokers: every write acknowledged');

  await kafka.stopNode(3);
  const one = await phase('two', 10);
  t.equal(one.acked.length, 10 + 10 * 20, 'one broker stopped: every write still acknowledged');
  t.same(one.refused, [], 'none refused');

  await kafka.stopNode(2);
  const two = await phase('one', 2);
  t.equal(two.acked.length, 0, 'two brokers stopped: no write acknowledged');
  t.equal(two.refused.length, 2 + 2 * 20, 'every write answered 503 ServiceUnavailableError');
  t.ok(two.refusalMs.every((ms) => ms <= BOUND_MS + SLACK_MS), `within the bound: ${two.refusalMs.join(', ')} ms`);

  await kafka.startNode(2);
  await kafka.startNode(3);
  const api = client(server.url);
  const back = await eventually(async () => (await api.post(`/3.0/projects/${server!.projectId}/events/probe`, {
    key: server!.keys.write, body: { probe: true },
  })).status === 201, 90_000);
  t.ok(back, 'brokers back: writes are acknowledged again');
  const again = await phase('back', 10);
  t.equal(again.acked.length, 10 + 10 * 20, 'every write acknowledged');

  const found = await eventually(async () => {
    const seen = await storedIds(server!, 'events');
    return acked.every((id) => seen.has(id));
  }, 60_000);
  const seen = await storedIds(server, 'events');
  t.ok(found, 'every acknowledged event is stored');
  t.same(acked.filter((id) => !seen.has(id)), [], 'none missing');
  t.same([...seen].filter(([, n]) => n > 1).map(([id]) => id), [], 'none twice');
  const late = refused.filter((id) => seen.has(id)).length;
  t.comment(`${acked.length} acknowledged, ${refused.length} refused (${late} of them stored after all)`);
  if (t.passing() === false) t.comment(server.stderr().slice(-4000));
});
