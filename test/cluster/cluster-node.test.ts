/**
 * Cluster mode on one real Kafka broker (scripts/kafka.mjs) and one Tally node (`--cluster-brokers
 * --node-id`, a child process): writes over HTTP are produced to `tally.events` and answered once
 * Kafka acknowledged them; the node's consumer stores them (the count query sees exactly what was
 * acknowledged); a kill -9 in the middle of concurrent writers, and a restart, leave every
 * acknowledged event stored exactly once. The lag gauge of /metrics counts what Kafka holds when
 * scraped. Needs Java 17+ and Maven: without them this fails.
 */
import t from 'tap';
import { Kafka, logLevel } from 'kafkajs';
import { createServedTopic, startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ALL_TIME, caughtUp, clusterArgs, countOf, emptyOutcome, startClusterNode, storedIds, writeUntil,
} from '../helpers/cluster.js';
import { notServedYet, untilServed } from '../../server/cluster/served.js';
import { ClusterStatus } from '../../server/cluster/status.js';
import { ConsumedOffsets } from '../../server/cluster/offsets.js';
import { Metrics } from '../../server/common/metrics.js';
import { openEngine } from '../../engine/index.js';

let kafka: RealKafka;
let server: TestServer | undefined;
t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
});
t.teardown(async () => {
  if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) await server.kill9();
  server?.cleanup();
  await kafka?.stop();
});

t.test('writes go through tally.events and are counted once', async (t) => {
  server = await startClusterNode(kafka.bootstrap);
  t.match(server.stdout(), /^tally cluster node=1 topic=tally\.events partitions=12 replication=1 brokers=127\.0\.0\.1:\d+$/m);
  t.match(server.stdout(), /^tally ready http=\S+ kafka_in=off kafka_out=off$/m);
  const api = client(server.url);
  const write = server.keys.write;
  const P = `/3.0/projects/${server.projectId}`;

  // The topic, as this node created it.
  const admin = new Kafka({ clientId: 'tally-test', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const [topic] = (await admin.fetchTopicMetadata({ topics: ['tally.events'] })).topics;
  t.equal(topic?.partitions.length, 12, 'tally.events has 12 partitions');

  // Singles (some concurrent), batches, a refused event, a placeholder and a given timestamp.
  const singles = await Promise.all(Array.from({ length: 40 }, (_, i) =>
    api.post(`${P}/events/clicks`, { key: write, body: { id: `s${i}`, ua: '${svc.user_agent}' }, headers: { 'User-Agent': 'test-agent/1' } })));
  t.ok(singles.every((r) => r.status === 201), 'every single write is acknowledged (201)');
  const batch = await api.post(`${P}/events`, {
    key: write,
    body: {
      clicks: Array.from({ length: 30 }, (_, i) => ({ id: `b${i}` })),
      views: [{ id: 'v0', svc: { timestamp: '2024-03-01T10:00:00Z' } }, { 'bad.name': 1 }],
    },
  });
  t.equal(batch.status, 200);
  t.equal(batch.body.clicks.length, 30);
  t.ok(batch.body.clicks.every((r: { success: boolean }) => r.success));
  t.same(batch.body.views[1], { success: false, error: { name: 'InvalidPropertyNameError', description: 'Property names must not contain ".": "bad.name".' } });
  const refused = await api.post(`${P}/events/clicks`, { key: write, body: { 'bad.name': 1 } });
  t.equal(refused.status, 400, 'an invalid event is refused before Kafka, as on a single node');
  t.equal(refused.body.error_code, 'InvalidPropertyNameError');
  t.equal((await api.post(`${P}/events`, { key: write, body: '[1]' })).body.error_code, 'InvalidBatchError');

  t.ok(await eventually(async () => (await countOf(server!, 'clicks')) === 70, 20_000), 'count = 70 clicks');
  t.equal(await countOf(server, 'views'), 1);
  t.equal((await api.get('/ready')).status, 200, 'ready: caught up with the events topic');
  const views = await api.post(`${P}/queries/extraction`, { key: server.keys.read, body: { event_collection: 'views', timeframe: ALL_TIME } });
  t.equal(views.body.result[0].svc.timestamp, '2024-03-01T10:00:00.000Z', 'the given svc.timestamp is kept');
  const clicks = await api.post(`${P}/queries/extraction`, { key: server.keys.read, body: { event_collection: 'clicks', timeframe: ALL_TIME } });
  const s0 = (clicks.body.result as { id: string; ua?: string; svc: { created_at: string; timestamp: string } }[]).find((e) => e.id === 's0')!;
  t.equal(s0.ua, 'test-agent/1', 'placeholders are filled on the node that took the write');
  t.equal(s0.svc.timestamp, s0.svc.created_at, 'stamped once: svc.timestamp = svc.created_at = the receipt time');
  // Another restart (SIGTERM) reads nothing twice.
  t.equal(await server.stop(), 0, 'SIGTERM exits 0');
  server = await server.restart();
  await caughtUp(server);
  t.equal(await countOf(server, 'clicks'), 70, 'still 70 after a restart');
  t.match(server.stderr(), /"records_behind":0/, 'the restart resumes where the store is');
});

t.test('kill -9 mid-stream: every acknowledged event exactly once', async (t) => {
  const node = server!;
  const out = emptyOutcome();
  let stop = false;
  const writers = [
    ...Array.from({ length: 4 }, (_, i) => writeUntil(node, 'crash', `single${i}`, 1, () => stop, out)),
    ...Array.from({ length: 2 }, (_, i) => writeUntil(node, 'crash', `batch${i}`, 100, () => stop, out)),
  ];
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  await node.kill9();
  await Promise.all(writers);
  stop = true;
  t.ok(out.acked.length > 100, `${out.acked.length} events acknowledged before the crash`);
  t.same(out.refused, [], 'none was refused while Kafka was up');

  server = await node.restart();
  await caughtUp(server);
  let seen = await storedIds(server, 'crash');
  t.same(out.acked.filter((id) => !seen.has(id)), [], 'no acknowledged event is lost');
  t.same([...seen].filter(([, n]) => n > 1).map(([id]) => id), [], 'no event is stored twice');
  t.ok(seen.size >= out.acked.length, `${seen.size} stored ≥ ${out.acked.length} acknowledged (in flight at the kill: ${out.unanswered.length})`);

  // Writes go on after the crash; a second kill -9 right after them, then a clean stop.
  const more = emptyOutcome();
  let written = 0;
  await writeUntil(server, 'crash', 'after', 50, () => (written += 1) > 5, more);
  t.equal(more.acked.length, 250, 'the restarted node takes writes');
  await server.kill9();
  server = await server.restart();
  await caughtUp(server);
  seen = await storedIds(server, 'crash');
  t.same([...out.acked, ...more.acked].filter((id) => !seen.has(id)), [], 'still none lost');
  t.same([...seen].filter(([, n]) => n > 1).map(([id]) => id), [], 'still none twice');
  t.equal(await countOf(server, 'clicks'), 70, 'the first test\'s events are untouched');
  t.equal(await server.stop(), 0);
});

t.test('no flush before a kill -9: the offsets come back from the WAL records\' tags', async (t) => {
  // Flushes (which write cluster-offsets.json) an hour apart: what the node read is only in its WAL.
  const slow = clusterArgs(kafka.bootstrap, 1, 3_600_000);
  server = await server!.restart(slow);
  await caughtUp(server);
  const offsetsFile = () => JSON.parse(readFileSync(join(server!.dataDir, 'cluster-offsets.json'), 'utf8'))
    .topics['tally.events'] as Record<string, number>;
  const before = offsetsFile();
  const out = emptyOutcome();
  let rounds = 0;
  await writeUntil(server, 'wal', 'w', 25, () => rounds++ >= 8, out);
  t.equal(out.acked.length, 200);
  t.ok(await eventually(async () => (await countOf(server!, 'wal')) === 200, 20_000), 'stored');
  t.same(offsetsFile(), before, 'no flush wrote the offsets file meanwhile');
  await server.kill9();
  server = await server.restart(slow);
  await caughtUp(server);
  t.match(server.stderr(), /"records_behind":0/, 'the WAL\'s tags said how far every partition was stored');
  t.notSame(offsetsFile(), before, 'and were written to the offsets file at start');
  const seen = await storedIds(server, 'wal');
  t.equal(seen.size, 200);
  t.ok([...seen.values()].every((n) => n === 1), 'each once');
  t.equal(await server.stop(), 0);
});

t.test('the lag gauge counts what Kafka holds when /metrics is scraped, not at the last probe', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tally-lag-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const topic = 'lag-probe';
  const kafkaClient = new Kafka({ brokers: kafka.bootstrap, logLevel: logLevel.NOTHING });
  const admin = kafkaClient.admin();
  await admin.connect();
  await createServedTopic(admin, { topic, numPartitions: 1, replicationFactor: 1 });
  await admin.disconnect();
  const engine = await openEngine({ dataDir: join(dir, 'store'), queryWorkers: 0 });
  const offsets = new ConsumedOffsets(dir);
  const status = new ClusterStatus({ kafka: kafkaClient, topic, self: 0, members: [], owned: [0], offsets, caughtUp: () => true });
  const metrics = new Metrics(engine);
  metrics.addCluster(status);
  const lag = async () => Number(/^tally_cluster_partition_lag\{partition="0"\} (\d+)$/m.exec(await metrics.text())?.[1] ?? -1);
  status.start();
  t.ok(await eventually(async () => (await lag()) === 0, 10_000), 'an empty partition: lag 0');
  const producer = kafkaClient.producer();
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: Array.from({ length: 5 }, (_, i) => ({ value: String(i) })) });
  await producer.disconnect();
  // Right after the write, well within a probe interval: a barrier on lag 0 must not pass yet.
  t.equal(await lag(), 5, 'five records acknowledged by Kafka, none stored: lag 5 at once');
  offsets.advance(topic, 0, 2);
  t.equal(await lag(), 2, 'three stored: lag 2');
  offsets.advance(topic, 0, 4);
  t.equal(await lag(), 0, 'all stored: lag 0');
  await status.close();
  await engine.close();
});

t.test('a cluster that does not answer stops the start with one sentence', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-test-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const failed = await startServer({ dataDir, args: ['--cluster-brokers', '127.0.0.1:1', '--node-id', '1'] }).then(
    (s) => { void s.kill9(); return ''; }, (error: Error) => error.message);
  t.match(failed, /server exited with 1 before ready/);
  t.match(failed, /tally: cannot use the Kafka cluster at 127\.0\.0\.1:1 \(topic tally\.events\): Connection error/);
});

t.test('a topic not served yet: start-up asks again instead of stopping', async (t) => {
  // What a node started the moment another created the topics meets on a 3-broker cluster, made
  // certain here: the topic appears a moment after the subscribe is first asked.
  const kafkaClient = new Kafka({ clientId: 'tally-test-served', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const topic = `not-served-yet-${Date.now()}`;
  const bare = kafkaClient.consumer({ groupId: `${topic}-bare`, allowAutoTopicCreation: false, retry: { retries: 0 } });
  await bare.connect();
  t.teardown(() => bare.disconnect());
  const thrown = await bare.subscribe({ topic, fromBeginning: true }).then(() => null, (error: Error) => error);
  t.ok(thrown !== null && notServedYet(thrown), `kafkajs throws on a topic not served: ${thrown?.message}`);

  const consumer = kafkaClient.consumer({ groupId: `${topic}-served`, allowAutoTopicCreation: false, retry: { retries: 0 } });
  await consumer.connect();
  t.teardown(() => consumer.disconnect());
  const admin = kafkaClient.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  let calls = 0;
  const subscribed = untilServed(() => {
    calls++;
    return consumer.subscribe({ topic, fromBeginning: true });
  });
  await new Promise((resolve) => setTimeout(resolve, 700));
  await createServedTopic(admin, { topic, numPartitions: 1 });
  await subscribed;
  t.ok(calls > 1, `subscribed once the topic was served (${calls} tries)`);

  // Anything else is not waited out.
  const other = Object.assign(new Error('denied'), { type: 'TOPIC_AUTHORIZATION_FAILED' });
  await t.rejects(untilServed(() => Promise.reject(other)), { message: 'denied' });
  t.notOk(notServedYet(other));
});
