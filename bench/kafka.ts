/**
 * How fast do events go through the built-in Kafka listeners? A kafkajs producer (in a worker
 * thread, so client and broker each get a core) sends N events in batches of 1,000, a few requests
 * in flight, to the inbound listener; then a kafkajs consumer group reads them all back from the
 * outbound listener. Goal (issue 5): ≥ 100,000 events/s each way on this machine.
 *   node dist/bench/kafka.js [events=200000] [--no-fsync] [--in-flight=4] [--idempotent]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Kafka, logLevel } from 'kafkajs';
import { benchArgs } from './args.js';

interface Job {
  inPort: number; outPort: number; project: string; write: string; read: string; total: number; inFlight: number;
  /** An idempotent producer (acks -1, one request in flight, as kafkajs requires). */
  idempotent: boolean;
}
const BATCH = 1_000;

const event = (i: number) => JSON.stringify({
  i, page: `/products/${i % 500}`, user: { id: `u${i % 10_000}`, plan: i % 3 ? 'free' : 'pro' },
  referrer: 'https://example.com/', amount: (i % 1000) / 10,
});

async function client(job: Job): Promise<{ produceMs: number; consumeMs: number; consumed: number }> {
  const kafka = (port: number, password: string) => new Kafka({
    clientId: 'bench', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING,
    sasl: { mechanism: 'plain', username: job.project, password },
  });
  const producer = kafka(job.inPort, job.write).producer(job.idempotent ? { idempotent: true, maxInFlightRequests: 1 } : {});
  await producer.connect();
  const produceStart = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    // Bounded by job.total: each turn claims the next batch.
    while (next < job.total) {
      const from = next;
      next += BATCH;
      const messages = [];
      for (let i = from; i < Math.min(from + BATCH, job.total); i++) messages.push({ value: event(i) });
      await producer.send({ topic: 'bench', messages });
    }
  };
  await Promise.all(Array.from({ length: job.inFlight }, lane));
  const produceMs = performance.now() - produceStart;
  await producer.disconnect();

  const consumer = kafka(job.outPort, job.read).consumer({ groupId: 'bench', maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'bench', fromBeginning: true });
  let consumed = 0;
  let consumeStart = 0;
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachBatch: async ({ batch }) => {
        if (consumeStart === 0) consumeStart = performance.now();
        consumed += batch.messages.length;
        if (consumed >= job.total) resolve();
      },
    });
  });
  const consumeMs = performance.now() - consumeStart;
  await consumer.disconnect();
  return { produceMs, consumeMs, consumed };
}

async function main(): Promise<void> {
  const args = benchArgs({ 'no-fsync': {}, 'in-flight': { arg: 'N' }, idempotent: {} }, { positionals: ['events'] });
  const total = args.positionalInteger(0, 'events', 200_000);
  const fsync = !args.flag('no-fsync');
  const idempotent = args.flag('idempotent');
  const inFlight = idempotent ? 1 : args.integer('in-flight', 4);
  const { openEngine } = await import('../engine/index.js');
  const { startKafkaListener } = await import('../server/kafka/broker/index.js');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-kafka-'));
  const engine = await openEngine({ dataDir, fsync });
  const project = engine.projects.list()[0] ?? (await engine.projects.create('bench'));
  const common = { engine, host: '127.0.0.1', port: 0, advertisedHost: '127.0.0.1' };
  // As the server runs it: idempotent producers' state kept (and fsynced) in the data dir.
  const inbound = await startKafkaListener({ ...common, role: 'in', stateDir: dataDir });
  const outbound = await startKafkaListener({ ...common, role: 'out' });
  const job: Job = {
    inPort: inbound.port, outPort: outbound.port, project: project.id,
    write: project.api_keys.write, read: project.api_keys.read, total, inFlight, idempotent,
  };
  const worker = new Worker(new URL(import.meta.url), { workerData: job });
  const result = await new Promise<Awaited<ReturnType<typeof client>>>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const rate = (n: number, ms: number) => Math.round((n / ms) * 1000).toLocaleString('en-US');
  console.log(`events: ${total.toLocaleString('en-US')} in batches of ${BATCH}, ${inFlight} in flight, fsync ${fsync}${idempotent ? ', idempotent producer' : ''}`);
  console.log(`produce: ${rate(total, result.produceMs)} events/s (${result.produceMs.toFixed(0)} ms)  goal ≥ 100,000`);
  console.log(`consume: ${rate(result.consumed, result.consumeMs)} events/s ` +
    `(${result.consumeMs.toFixed(0)} ms from the first batch)  goal ≥ 100,000`);
  await worker.terminate();
  await inbound.close();
  await outbound.close();
  await engine.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

if (isMainThread) await main();
else parentPort!.postMessage(await client(workerData as Job));
