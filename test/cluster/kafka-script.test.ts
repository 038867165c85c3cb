/**
 * scripts/kafka.mjs as a developer runs it: `start --nodes 3 --dir DIR` prints three bootstrap
 * servers of one cluster that keeps a replication-factor-3 topic with acks=all, and `stop --dir DIR`
 * ends exactly those JVMs and leaves their data. Needs Java 17+ and Maven.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { createServedTopic } from '../helpers/kafka-cluster.js';

const SCRIPT = fileURLToPath(new URL('../../../scripts/kafka.mjs', import.meta.url));
/** The script's output; a failure rejects with its exit and stderr (execFile's error has a numeric code, which tap prints as "unhandled error"). */
async function run(...args: string[]): Promise<{ stdout: string }> {
  try {
    return await promisify(execFile)(process.execPath, [SCRIPT, ...args], { timeout: 180_000 });
  } catch (error) {
    const e = error as { code?: unknown; signal?: unknown; stderr?: unknown };
    throw new Error(`kafka.mjs ${args.join(' ')} failed (${String(e.code ?? e.signal)}): ${String(e.stderr ?? error)}`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('start --nodes 3, a replicated topic, stop', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tally-kafka-cli-'));
  t.teardown(async () => {
    await run('stop', '--dir', dir).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  const { stdout } = await run('start', '--nodes', '3', '--dir', dir);
  const bootstrap = stdout.trim().split(',');
  t.equal(bootstrap.length, 3, `three brokers: ${stdout.trim()}`);
  const pids = JSON.parse(readFileSync(join(dir, 'pids.json'), 'utf8')) as { pid: number }[];
  t.equal(pids.length, 3, 'three processes recorded');

  const kafka = new Kafka({ clientId: 'tally-test', brokers: bootstrap, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  t.equal((await admin.describeCluster()).brokers.length, 3);
  await createServedTopic(admin, { topic: 'replicated', numPartitions: 3, replicationFactor: 3 });
  const [meta] = (await admin.fetchTopicMetadata({ topics: ['replicated'] })).topics;
  t.ok(meta!.partitions.every((p) => p.replicas.length === 3), 'every partition has 3 replicas');
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const sent = await producer.send({ topic: 'replicated', acks: -1, messages: [1, 2, 3].map((n) => ({ key: String(n), value: String(n) })) });
  await producer.disconnect();
  t.ok(sent.every((r) => r.errorCode === 0), 'acks=all produce succeeded');

  await run('stop', '--dir', dir);
  t.ok(pids.every((p) => !alive(p.pid)), 'every node stopped');
  t.notOk(existsSync(join(dir, 'pids.json')), 'pids.json removed');
  t.ok(existsSync(join(dir, 'n1', 'data', 'meta.properties')), 'the data stays');
});
