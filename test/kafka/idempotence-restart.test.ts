/**
 * Idempotent producers across a crash of the real server (a child process, kill -9, restarted on
 * the same data dir and Kafka port): a batch retried after the restart with the same producer id,
 * epoch and sequence is answered with its first base offset and not stored again; producer ids
 * handed out before the crash are never handed out again; and a kafkajs idempotent producer
 * that keeps sending across two crashes stores each message once. The raw tests are the
 * deterministic regression tests (the retry case exactly, and the crash after the WAL fsync but
 * before the producer state file's, simulated by cutting that file's lines); the kafkajs one
 * checks end to end that the client gets through the restarts, wherever the crashes land.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { ApiKey } from '../../server/kafka/protocol/api-keys.js';
import { encodeRecordBatch } from '../../server/kafka/protocol/record-batch.js';
import { RawClient } from '../helpers/kafka/raw-client.js';

async function start(t: { teardown(fn: () => Promise<void>): void }, port: number, previous?: TestServer): Promise<TestServer> {
  const args = ['--kafka-in-port', String(port)];
  const server = previous ? await previous.restart(args) : await startServer({ args });
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill9();
  });
  return server;
}

async function count(server: TestServer, collection: string): Promise<number> {
  const res = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/count`, {
    key: server.keys.read, body: { event_collection: collection, timeframe: 'this_1_days' },
  });
  return res.body?.result ?? -1;
}

async function login(server: TestServer, port: number): Promise<RawClient> {
  const c = await RawClient.connect(port);
  await c.authenticate(server.projectId, server.keys.write);
  return c;
}

async function initProducerId(c: RawClient): Promise<number> {
  c.send(ApiKey.InitProducerId, 1, { transactional_id: null, transaction_timeout_ms: 60000 });
  return (await c.response(ApiKey.InitProducerId, 1)).body.producer_id;
}

/**
 * Sends Produce v8 batches of `n` JSON records `{"seq": k}` as idempotent producer `producerId`
 * (epoch 0) to partition 0 of `topic`, from `baseSequence` on; resolves with the partition's answer.
 */
function idempotentSender(topic: string, producerId: number) {
  const batch = (baseSequence: number, n: number) => encodeRecordBatch({
    baseOffset: 0, baseTimestamp: Date.now(), maxTimestamp: Date.now(), producerId, producerEpoch: 0,
    baseSequence, records: Array.from({ length: n }, (_, i) => ({
      offsetDelta: i, timestampDelta: 0, key: null, value: Buffer.from(`{"seq":${baseSequence + i}}`),
    })),
  });
  return async (client: RawClient, baseSequence: number, n: number) => {
    client.send(ApiKey.Produce, 8, {
      transactional_id: null, acks: -1, timeout_ms: 5000,
      topic_data: [{ name: topic, partition_data: [{ index: 0, records: batch(baseSequence, n) }] }],
    });
    return (await client.response(ApiKey.Produce, 8)).body.responses[0].partition_responses[0];
  };
}

t.test('a raw idempotent batch retried after kill -9 and restart is not stored twice', async (t) => {
  const port = await freePort();
  const first = await start(t, port);
  t.teardown(() => first.cleanup());
  const c = await login(first, port);
  const producerId = await initProducerId(c);
  const otherId = await initProducerId(c);
  t.ok(producerId > 0 && otherId !== producerId);
  const send = idempotentSender('idem_crash', producerId);
  const a = await send(c, 0, 3);
  const b = await send(c, 3, 2);
  t.same([a.error_code, a.base_offset, b.error_code, b.base_offset], [0, 0, 0, 3]);
  c.socket.destroy();

  await first.kill9();
  const second = await start(t, port, first);
  const again = await login(second, port);
  const retryA = await send(again, 0, 3);
  const retryB = await send(again, 3, 2);
  t.equal(retryA.error_code, 0);
  t.equal(retryA.base_offset, 0, 'the retry of the first batch gets its original base offset');
  t.equal(retryB.error_code, 0);
  t.equal(retryB.base_offset, 3, 'the retry of the second batch gets its original base offset');
  const next = await send(again, 5, 1);
  t.same([next.error_code, next.base_offset], [0, 5], 'the next sequence is stored after them');
  t.ok(await eventually(async () => (await count(second, 'idem_crash')) === 6), 'six events, none twice');
  t.equal(await count(second, 'idem_crash'), 6);

  const fresh = await initProducerId(again);
  t.ok(fresh !== producerId && fresh !== otherId && fresh > Math.max(producerId, otherId),
    `a producer id after the restart (${fresh}) is past those handed out before (${producerId}, ${otherId})`);
  again.socket.destroy();
  await second.kill9();
  // A second crash right after, with no produce: the ids handed out still are not reused.
  const third = await start(t, port, second);
  const c3 = await login(third, port);
  t.ok(await initProducerId(c3) > fresh, 'and after another restart, past that one too');
  c3.socket.destroy();
  await third.stop();
});

t.test('a batch in the WAL but not yet in the producer state file is still recognised after kill -9', async (t) => {
  // The crash between the engine's WAL fsync and the producer state file's fsync, made
  // deterministic: the batch is stored and acknowledged, the server is killed, and the state
  // file's batch lines are cut off as if their write had never reached the disk. The producer
  // fields travel in the engine's WAL record, so the restart still knows the batch.
  const port = await freePort();
  const first = await start(t, port);
  t.teardown(() => first.cleanup());
  const c = await login(first, port);
  const producerId = await initProducerId(c);
  const send = idempotentSender('idem_gap', producerId);
  const a = await send(c, 0, 3);
  t.same([a.error_code, a.base_offset], [0, 0]);
  c.socket.destroy();
  await first.kill9();

  const stateFile = join(first.dataDir, 'kafka-producer-state.log');
  const lines = readFileSync(stateFile, 'utf8').split('\n');
  const kept = lines.filter((line) => !line.startsWith('{"b":'));
  t.ok(kept.length < lines.length, 'the batch line was in the state file');
  writeFileSync(stateFile, kept.join('\n'));

  const second = await start(t, port, first);
  const again = await login(second, port);
  const retry = await send(again, 0, 3);
  t.same([retry.error_code, retry.base_offset], [0, 0], 'the retry gets the original base offset');
  const next = await send(again, 3, 1);
  t.same([next.error_code, next.base_offset], [0, 3], 'the next sequence is stored after it');
  t.ok(await eventually(async () => (await count(second, 'idem_gap')) === 4), 'four events, none twice');
  t.equal(await count(second, 'idem_gap'), 4);
  again.socket.destroy();

  // A clean stop flushes the buffers and deletes the WAL files that carried the batch: the state
  // recovered from the WAL must be in the state file by then.
  t.equal(await second.stop(), 0);
  const third = await start(t, port, second);
  const c3 = await login(third, port);
  const late = await send(c3, 0, 3);
  t.same([late.error_code, late.base_offset], [0, 0], 'still recognised once the WAL files are gone');
  t.equal(await count(third, 'idem_gap'), 4);
  c3.socket.destroy();
  await third.stop();
});

t.test('a kafkajs idempotent producer sending across kill -9 stores each message once', async (t) => {
  const port = await freePort();
  const first = await start(t, port);
  t.teardown(() => first.cleanup());
  const kafka = (server: TestServer) => new Kafka({
    clientId: 'idem-crash', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING,
    sasl: { mechanism: 'plain', username: server.projectId, password: server.keys.write },
    retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 }, connectionTimeout: 2000,
  });
  const producer = kafka(first).producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const total = 400;
  let current: TestServer = first;
  const sending = (async () => {
    for (let i = 0; i < total; i += 10) {
      await producer.send({
        topic: 'kidem_crash', acks: -1,
        messages: Array.from({ length: 10 }, (_, j) => ({ value: JSON.stringify({ n: i + j }) })),
      });
    }
  })();
  // Crash while batches are in flight, twice, and restart on the same port.
  for (let crash = 0; crash < 2; crash++) {
    await new Promise((r) => setTimeout(r, 300));
    await current.kill9();
    current = await start(t, port, current);
  }
  await sending;
  await producer.disconnect();
  t.ok(await eventually(async () => (await count(current, 'kidem_crash')) >= total), 'every message stored');
  const stored = await count(current, 'kidem_crash');
  t.equal(stored, total, `${total} messages, none stored twice (${stored} stored)`);
  await current.stop();
});
