/**
 * The cluster's events producer (server/cluster/producer.ts) with a stand-in kafkajs producer:
 * each message names the partition kafkajs's default partitioner gives its key (the one Assignment.partitionOf and so every node's consumer expects); a request is
 * acknowledged only once every partition it wrote to was, and an answer that does not name its
 * partition (what kafkajs 2.2.4 returns when a retry skipped a moved partition, tulios/kafkajs#1798)
 * refuses the requests that wrote to it with 503.
 */
import t from 'tap';
import type { Message, ProducerRecord, RecordMetadata } from 'kafkajs';
import { isApiError } from '../../../engine/index.js';
import { Assignment } from '../../../server/cluster/assignment.js';
import { EventLogProducer } from '../../../server/cluster/producer.js';

const TOPIC = 'tally.events';
const PARTITIONS = 12;
const assignment = new Assignment([{ id: 0, url: '' }], 1, PARTITIONS, TOPIC);

/** A stand-in kafka: `answer` decides each send's result from its messages. */
function standIn(answer: (record: ProducerRecord) => Promise<RecordMetadata[]>) {
  const sends: ProducerRecord[] = [];
  const logs: Record<string, unknown>[] = [];
  const kafka = {
    producer: () => ({
      connect: async () => {},
      disconnect: async () => {},
      send: (record: ProducerRecord) => {
        sends.push(record);
        return answer(record);
      },
    }),
  };
  const producer = new EventLogProducer({
    kafka: kafka as never, topic: TOPIC, partitions: PARTITIONS, timeoutMs: 2_000,
    log: (_level, msg, fields) => logs.push({ msg, ...fields }),
  });
  return { producer, sends, logs };
}

/** What Kafka answers for a send: every partition its messages name, but `except`. */
const took = (record: ProducerRecord, except?: number): RecordMetadata[] =>
  [...new Set(record.messages.map((m: Message) => m.partition!))].filter((partition) => partition !== except).map((partition) => ({
    topicName: record.topic, partition, errorCode: 0, baseOffset: '0', logAppendTime: '-1', logStartOffset: '0',
  }));

/** Keys of `count` collections whose partitions all differ. */
function keysOnDistinctPartitions(count: number): string[] {
  const keys: string[] = [];
  const used = new Set<number>();
  for (let i = 0; keys.length < count; i++) {
    const key = `p/c${i}`;
    const partition = assignment.partitionOf(key);
    if (used.has(partition)) continue;
    used.add(partition);
    keys.push(key);
  }
  return keys;
}

t.test('each message names the partition its key goes to', async (t) => {
  const { producer, sends } = standIn(async (record) => took(record));
  const [a, b, c] = keysOnDistinctPartitions(3) as [string, string, string];
  await Promise.all([
    producer.send([{ key: a, value: '{"n":1}' }, { key: b, value: '{"n":2}' }]),
    producer.send([{ key: c, value: '{"n":3}' }, { key: a, value: '{"n":4}' }]),
  ]);
  const seen = sends.flatMap((record) => record.messages.map((m) => [m.key, m.partition, m.value]));
  for (const [key, partition] of seen) t.equal(partition, assignment.partitionOf(String(key)), `${key} goes to its partition`);
  t.same(seen.filter(([key]) => key === a).map(([, , value]) => value), ['{"n":1}', '{"n":4}'], 'in order within a partition');
  await producer.close();
});

t.test('an answer that does not name its partition: the requests that wrote there are refused', async (t) => {
  const [a, b] = keysOnDistinctPartitions(2) as [string, string];
  const lost = assignment.partitionOf(b);
  // What kafkajs 2.2.4 resolves with after a retry skipped a partition whose leader moved.
  const { producer, logs } = standIn(async (record) => took(record, lost));
  const outcomes = await Promise.allSettled([
    producer.send([{ key: a, value: '{}' }]),
    producer.send([{ key: b, value: '{}' }]),
    producer.send([{ key: a, value: '{}' }, { key: b, value: '{}' }]),
  ]);
  t.same(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'rejected'], 'acknowledged only where Kafka named the partition');
  const refusal = (outcomes[1] as PromiseRejectedResult).reason;
  t.ok(isApiError(refusal) && refusal.error_code === 'ServiceUnavailableError', '503 ServiceUnavailableError');
  t.match(logs.at(-1), { msg: /answered 503/, partitions: [lost], requests: 2 });
  await producer.close();
});

t.test('a send that fails refuses every request it held', async (t) => {
  const [a, b] = keysOnDistinctPartitions(2) as [string, string];
  let calls = 0;
  const { producer } = standIn(async (record) => {
    if (calls++ === 0) throw new Error('NOT_ENOUGH_REPLICAS');
    return took(record);
  });
  const first = producer.send([{ key: a, value: '{}' }]);
  const outcomes = await Promise.allSettled([first, producer.send([{ key: b, value: '{}' }])]);
  t.same(outcomes.map((o) => o.status), ['rejected', 'fulfilled'], 'the next batch goes through a new producer');
  t.match((outcomes[0] as PromiseRejectedResult).reason.message, /NOT_ENOUGH_REPLICAS/);
  await producer.close();
});
