/**
 * Kafka-protocol produce into a cluster node: one real Kafka broker and one Tally node
 * (`--cluster-brokers --node-id --kafka-in-port`, a child process). A produce to the node's
 * inbound listener goes through the cluster write path (checked, stamped, produced to
 * `tally.events` with acks = all) and is answered once Kafka acknowledged it; invalid records get
 * the single-node errors; an idempotent batch retried after a kill -9 (also when the producer
 * state file lost it) is stored once, by its uniqueness tokens; with the broker stopped a produce
 * answers REQUEST_TIMED_OUT (7) and nothing acknowledged is lost. Needs Java 17+ and Maven.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Kafka, logLevel } from 'kafkajs';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { ApiKey } from '../../server/kafka/protocol/api-keys.js';
import { encodeRecordBatch } from '../../server/kafka/protocol/record-batch.js';
import { RawClient } from '../helpers/kafka/raw-client.js';
import { available, run } from '../helpers/kafka/run.js';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { ALL_TIME, caughtUp, clusterArgs, countOf, storedIds } from '../helpers/cluster.js';

let kafka: RealKafka;
let port: number;
let server: TestServer;
const alive = (s: TestServer) => s.child.exitCode === null && s.child.signalCode === null;

t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
  port = await freePort();
  server = await startServer({ args: [...clusterArgs(kafka.bootstrap), '--kafka-in-port', String(port)] });
});
t.teardown(async () => {
  if (server !== undefined && alive(server)) await server.kill9();
  server?.cleanup();
  await kafka?.stop();
});

/** kill -9, then the same node again on the same data dir and ports, caught up with the topic. */
async function crashAndRestart(): Promise<void> {
  await server.kill9();
  server = await server.restart([...clusterArgs(kafka.bootstrap), '--kafka-in-port', String(port)]);
  await caughtUp(server);
}

async function login(): Promise<RawClient> {
  const c = await RawClient.connect(port);
  await c.authenticate(server.projectId, server.keys.write);
  return c;
}

interface PartitionAnswer {
  error_code: number; base_offset: number; error_message: string | null;
  record_errors: { batch_index: number; batch_index_error_message: string | null }[];
}

/** Produce v8 of raw record values to partition 0 of `topic`; idempotent with `producerId` >= 0. */
async function produce(
  c: RawClient, topic: string, values: string[], idem: { producerId: number; baseSequence: number } = { producerId: -1, baseSequence: -1 },
): Promise<PartitionAnswer> {
  const records = encodeRecordBatch({
    baseOffset: 0, baseTimestamp: Date.now(), maxTimestamp: Date.now(), producerId: idem.producerId,
    producerEpoch: idem.producerId >= 0 ? 0 : -1, baseSequence: idem.baseSequence,
    records: values.map((value, i) => ({ offsetDelta: i, timestampDelta: 0, key: null, value: Buffer.from(value) })),
  });
  c.send(ApiKey.Produce, 8, {
    transactional_id: null, acks: -1, timeout_ms: 30_000, topic_data: [{ name: topic, partition_data: [{ index: 0, records }] }],
  });
  return (await c.response(ApiKey.Produce, 8)).body.responses[0].partition_responses[0];
}

async function initProducerId(c: RawClient): Promise<number> {
  c.send(ApiKey.InitProducerId, 1, { transactional_id: null, transaction_timeout_ms: 60000 });
  return (await c.response(ApiKey.InitProducerId, 1)).body.producer_id;
}

const seqs = (topic: string, from: number, n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ topic, n: from + i }));

/**
 * Waits until `collection` counts at least `n` (asking twice a second: queries are rate limited),
 * then answers its count (a repeat would show above n).
 */
async function settledCount(collection: string, n: number, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let count = await countOf(server, collection);
  while (count < n && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    count = await countOf(server, collection);
  }
  return count;
}

function kafkajsProducer() {
  return new Kafka({
    clientId: 'cluster-kafka-in', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING,
    sasl: { mechanism: 'plain', username: server.projectId, password: server.keys.write },
    retry: { retries: 60, initialRetryTime: 200, maxRetryTime: 1000 }, connectionTimeout: 2000,
  }).producer({ idempotent: true, maxInFlightRequests: 1 });
}

t.test('the inbound listener runs in cluster mode; a kafkajs idempotent producer stores each event once', async (t) => {
  t.match(server.stdout(), new RegExp(`^tally ready http=\\S+ kafka_in=127\\.0\\.0\\.1:${port} kafka_out=off$`, 'm'));
  const producer = kafkajsProducer();
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const N = 200;
  for (let i = 0; i < N; i += 20) {
    const answer = await producer.send({
      topic: 'kin_clicks', acks: -1, messages: Array.from({ length: 20 }, (_, j) => ({ value: JSON.stringify({ id: `k${i + j}`, ua: '${svc.user_agent}' }) })),
    });
    t.equal(answer[0]!.errorCode, 0);
    if (i === 0) t.equal(answer[0]!.baseOffset, '-1', 'base offset -1: the store\'s offset is not known when Kafka acknowledges');
  }
  t.equal(await settledCount('kin_clicks', N), N, `${N} events, each stored once`);
  const ids = await storedIds(server, 'kin_clicks');
  t.ok([...ids.values()].every((n) => n === 1) && ids.size === N, 'every id once');

  const extraction = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/extraction`, {
    key: server.keys.read, body: { event_collection: 'kin_clicks', timeframe: ALL_TIME, latest: 1 },
  });
  const event = extraction.body.result[0];
  t.match(event.svc.uniqueness_token, /^kafka:1:\d+:0:\d+:20:\d+$/, 'an idempotent batch\'s events carry tokens naming node, producer and sequence');
  t.equal(event.ua, 'cluster-kafka-in', 'placeholders are filled (the user agent is the client id)');
  t.match(event.svc, { created_at: String, timestamp: String, id: String }, 'stamped and stored');

  // A token the client gave is kept; a plain (non-idempotent) produce gets none.
  const c = await login();
  t.teardown(() => c.socket.destroy());
  const pid = await initProducerId(c);
  const own = await produce(c, 'kin_own', [JSON.stringify({ svc: { uniqueness_token: 'mine-1' } })], { producerId: pid, baseSequence: 0 });
  const plain = await produce(c, 'kin_own', [JSON.stringify({ plain: true })]);
  t.same([own.error_code, plain.error_code], [0, 0]);
  t.equal(await settledCount('kin_own', 2), 2);
  const owned = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/extraction`, {
    key: server.keys.read, body: { event_collection: 'kin_own', timeframe: ALL_TIME },
  });
  const tokens = (owned.body.result as { svc: { uniqueness_token?: string } }[]).map((e) => e.svc.uniqueness_token ?? null).sort();
  t.same(tokens, ['mine-1', null]);
});

t.test('invalid records get the single-node errors and nothing of their batch is produced', async (t) => {
  const c = await login();
  t.teardown(() => c.socket.destroy());
  const notJson = await produce(c, 'kin_bad', ['{"ok":1}', 'not json']);
  t.equal(notJson.error_code, 87, 'INVALID_RECORD');
  t.equal(notJson.record_errors.length, 1);
  t.equal(notJson.record_errors[0]!.batch_index, 1);
  t.match(notJson.record_errors[0]!.batch_index_error_message, /^The record value is not valid JSON/);
  const badName = await produce(c, 'kin_bad', ['{"ok":2}', '{"bad.name":1}']);
  t.same(badName.record_errors, [{ batch_index: 1, batch_index_error_message: 'Property names must not contain ".": "bad.name".' }]);
  t.equal(badName.error_code, 87);
  const badSvc = await produce(c, 'kin_bad', ['{"svc":{"nope":1}}']);
  t.equal(badSvc.error_code, 87);
  t.match(badSvc.error_message, /"svc\.nope" is not a property clients may set/);
  const badTopic = await produce(c, '_kin_bad', ['{"ok":3}']);
  t.equal(badTopic.error_code, 17, 'INVALID_TOPIC_EXCEPTION for a name no collection may have');
  const good = await produce(c, 'kin_bad', ['{"ok":4}']);
  t.equal(good.error_code, 0);
  t.equal(await settledCount('kin_bad', 1), 1, 'only the good batch is stored');
});

t.test('an idempotent batch retried after kill -9, its producer state lost, is stored once', async (t) => {
  // The crash between Kafka's acknowledgement and the producer state file's fsync, made
  // deterministic: the batch is acknowledged, the node killed, and the state file's batch lines
  // cut off as if never written. Nothing on the node recognises the retry: its tokens do.
  const c = await login();
  const producerId = await initProducerId(c);
  const a = await produce(c, 'kin_crash', seqs('kin_crash', 0, 3), { producerId, baseSequence: 0 });
  t.same([a.error_code, a.base_offset], [0, -1]);
  const retryAlive = await produce(c, 'kin_crash', seqs('kin_crash', 0, 3), { producerId, baseSequence: 0 });
  t.same([retryAlive.error_code, retryAlive.base_offset], [0, -1], 'a retry while the node runs is answered from the producer state');
  c.socket.destroy();
  await server.kill9();
  const stateFile = join(server.dataDir, 'kafka-producer-state.log');
  const lines = readFileSync(stateFile, 'utf8').split('\n');
  t.ok(lines.some((line) => line.startsWith('{"b":')), 'the batch line was in the state file');
  writeFileSync(stateFile, lines.filter((line) => !line.startsWith('{"b":')).join('\n'));
  server = await server.restart([...clusterArgs(kafka.bootstrap), '--kafka-in-port', String(port)]);
  await caughtUp(server);

  const again = await login();
  t.teardown(() => again.socket.destroy());
  const retry = await produce(again, 'kin_crash', seqs('kin_crash', 0, 3), { producerId, baseSequence: 0 });
  t.equal(retry.error_code, 0, 'the retry is acknowledged');
  const next = await produce(again, 'kin_crash', seqs('kin_crash', 3, 1), { producerId, baseSequence: 3 });
  t.equal(next.error_code, 0);
  // The next batch is behind the retry in the same partition: once it is stored, so is the retry.
  t.equal(await settledCount('kin_crash', 4), 4, 'four events, none twice');
});

t.test('a kafkajs idempotent producer sending across kill -9 of the node stores each event once', async (t) => {
  const producer = kafkajsProducer();
  await producer.connect();
  const total = 400;
  let acked = 0;
  const sending = (async () => {
    for (let i = 0; i < total; i += 10) {
      await producer.send({ topic: 'kin_kill', acks: -1, messages: Array.from({ length: 10 }, (_, j) => ({ value: JSON.stringify({ id: `x${i + j}` }) })) });
      acked += 10;
    }
  })();
  for (let crash = 0; crash < 2; crash++) {
    const before = acked;
    await eventually(async () => acked >= before + 30, 60_000);
    await crashAndRestart();
  }
  await sending;
  await producer.disconnect();
  t.equal(await settledCount('kin_kill', total), total, `${total} events, none stored twice`);
  const ids = await storedIds(server, 'kin_kill');
  t.ok(ids.size === total && [...ids.values()].every((n) => n === 1), 'every id exactly once');
});

t.test('kcat -P into the cluster node', { skip: available('kcat', ['-V']) ? false : 'kcat is not installed' }, async (t) => {
  const out = await run('kcat', ['-P', '-b', `127.0.0.1:${port}`, '-X', 'security.protocol=SASL_PLAINTEXT', '-X', 'sasl.mechanisms=PLAIN',
    '-X', `sasl.username=${server.projectId}`, '-X', `sasl.password=${server.keys.write}`, '-X', 'enable.idempotence=true',
    '-t', 'kin_kcat', '-z', 'zstd'], seqs('kin_kcat', 0, 25).join('\n') + '\n', 40_000);
  t.equal(out.code, 0, out.stderr);
  t.equal(await settledCount('kin_kcat', 25), 25);
});

t.test('with the broker stopped a produce answers REQUEST_TIMED_OUT; nothing acknowledged is lost', async (t) => {
  const c = await login();
  t.teardown(() => c.socket.destroy());
  const producerId = await initProducerId(c);
  t.equal((await produce(c, 'kin_down', seqs('kin_down', 0, 5), { producerId, baseSequence: 0 })).error_code, 0);
  await kafka.stopNode(1);
  const started = Date.now();
  const refused = await produce(c, 'kin_down', seqs('kin_down', 5, 5), { producerId, baseSequence: 5 });
  t.comment(`answered in ${Date.now() - started} ms`);
  t.equal(refused.error_code, 7, 'REQUEST_TIMED_OUT, a retriable error');
  t.match(refused.error_message, /Kafka did not acknowledge the write/);
  await kafka.startNode(1);
  // The client's retry: the same batch again until it is acknowledged.
  let retried: PartitionAnswer = refused;
  for (let attempt = 0; attempt < 30 && retried.error_code !== 0; attempt++) {
    retried = await produce(c, 'kin_down', seqs('kin_down', 5, 5), { producerId, baseSequence: 5 });
  }
  t.equal(retried.error_code, 0, 'the retry is acknowledged once the broker is back');
  t.equal((await produce(c, 'kin_down', seqs('kin_down', 10, 1), { producerId, baseSequence: 10 })).error_code, 0);
  const settled = await settledCount('kin_down', 11);
  if (settled !== 11) {
    const r = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/count`, {
      key: server.keys.read, body: { event_collection: 'kin_down', timeframe: ALL_TIME },
    });
    t.comment(r.status, r.text, (await client(server.url).get('/health')).text, server.stderr().slice(-3000));
  }
  t.equal(settled, 11, 'every acknowledged event once, the refused-then-retried batch once');
});
