/**
 * kafkajs against the built-in listeners: produce and consume, a two-member group with a
 * rebalance, long-poll latency, ListOffsets by time, roles and authentication, invalid records,
 * and committed offsets across a restart.
 */
import t from 'tap';
import type { Consumer, Kafka } from 'kafkajs';
import { startTestBroker, type TestBroker } from '../helpers/kafka/broker.js';

const events = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ value: JSON.stringify({ n: i, tag }) }));

async function produce(broker: TestBroker, topic: string, messages: { value: string }[]) {
  const producer = broker.kafka('in').producer();
  await producer.connect();
  try {
    return await producer.send({ topic, messages });
  } finally {
    await producer.disconnect();
  }
}

/** Runs a consumer and collects parsed values until `until` says stop (or the timeout). */
function collect(consumer: Consumer, until: (got: Record<string, unknown>[]) => boolean, timeoutMs = 20_000) {
  const got: Record<string, unknown>[] = [];
  return new Promise<Record<string, unknown>[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout with ${got.length} messages`)), timeoutMs);
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(JSON.parse(message.value!.toString()));
        if (until(got)) {
          clearTimeout(timer);
          resolve(got);
        }
      },
    }).catch(reject);
  });
}

t.test('kafkajs producer then consumer reads the enriched events', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const sent = await produce(broker, 'clicks', events(10, 'a'));
  t.equal(sent[0]!.errorCode, 0);
  const consumer = broker.kafka('out').consumer({ groupId: 'g1', maxWaitTimeInMs: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'clicks', fromBeginning: true });
  const got = await collect(consumer, (g) => g.length === 10);
  await consumer.disconnect();
  t.same(got.map((e) => e.n), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.ok((got[0] as { svc?: { id?: string } }).svc?.id, 'events carry their svc object');
});

t.test('events written through the engine (as HTTP does) and via Kafka are consumed together', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const { engine, project } = broker.te;
  await engine.events.append(project.id, [{ collection: 'mixed', event: { via: 'http' } }], { ip: '10.0.0.1', userAgent: 'curl' });
  await produce(broker, 'mixed', [{ value: JSON.stringify({ via: 'kafka' }) }]);
  await engine.events.append(project.id, [{ collection: 'mixed', event: { via: 'http' } }], { ip: '10.0.0.1', userAgent: 'curl' });
  const consumer = broker.kafka('out').consumer({ groupId: 'mixed', maxWaitTimeInMs: 300 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'mixed', fromBeginning: true });
  const got = await collect(consumer, (g) => g.length === 3);
  await consumer.disconnect();
  t.same(got.map((e) => e.via), ['http', 'kafka', 'http'], 'in the order they were stored');
});

t.test('a new event reaches a waiting consumer within a second', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const consumer = broker.kafka('out').consumer({ groupId: 'live', maxWaitTimeInMs: 5000 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'live', fromBeginning: true });
  let sentAt = 0;
  const received = collect(consumer, (g) => g.length === 1);
  await new Promise((r) => setTimeout(r, 2500));
  sentAt = Date.now();
  await produce(broker, 'live', events(1, 'live'));
  const ackedAt = Date.now();
  await received;
  const latency = Date.now() - ackedAt;
  await consumer.disconnect();
  t.ok(latency < 1000, `delivered ${latency} ms after the ack (${ackedAt - sentAt} ms to ack)`);
});

t.test('two consumers share a group and rebalance on join and leave', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  await produce(broker, 'ta', events(5, 'a0'));
  await produce(broker, 'tb', events(5, 'b0'));
  const kafka = broker.kafka('out');
  const make = (): Consumer => kafka.consumer({
    groupId: 'shared', maxWaitTimeInMs: 300, heartbeatInterval: 500, sessionTimeout: 6000,
    rebalanceTimeout: 6000,
  });
  const c1 = make();
  const seen1: string[] = [];
  const seen2: string[] = [];
  const assigned = { c1: [] as string[], c2: [] as string[] };
  c1.on(c1.events.GROUP_JOIN, (e) => { assigned.c1 = Object.keys(e.payload.memberAssignment); });
  await c1.connect();
  await c1.subscribe({ topics: ['ta', 'tb'], fromBeginning: true });
  await c1.run({ eachMessage: async ({ message }) => { seen1.push(String(JSON.parse(message.value!.toString()).tag)); } });
  await waitFor(() => seen1.length >= 10, 15_000);
  t.same(assigned.c1.sort(), ['ta', 'tb'], 'alone, the first member owns both topics');

  const c2 = make();
  c2.on(c2.events.GROUP_JOIN, (e) => { assigned.c2 = Object.keys(e.payload.memberAssignment); });
  await c2.connect();
  await c2.subscribe({ topics: ['ta', 'tb'], fromBeginning: true });
  await c2.run({ eachMessage: async ({ message }) => { seen2.push(String(JSON.parse(message.value!.toString()).tag)); } });
  await waitFor(() => assigned.c2.length === 1 && assigned.c1.length === 1, 20_000);
  t.same([...assigned.c1, ...assigned.c2].sort(), ['ta', 'tb'], 'after the rebalance each owns one');

  await produce(broker, 'ta', events(3, 'a1'));
  await produce(broker, 'tb', events(3, 'b1'));
  await waitFor(() => [...seen1, ...seen2].filter((x) => x.endsWith('1')).length >= 6, 15_000);
  t.pass('events produced after the rebalance are consumed by the group');

  await c2.disconnect();
  await waitFor(() => assigned.c1.length === 2, 20_000);
  t.pass('when one leaves, the other takes both topics back');
  await c1.disconnect();
});

t.test('ListOffsets: earliest, latest and by time', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  await produce(broker, 'times', events(3, 'x'));
  const middle = Date.now() + 5;
  await new Promise((r) => setTimeout(r, 20));
  await produce(broker, 'times', events(2, 'y'));
  const admin = broker.kafka('out').admin();
  await admin.connect();
  const [bounds] = await admin.fetchTopicOffsets('times');
  t.equal(bounds!.low, '0');
  t.equal(bounds!.high, '5');
  const [byTime] = await admin.fetchTopicOffsetsByTimestamp('times', middle);
  t.equal(byTime!.offset, '3');
  await admin.disconnect();
});

t.test('a wrong password fails authentication', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const producer = broker.kafka('in', 'not-a-key').producer();
  await t.rejects(producer.connect(), /SASL PLAIN authentication failed/);
});

t.test('a read key cannot produce', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const onInbound = broker.kafka('in', broker.te.project.api_keys.read).producer();
  await t.rejects(onInbound.connect(), /Write Key/, 'the inbound listener refuses a read key');
  const onOutbound = broker.kafka('out').producer();
  await onOutbound.connect();
  await t.rejects(onOutbound.send({ topic: 'x', messages: events(1, 'r') }), /authoriz/i,
    'a produce on the outbound listener is not authorized');
  await onOutbound.disconnect();
  t.equal(broker.te.engine.collections.list(broker.te.project.id).length, 0);
});

t.test('a write key cannot consume', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const onOutbound = broker.kafka('out', broker.te.project.api_keys.write).consumer({ groupId: 'w' });
  await t.rejects(onOutbound.connect(), /Read Key/, 'the outbound listener refuses a write key');
  const onInbound: Kafka = broker.kafka('in');
  const consumer = onInbound.consumer({ groupId: 'w', retry: { retries: 0 } });
  await consumer.connect();
  await consumer.subscribe({ topic: 'x', fromBeginning: true });
  const crashed = new Promise((resolve) => consumer.on(consumer.events.CRASH, (e) => resolve(e.payload.error)));
  await consumer.run({ eachMessage: async () => {} }).catch((e) => e);
  const error = (await crashed) as Error;
  t.match(error.message, /authoriz/i, 'group APIs on the inbound listener are not authorized');
  await consumer.disconnect();
});

t.test('an invalid JSON record rejects its whole batch and stores nothing', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const producer = broker.kafka('in').producer({ retry: { retries: 0 } });
  await producer.connect();
  const messages = [{ value: '{"ok":1}' }, { value: 'not json' }, { value: '[1,2]' }];
  const error = await producer.send({ topic: 'bad', messages }).catch((e) => e);
  await producer.disconnect();
  t.match(String(error), /INVALID_RECORD|invalid record|record/i, `error: ${error}`);
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'bad').end, 0, 'nothing stored');
});

t.test('a record the engine refuses rejects its whole batch and stores nothing', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const producer = broker.kafka('in').producer({ retry: { retries: 0 } });
  await producer.connect();
  const messages = [{ value: '{"ok":1}' }, { value: '{"bad.name":1}' }, { value: '{"ok":2}' }];
  const error = await producer.send({ topic: 'refused', messages }).catch((e) => e);
  t.match(String(error), /INVALID_RECORD|invalid record|record/i, `error: ${error}`);
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'refused').end, 0, 'nothing stored');
  t.notOk(broker.te.engine.collections.get(broker.te.project.id, 'refused')?.properties.ok, 'no schema trace');
  const [meta] = await producer.send({ topic: 'refused', messages: [{ value: '{"ok":3}' }, { value: '{"ok":4}' }] });
  t.equal(Number(meta.baseOffset), 0, 'the next batch starts the log at offset 0');
  await producer.disconnect();
});

t.test('the number range is exact from the record text: 2^63 - 1 is stored, 2^63 is refused', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const producer = broker.kafka('in').producer({ retry: { retries: 0 } });
  await producer.connect();
  const [ok] = await producer.send({ topic: 'range', messages: [{ value: '{"n":9223372036854775807}' }, { value: '{"n":-9223372036854775808}' }] });
  t.equal(ok!.errorCode, 0);
  const error = await producer.send({ topic: 'range', messages: [{ value: '{"n":9223372036854775808}' }] }).catch((e) => e);
  t.match(String(error), /INVALID_RECORD|invalid record|record/i, `error: ${error}`);
  const refused = await producer.send({ topic: 'range', messages: [{ value: '{"n":-9223372036854775809}' }] }).catch((e) => e);
  t.match(String(refused), /INVALID_RECORD|invalid record|record/i);
  await producer.disconnect();
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'range').end, 2, 'only the two in range were stored');
});

t.test('committed offsets survive a restart', async (t) => {
  let broker = await startTestBroker();
  await produce(broker, 'resume', events(4, 'first'));
  const consume = async (b: TestBroker, n: number) => {
    const c = b.kafka('out').consumer({ groupId: 'keep', maxWaitTimeInMs: 300 });
    await c.connect();
    await c.subscribe({ topic: 'resume', fromBeginning: true });
    const got = await collect(c, (g) => g.length === n);
    await c.disconnect();
    return got;
  };
  t.same((await consume(broker, 4)).map((e) => e.tag), ['first', 'first', 'first', 'first']);
  await broker.inbound.close();
  await broker.outbound.close();
  const te = await broker.te.reopen();
  broker = await startTestBroker({ te });
  t.teardown(() => broker.stop());
  await produce(broker, 'resume', events(2, 'second'));
  t.same((await consume(broker, 2)).map((e) => e.tag), ['second', 'second'],
    'only the new events are delivered');
});

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
