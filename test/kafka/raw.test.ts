/**
 * Wire-level behaviour no client library exercises on purpose: the bare SASL token after
 * SaslHandshake v0 (kafka-python's flow), ApiVersions of an unknown version, pipelined requests
 * answered in order, acks=0, and connections closed for oversized frames or pre-auth requests.
 */
import t from 'tap';
import { ApiKey } from '../../server/kafka/protocol/api-keys.js';
import { encodeRequest } from '../../server/kafka/protocol/codec.js';
import { frame } from '../../server/kafka/protocol/frame.js';
import { encodeRecordBatch } from '../../server/kafka/protocol/record-batch.js';
import type { Struct } from '../../server/kafka/protocol/schema.js';
import { startTestBroker, type TestBroker } from '../helpers/kafka/broker.js';
import { RawClient } from '../helpers/kafka/raw-client.js';

async function authenticate(c: RawClient, broker: TestBroker, password: string): Promise<void> {
  await c.authenticate(broker.te.project.id, password);
}

t.test('SaslHandshake v0 then a bare token (authzid = username), as kafka-python does', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const c = await RawClient.connect(broker.inbound.port);
  c.send(ApiKey.SaslHandshake, 0, { mechanism: 'PLAIN' });
  t.same((await c.response(ApiKey.SaslHandshake, 0)).body.mechanisms, ['PLAIN']);
  const id = broker.te.project.id;
  c.socket.write(frame(Buffer.from(`${id}\0${id}\0${broker.te.project.api_keys.write}`)));
  t.same(await c.next(), Buffer.alloc(0), 'an empty server token');
  c.send(ApiKey.ApiVersions, 0, {});
  t.equal((await c.response(ApiKey.ApiVersions, 0)).body.error_code, 0);
  c.socket.destroy();

  const bad = await RawClient.connect(broker.inbound.port);
  bad.send(ApiKey.SaslHandshake, 0, { mechanism: 'PLAIN' });
  await bad.response(ApiKey.SaslHandshake, 0);
  bad.socket.write(frame(Buffer.from(`\0${id}\0wrong`)));
  t.equal(await bad.next(), null, 'a bad bare token closes the connection');
});

t.test('ApiVersions: the advertised matrix, and a v0 answer to an unknown version', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const c = await RawClient.connect(broker.outbound.port);
  c.send(ApiKey.ApiVersions, 3, { client_software_name: 'raw', client_software_version: '1' });
  const versions = await c.response(ApiKey.ApiVersions, 3);
  const byKey = new Map(versions.body.api_keys.map((k: Struct) => [k.api_key, [k.min_version, k.max_version]]));
  t.same(byKey.get(ApiKey.Produce), [0, 8]);
  t.same(byKey.get(ApiKey.Fetch), [0, 11]);
  t.same(byKey.get(ApiKey.OffsetFetch), [0, 5]);
  t.same(byKey.get(ApiKey.JoinGroup), [0, 5]);
  const unknown = Buffer.from(encodeRequest({ api_key: 18, api_version: 3, correlation_id: 9, client_id: 'raw' },
    { client_software_name: 'raw', client_software_version: '1' }));
  unknown.writeInt16BE(7, 2);
  c.socket.write(frame(unknown));
  const answer = await c.response(ApiKey.ApiVersions, 0);
  t.equal(answer.correlation_id, 9);
  t.equal(answer.body.error_code, 35);
});

t.test('requests before authentication and oversized frames close the connection', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const early = await RawClient.connect(broker.inbound.port);
  early.send(ApiKey.Metadata, 1, { topics: null });
  t.equal(await early.next(), null);
  const huge = await RawClient.connect(broker.inbound.port);
  huge.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x01]));
  t.equal(await huge.next(), null, 'a TLS ClientHello on the plaintext port is dropped at once');
});

t.test('pipelined produces are answered in order; acks=0 gets no answer', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const c = await RawClient.connect(broker.inbound.port);
  await authenticate(c, broker, broker.te.project.api_keys.write);
  const records = (n: number) => encodeRecordBatch({
    baseOffset: 0, baseTimestamp: Date.now(), maxTimestamp: Date.now(),
    records: Array.from({ length: n }, (_, i) => ({ offsetDelta: i, timestampDelta: 0, key: null, value: Buffer.from(`{"i":${i}}`) })),
  });
  const produce = (acks: number, n: number) => c.send(ApiKey.Produce, 8, {
    transactional_id: null, acks, timeout_ms: 5000,
    topic_data: [{ name: 'pipe', partition_data: [{ index: 0, records: records(n) }] }],
  });
  const ids = [produce(1, 3), produce(0, 2), produce(-1, 4), c.send(ApiKey.Metadata, 8, { topics: [{ name: 'pipe' }] })];
  const first = await c.response(ApiKey.Produce, 8);
  const second = await c.response(ApiKey.Produce, 8);
  const meta = await c.response(ApiKey.Metadata, 8);
  t.same([first.correlation_id, second.correlation_id, meta.correlation_id], [ids[0], ids[2], ids[3]]);
  t.equal(first.body.responses[0].partition_responses[0].base_offset, 0);
  t.equal(second.body.responses[0].partition_responses[0].base_offset, 5);
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'pipe').end, 9);
});

t.test('a corrupt batch gets CORRUPT_MESSAGE and stores nothing', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const c = await RawClient.connect(broker.inbound.port);
  await authenticate(c, broker, broker.te.project.api_keys.master);
  const batch = encodeRecordBatch({
    baseOffset: 0, baseTimestamp: 0, maxTimestamp: 0,
    records: [{ offsetDelta: 0, timestampDelta: 0, key: null, value: Buffer.from('{"a":1}') }],
  });
  batch[batch.length - 2]! ^= 1;
  c.send(ApiKey.Produce, 7, {
    transactional_id: null, acks: -1, timeout_ms: 5000,
    topic_data: [{ name: 'crc', partition_data: [{ index: 0, records: batch }] }],
  });
  const answer = await c.response(ApiKey.Produce, 7);
  t.equal(answer.body.responses[0].partition_responses[0].error_code, 2);
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'crc').end, 0);
});

t.test('INVALID_RECORD names each bad record (Produce v8)', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const c = await RawClient.connect(broker.inbound.port);
  await authenticate(c, broker, broker.te.project.api_keys.write);
  const values = ['{"ok":1}', 'nope', '{"ok":2}', '"str"'];
  const batch = encodeRecordBatch({
    baseOffset: 0, baseTimestamp: 0, maxTimestamp: 0,
    records: values.map((v, i) => ({ offsetDelta: i, timestampDelta: 0, key: null, value: Buffer.from(v) })),
  });
  c.send(ApiKey.Produce, 8, {
    transactional_id: null, acks: 1, timeout_ms: 5000,
    topic_data: [{ name: 'inv', partition_data: [{ index: 0, records: batch }] }],
  });
  const p = (await c.response(ApiKey.Produce, 8)).body.responses[0].partition_responses[0];
  t.equal(p.error_code, 87);
  t.same(p.record_errors.map((e: Struct) => e.batch_index), [1, 3]);
  t.match(p.record_errors[0].batch_index_error_message, /not valid JSON/);
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'inv').end, 0, 'nothing stored');
});

t.test('an idempotent producer\'s retried batch is stored once', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const c = await RawClient.connect(broker.inbound.port);
  await authenticate(c, broker, broker.te.project.api_keys.write);
  c.send(ApiKey.InitProducerId, 1, { transactional_id: null, transaction_timeout_ms: 60000 });
  const { producer_id } = (await c.response(ApiKey.InitProducerId, 1)).body;
  t.ok(producer_id > 0);
  const batch = (baseSequence: number) => encodeRecordBatch({
    baseOffset: 0, baseTimestamp: 0, maxTimestamp: 0, producerId: producer_id, producerEpoch: 0,
    baseSequence, records: [0, 1].map((i) => ({
      offsetDelta: i, timestampDelta: 0, key: null, value: Buffer.from(`{"seq":${baseSequence + i}}`),
    })),
  });
  const send = async (baseSequence: number) => {
    c.send(ApiKey.Produce, 7, {
      transactional_id: null, acks: -1, timeout_ms: 5000,
      topic_data: [{ name: 'idem', partition_data: [{ index: 0, records: batch(baseSequence) }] }],
    });
    return (await c.response(ApiKey.Produce, 7)).body.responses[0].partition_responses[0];
  };
  t.equal((await send(0)).base_offset, 0);
  t.equal((await send(2)).base_offset, 2);
  const retry = await send(0);
  t.equal(retry.error_code, 0);
  t.equal(retry.base_offset, 0, 'the retry gets the original offset');
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'idem').end, 4, 'stored once');
});

t.test('kafkajs idempotent producer works end to end', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const producer = broker.kafka('in').producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < 3; i++) {
    await producer.send({ topic: 'kidem', messages: [{ value: JSON.stringify({ i }) }] });
  }
  await producer.disconnect();
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'kidem').end, 3);
});
