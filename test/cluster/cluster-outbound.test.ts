/**
 * The outbound stream of a cluster (docs/cluster.md "The outbound stream"): two Tally nodes on one
 * real Kafka broker, each storing only its partitions (R = 1). A kafkajs consumer group bootstrapped
 * on node 0's outbound listener alone (SASL PLAIN: project id and Read Key) reads every event of a
 * collection stored on node 1 and of one stored on node 0, in order, and resumes from its commits;
 * kcat does the same for node 1's collection; node 0 itself answers NOT_LEADER_OR_FOLLOWER (6) for
 * what it does not store and names one coordinator per group. The real events topic is readable by
 * a plain consumer (key `<project>/<collection>`, value the stamped event).
 */
import t from 'tap';
import { Kafka, logLevel, type Consumer, type KafkaConfig } from 'kafkajs';
import { Assignment } from '../../server/cluster/assignment.js';
import { ApiKey } from '../../server/kafka/protocol/api-keys.js';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { RawClient } from '../helpers/kafka/raw-client.js';
import { available, run } from '../helpers/kafka/run.js';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { caughtUp, clusterArgs, countOf, stopAll } from '../helpers/cluster.js';

const SECRET = 'a-test-cluster-secret-0123456789';
const PER_COLLECTION = 30;
const NOT_LEADER_OR_FOLLOWER = 6;
const NOT_COORDINATOR = 16;

let kafka: RealKafka;
const servers: TestServer[] = [];
t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
});
t.teardown(() => stopAll(servers, kafka));

interface Read { key: string | null; value: string; offset: string }

/** Reads records of `topics` with a consumer of `config` in group `groupId` until `enough` says so. */
async function consume(config: KafkaConfig, groupId: string, topics: string[], enough: (got: Map<string, Read[]>) => boolean,
  timeoutMs = 40_000): Promise<Map<string, Read[]>> {
  const consumer: Consumer = new Kafka({ logLevel: logLevel.NOTHING, ...config }).consumer({ groupId, maxWaitTimeInMs: 200 });
  const got = new Map<string, Read[]>(topics.map((topic) => [topic, []]));
  await consumer.connect();
  try {
    await consumer.subscribe({ topics, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not enough records in time: ${[...got].map(([k, v]) => `${k}=${v.length}`).join(' ')}`)), timeoutMs);
      void consumer.run({
        eachMessage: async ({ topic, message }) => {
          got.get(topic)!.push({ key: message.key?.toString() ?? null, value: message.value?.toString() ?? '', offset: message.offset });
          if (enough(got)) {
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

/** Writes events n = from .. to-1 of `collection`, each batch acknowledged before the next (so in order). */
async function write(node: TestServer, collection: string, from: number, to: number): Promise<void> {
  const events = Array.from({ length: to - from }, (_, i) => ({ n: from + i, tag: collection }));
  const r = await client(node.url).post(`/3.0/projects/${node.projectId}/events`, { key: node.keys.write, body: { [collection]: events } });
  if (r.status !== 200 || !(r.body[collection] as { success: boolean }[]).every((e) => e.success)) throw new Error(`write: ${r.status} ${r.text}`);
}

const ns = (records: readonly Read[]) => records.map((r) => (JSON.parse(r.value) as { n: number }).n);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

t.test('any node\'s outbound listener serves every collection of the cluster', async (t) => {
  const httpPorts = [await freePort(), await freePort()];
  const outPorts = [await freePort(), await freePort()];
  const nodes = [0, 1].map((id) => `${id}=http://127.0.0.1:${httpPorts[id]}@127.0.0.1:${outPorts[id]}`).join(',');
  const argsOf = (id: number) => [...clusterArgs(kafka.bootstrap, id), '--http-port', String(httpPorts[id]),
    '--kafka-out-port', String(outPorts[id]), '--cluster-nodes', nodes, '--cluster-replicas', '1', '--cluster-secret', SECRET];
  const a = await startServer({ args: argsOf(0) });
  servers.push(a);
  // The same project (id and keys) on node 1, through the shared metadata topic.
  const b = await startServer({ orgKey: a.orgKey, args: argsOf(1) });
  servers.push(b);
  await Promise.all([caughtUp(a), caughtUp(b)]);

  const assignment = new Assignment([{ id: 0, url: '' }, { id: 1, url: '' }], 1, 12, 'tally.events');
  const ownerOf = (name: string) => assignment.ownersOf(assignment.partitionOf(`${a.projectId}/${name}`))[0]!.id;
  const names = Array.from({ length: 64 }, (_, i) => `c${i}`);
  const on0 = names.find((c) => ownerOf(c) === 0)!;
  const on1 = names.find((c) => ownerOf(c) === 1)!;
  // Half of each collection written through each node, one acknowledged batch after the other.
  const half = PER_COLLECTION / 2;
  for (const collection of [on0, on1]) {
    await write(a, collection, 0, half);
    await write(b, collection, half, PER_COLLECTION);
  }
  t.ok(await eventually(async () => (await countOf(a, on0)) === PER_COLLECTION && (await countOf(a, on1)) === PER_COLLECTION, 20_000), 'both stored');

  const sasl = { mechanism: 'plain' as const, username: a.projectId, password: a.keys.read };
  const viaNode0: KafkaConfig = { clientId: 'outbound-test', brokers: [`127.0.0.1:${outPorts[0]}`], sasl };

  await t.test('node 0 shows the cluster and refuses to serve what it does not store', async (t) => {
    const raw = await RawClient.connect(outPorts[0]!);
    t.teardown(() => raw.socket.destroy());
    await raw.authenticate(a.projectId, a.keys.read);
    raw.send(ApiKey.Metadata, 1, { topics: [{ name: on0 }, { name: on1 }] });
    const meta = (await raw.response(ApiKey.Metadata, 1)).body;
    t.same(meta.brokers.map((x: any) => [x.node_id, x.host, x.port]), [[0, '127.0.0.1', outPorts[0]], [1, '127.0.0.1', outPorts[1]]], 'every node a broker');
    t.same(meta.topics.map((x: any) => [x.name, x.partitions[0].leader_id, x.partitions[0].replica_nodes]), [[on0, 0, [0]], [on1, 1, [1]]],
      'each collection led by the node that stores it');
    raw.send(ApiKey.ListOffsets, 1, { replica_id: -1, topics: [{ name: on1, partitions: [{ partition_index: 0, timestamp: -1 }] }, { name: on0, partitions: [{ partition_index: 0, timestamp: -1 }] }] });
    const offsets = (await raw.response(ApiKey.ListOffsets, 1)).body;
    t.same(offsets.topics.map((x: any) => [x.partitions[0].error_code, x.partitions[0].offset]), [[NOT_LEADER_OR_FOLLOWER, -1], [0, PER_COLLECTION]]);
    raw.send(ApiKey.Fetch, 4, { replica_id: -1, max_wait_ms: 0, min_bytes: 1, max_bytes: 1 << 20, isolation_level: 0, topics: [
      { topic: on1, partitions: [{ partition: 0, fetch_offset: 0, partition_max_bytes: 1 << 20 }] }] });
    const fetched = (await raw.response(ApiKey.Fetch, 4)).body;
    t.equal(fetched.responses[0].partitions[0].error_code, NOT_LEADER_OR_FOLLOWER, 'Fetch of node 1\'s collection: 6');
    t.equal(fetched.responses[0].partitions[0].records.length, 0);
    // One coordinator per group, named alike by both nodes; the other refuses the group's APIs.
    const coordinatorOf = async (port: number) => {
      const c = await RawClient.connect(port);
      await c.authenticate(a.projectId, a.keys.read);
      c.send(ApiKey.FindCoordinator, 1, { key: 'g-outbound', key_type: 0 });
      const found = (await c.response(ApiKey.FindCoordinator, 1)).body;
      c.socket.destroy();
      return [found.error_code, found.node_id, found.port];
    };
    const coordinator = await coordinatorOf(outPorts[0]!);
    t.same(await coordinatorOf(outPorts[1]!), coordinator, 'both nodes name the same coordinator');
    const other = coordinator[1] === 0 ? outPorts[1]! : outPorts[0]!;
    const wrong = await RawClient.connect(other);
    t.teardown(() => wrong.socket.destroy());
    await wrong.authenticate(a.projectId, a.keys.read);
    wrong.send(ApiKey.OffsetFetch, 1, { group_id: 'g-outbound', topics: [{ name: on0, partition_indexes: [0] }] });
    t.equal((await wrong.response(ApiKey.OffsetFetch, 1)).body.topics[0].partitions[0].error_code, NOT_COORDINATOR);
  });

  await t.test('a kafkajs consumer group bootstrapped on node 0 reads both collections in order and resumes', async (t) => {
    const enough = (n: number) => (got: Map<string, Read[]>) => [...got.values()].every((records) => records.length >= n);
    const got = await consume(viaNode0, 'g-outbound', [on0, on1], enough(PER_COLLECTION));
    t.same(ns(got.get(on1)!), range(0, PER_COLLECTION), `every event of ${on1} (stored on node 1), in order`);
    t.same(ns(got.get(on0)!), range(0, PER_COLLECTION), `every event of ${on0} (stored on node 0), in order`);
    t.ok(got.get(on1)!.every((r) => r.key === (JSON.parse(r.value) as { svc: { id: string } }).svc.id), 'keys are svc.id');

    await write(b, on1, PER_COLLECTION, PER_COLLECTION + 3);
    await write(a, on0, PER_COLLECTION, PER_COLLECTION + 2);
    const more = await consume(viaNode0, 'g-outbound', [on0, on1], (g) => g.get(on1)!.length >= 3 && g.get(on0)!.length >= 2);
    t.same(ns(more.get(on1)!), range(PER_COLLECTION, PER_COLLECTION + 3), 'the group resumed after its commits (node 1\'s collection)');
    t.same(ns(more.get(on0)!), range(PER_COLLECTION, PER_COLLECTION + 2), 'and node 0\'s');
  });

  await t.test('kcat bootstrapped on node 0 reads node 1\'s collection', { skip: available('kcat', ['-V']) ? false : 'kcat is not installed' }, async (t) => {
    const out = await run('kcat', ['-C', '-b', `127.0.0.1:${outPorts[0]}`, '-X', 'security.protocol=SASL_PLAINTEXT', '-X', 'sasl.mechanisms=PLAIN',
      '-X', `sasl.username=${a.projectId}`, '-X', `sasl.password=${a.keys.read}`, '-t', on1, '-o', 'beginning', '-e', '-f', '%s\n'], undefined, 40_000);
    t.equal(out.code, 0, out.stderr);
    t.same(out.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { n: number }).n), range(0, PER_COLLECTION + 3));
  });

  await t.test('the real events topic is readable by a plain consumer', async (t) => {
    const total = 2 * PER_COLLECTION + 5;
    const got = await consume({ clientId: 'outbound-test', brokers: [...kafka.bootstrap] }, 'g-real', ['tally.events'], (g) => g.get('tally.events')!.length >= total);
    const of1 = got.get('tally.events')!.filter((r) => r.key === `${a.projectId}/${on1}`);
    t.same(ns(of1), range(0, PER_COLLECTION + 3), 'key <project>/<collection>, value the stamped event, in order');
    const stamped = JSON.parse(of1[0]!.value);
    t.match(stamped, { tag: on1, svc: { timestamp: String, created_at: String } });
    t.equal(stamped.svc.id, undefined, 'svc.id is given where the event is stored');
  });
});
