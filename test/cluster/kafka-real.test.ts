/**
 * Against a real Apache Kafka (scripts/kafka.mjs, one KRaft node): kafkajs creates a topic,
 * produces and consumes, so the broker itself is known to work; then Tally runs with
 * `--kafka-bridge BROKERS` and must store what is produced to the external topic (checked with the
 * HTTP count query) and produce the enriched events back to `enriched.<collection>`.
 * Needs Java 17+ and Maven: without them this fails, saying what to install.
 */
import t from 'tap';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { createServedTopic, startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { startServer } from '../helpers/server.js';
import { client, eventually } from '../helpers/http.js';

process.env['KAFKAJS_NO_PARTITIONER_WARNING'] = '1';

let kafka: RealKafka;
t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
});
t.teardown(async () => {
  await kafka?.stop();
});

const clientFor = () => new Kafka({ clientId: 'tally-test', brokers: kafka.bootstrap, logLevel: logLevel.NOTHING });

/** Reads `count` records of `topic` from its start with a new consumer group. */
async function consumeAll(topic: string, count: number, timeoutMs = 30_000) {
  const consumer: Consumer = clientFor().consumer({ groupId: `test-${topic}-${Date.now()}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  const got: { key: string | null; value: string }[] = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${got.length} of ${count} records of ${topic} in time`)), timeoutMs);
      void consumer.run({
        eachMessage: async ({ message }) => {
          got.push({ key: message.key?.toString() ?? null, value: message.value?.toString() ?? '' });
          if (got.length >= count) {
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return got;
}

t.test('the real broker: create a topic, produce, consume', async (t) => {
  const admin = clientFor().admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const { brokers } = await admin.describeCluster();
  t.equal(brokers.length, 1, `one broker (Kafka ${kafka.version})`);
  t.ok(await createServedTopic(admin, { topic: 'smoke', numPartitions: 2 }));
  t.ok((await admin.listTopics()).includes('smoke'));

  const producer = clientFor().producer();
  await producer.connect();
  const sent = await producer.send({ topic: 'smoke', messages: ['a', 'b', 'c', 'd'].map((v) => ({ key: v, value: v })) });
  await producer.disconnect();
  t.equal(sent.reduce((n, r) => n + (r.errorCode === 0 ? 1 : 0), 0), sent.length, 'every partition accepted');

  const got = await consumeAll('smoke', 4);
  t.same(got.map((r) => r.value).sort(), ['a', 'b', 'c', 'd'], 'consumed what was produced');
});

t.test('--kafka-bridge: external topic → Tally → enriched topic', async (t) => {
  const admin = clientFor().admin();
  await admin.connect();
  // The bridge subscribes by pattern when it starts, so the inbound topic exists before Tally does.
  await createServedTopic(admin, { topic: 'clicks', numPartitions: 2 });
  await admin.disconnect();
  const producer = clientFor().producer();
  await producer.connect();
  t.teardown(() => producer.disconnect());
  await producer.send({ topic: 'clicks', messages: [1, 2, 3].map((n) => ({ value: JSON.stringify({ n }) })) });

  const server = await startServer({ args: ['--kafka-bridge', kafka.bootstrap.join(',')] });
  t.teardown(async () => {
    await server.stop();
    server.cleanup();
  });
  // Records that are no JSON object are skipped (and logged), not stored.
  await producer.send({
    topic: 'clicks',
    messages: [{ value: JSON.stringify({ n: 4 }) }, { value: 'not json' }, { value: JSON.stringify({ n: 5 }) }],
  });

  const api = client(server.url);
  const count = async () => {
    const response = await api.post(`/3.0/projects/${server.projectId}/queries/count`, {
      key: server.keys.read,
      body: { event_collection: 'clicks', timeframe: { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' } },
    });
    return response.body?.result as number | undefined;
  };
  const stored = await eventually(async () => (await count()) === 5, 30_000);
  t.ok(stored, `the 5 JSON events were stored (count ${await count()})`);
  if (!stored) t.comment(`server stdout:\n${server.stdout()}\nstderr:\n${server.stderr()}`);
  t.match(server.stderr(), /clicks@\d+ is no JSON object; skipped/, 'the non-JSON record was logged');
  t.notMatch(server.stderr(), /__consumer_offsets/, "Kafka's internal topics are not consumed");

  const enriched = await consumeAll('enriched.clicks', 5);
  const events = enriched.map((r) => ({ key: r.key, event: JSON.parse(r.value) }));
  t.same(events.map((e) => e.event.n).sort(), [1, 2, 3, 4, 5], 'every stored event was produced back, enriched');
  t.ok(events.every((e) => typeof e.event.svc?.id === 'string' && e.key === e.event.svc.id),
    'keyed by the svc.id Tally gave each event');
});
