/**
 * Saved and cached queries, datasets and asynchronous extraction jobs over two Tally nodes on one
 * real Kafka broker, each storing only its partitions (`--cluster-nodes`, R = 1): asked of node 0
 * for a collection stored on node 1, each answers what a single (non-cluster) node holding the same
 * events answers. With node 1 stopped: a saved query's result and a dataset's results are 503
 * naming the partition, a cached query is still served from node 0's cache, a job run on node 1 is
 * 503 naming the node. The assignment's inputs are kept in the metadata topic: a node started with
 * other --cluster-nodes or --cluster-replicas stops with a sentence naming what differs, and
 * --cluster-reassign replaces them.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Assignment } from '../../server/cluster/assignment.js';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { caughtUp, clusterArgs, stopAll } from '../helpers/cluster.js';

const SECRET = 'a-test-cluster-secret-0123456789';
const TIMEFRAME = { start: '2024-05-01T00:00:00Z', end: '2024-05-10T00:00:00Z' };
const EVENTS = 60;

let kafka: RealKafka;
const servers: TestServer[] = [];
let ports: number[] = [];
let nodes = '';
const argsOf = (id: number, list = nodes, replicas = '1') => [...clusterArgs(kafka.bootstrap, id), '--http-port', String(ports[id] ?? 0),
  '--cluster-nodes', list, '--cluster-replicas', replicas, '--cluster-secret', SECRET];
t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
});
t.teardown(() => stopAll(servers, kafka));

function eventsOf(collection: string): Record<string, unknown>[] {
  return Array.from({ length: EVENTS }, (_, i) => ({
    id: `${collection}-${String(i).padStart(3, '0')}`, n: i, price: ((i * 37) % 101) * 1.25,
    city: ['Paris', 'Oslo', 'Lima'][i % 3], user: `u${(i * 7) % 13}`,
    svc: { timestamp: new Date(Date.UTC(2024, 4, 2 + (i % 4), (i * 5) % 24, i % 60)).toISOString() },
  }));
}

const path = (server: TestServer, rest: string) => `/3.0/projects/${server.projectId}/${rest}`;

/** Defines a saved query (and a cached one) and a dataset on `server`. */
async function define(t: Test, server: TestServer, collection: string): Promise<void> {
  const query = { analysis_type: 'sum', event_collection: collection, timeframe: TIMEFRAME, target_property: 'price', group_by: 'city' };
  for (const [name, body] of [
    ['spent', { query }],
    ['spent-cached', { query: { ...query, analysis_type: 'count_unique', target_property: 'user' }, refresh_rate: 14_400 }],
  ] as const) {
    const r = await client(server.url).send('PUT', path(server, `queries/saved/${name}`), { key: server.keys.master, body });
    t.equal(r.status, 201, `saved query ${name}: ${r.text}`);
  }
  const dataset = { display_name: 'per city', index_by: 'city',
    query: { analysis_type: 'count', event_collection: collection, timeframe: TIMEFRAME, interval: 'daily', timezone: 'UTC' } };
  const r = await client(server.url).send('PUT', path(server, 'datasets/per-city'), { key: server.keys.master, body: dataset });
  t.equal(r.status, 201, `dataset: ${r.text}`);
}

/** GET until not 503 (a cached query not run yet, a dataset bootstrapping). */
async function settled(server: TestServer, rest: string): Promise<{ status: number; body: any; text: string }> {
  let r = await client(server.url).get(path(server, rest), { key: server.keys.read });
  await eventually(async () => {
    r = await client(server.url).get(path(server, rest), { key: server.keys.read });
    return r.status !== 503;
  }, 20_000);
  return r;
}

/** Submits an async extraction, waits for its job, and reads its events (sorted by id). */
async function extractAsync(server: TestServer, collection: string, asked: TestServer = server): Promise<{ id: string; events: any[] }> {
  const submit = await client(server.url).post(path(server, 'queries/extraction'), {
    key: server.keys.read, body: { event_collection: collection, timeframe: TIMEFRAME, property_names: ['id', 'n', 'city'], async: true } });
  if (submit.status !== 202) throw new Error(`submit: ${submit.status} ${submit.text}`);
  const id = submit.body.result.id as string;
  const done = await eventually(async () => {
    const job = await client(asked.url).get(path(asked, `queries/extraction/jobs/${id}`), { key: asked.keys.read });
    return job.body?.status === 'done';
  }, 20_000);
  if (!done) throw new Error(`job ${id} not done`);
  const result = await client(asked.url).get(path(asked, `queries/extraction/jobs/${id}/result`), { key: asked.keys.read });
  if (result.status !== 200) throw new Error(`result: ${result.status} ${result.text}`);
  const events = result.text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { id: string })
    .sort((x, y) => x.id.localeCompare(y.id));
  return { id, events };
}

t.test('saved, cached, datasets and extraction jobs of another node\'s collection answer as one node', async (t) => {
  ports = [await freePort(), await freePort(), await freePort()];
  nodes = ports.slice(0, 2).map((port, id) => `${id}=http://127.0.0.1:${port}`).join(',');
  const a = await startServer({ args: argsOf(0) });
  servers.push(a);
  const b = await startServer({ orgKey: a.orgKey, args: argsOf(1) });
  servers.push(b);
  const reference = await startServer();
  servers.push(reference);
  await Promise.all([caughtUp(a), caughtUp(b)]);
  const assignment = new Assignment([{ id: 0, url: '' }, { id: 1, url: '' }], 1, 12, 'tally.events');
  const partitionOf = (collection: string) => assignment.partitionOf(`${a.projectId}/${collection}`);
  const ownerOf = (collection: string) => assignment.ownersOf(partitionOf(collection))[0]!.id;
  const names = Array.from({ length: 64 }, (_, i) => `c${i}`);
  const on1 = names.find((c) => ownerOf(c) === 1)!;

  // The events written through node 0 (Kafka takes them to node 1) and to the reference.
  for (const [server, key] of [[a, a.keys.write], [reference, reference.keys.write]] as const) {
    const r = await client(server.url).post(path(server, 'events'), { key, body: { [on1]: eventsOf(on1) } });
    t.equal(r.status, 200);
  }
  t.ok(await eventually(async () => (await client(a.url).post(path(a, 'queries/count'), {
    key: a.keys.read, body: { event_collection: on1, timeframe: TIMEFRAME } })).body?.result === EVENTS, 20_000), `${on1} stored on node 1`);

  await define(t, a, on1);
  await define(t, reference, on1);
  for (const rest of ['queries/saved/spent/result', 'queries/saved/spent-cached/result',
    'datasets/per-city/results?index_by=Paris&timeframe=' + encodeURIComponent(JSON.stringify(TIMEFRAME)),
    'datasets/per-city/results?index_by=Lima&timeframe=' + encodeURIComponent(JSON.stringify(TIMEFRAME))]) {
    const expected = await settled(reference, rest);
    t.equal(expected.status, 200, `reference ${rest}: ${expected.text.slice(0, 200)}`);
    const got = await settled(a, rest);
    t.equal(got.status, 200, `node 0 ${rest}: ${got.text.slice(0, 300)}`);
    t.same(got.body?.result, expected.body.result, `node 0: ${rest} of ${on1} (stored on node 1)`);
    t.not(JSON.stringify(expected.body.result), JSON.stringify([]), 'the reference counts something');
  }

  const expected = await extractAsync(reference, on1);
  t.equal(expected.events.length, EVENTS);
  const got = await extractAsync(a, on1);
  t.same(got.events, expected.events, 'node 0: an async extraction job of node 1\'s collection');
  const viaOther = await extractAsync(a, on1, b);
  t.same(viaOther.events, expected.events, 'a job submitted on node 0, read on node 1');

  // Node 1 down.
  t.equal(await b.stop(), 0);
  const saved = await client(a.url).get(path(a, 'queries/saved/spent/result'), { key: a.keys.read });
  t.equal(saved.status, 503, saved.text);
  t.match(saved.body, { error_code: 'ServiceUnavailableError', message: new RegExp(`^Partition ${partitionOf(on1)} of tally\\.events is unavailable`) });
  const dataset = await client(a.url).get(path(a, `datasets/per-city/results?index_by=Paris&timeframe=${encodeURIComponent(JSON.stringify(TIMEFRAME))}`), { key: a.keys.read });
  t.equal(dataset.status, 503, dataset.text);
  t.match(dataset.body, { error_code: 'ServiceUnavailableError', message: new RegExp(`^Partition ${partitionOf(on1)} of tally\\.events is unavailable`) });
  const cached = await client(a.url).get(path(a, 'queries/saved/spent-cached/result'), { key: a.keys.read });
  t.equal(cached.status, 200, 'a cached query is served from the node\'s own cache');
  const job = await client(a.url).get(path(a, `queries/extraction/jobs/${got.id}`), { key: a.keys.read });
  t.equal(job.status, 503, job.text);
  t.match(job.body, { error_code: 'ServiceUnavailableError', message: /node 1 .*did not answer/ });
});

/** A start that must fail: rejects with the node's exit and output. */
async function failedStart(t: Test, orgKey: string, args: string[]): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-test-'));
  try {
    const server = await startServer({ dataDir, orgKey, args });
    servers.push(server);
    t.fail('the node started');
    return '';
  } catch (error) {
    return (error as Error).message;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

t.test('a node started with another assignment than the cluster\'s stops; --cluster-reassign replaces it', async (t) => {
  const orgKey = servers[0]!.orgKey;
  const three = ports.map((port, id) => `${id}=http://127.0.0.1:${port}`).join(',');
  const more = await failedStart(t, orgKey, argsOf(2, three));
  t.match(more, /server exited with [1-9]\d* before ready/, 'the process exits non-zero');
  t.match(more, /--cluster-nodes differs from the cluster's assignment in tally\.meta \(nodes 0,1 there, 0,1,2 here\); to change the cluster's assignment, start one node with --cluster-reassign/);
  const replicas = await failedStart(t, orgKey, argsOf(0, nodes, '2'));
  t.match(replicas, /--cluster-replicas differs from the cluster's assignment in tally\.meta \(1 there, 2 here\)/);
  const moved = nodes.replace(`1=http://127.0.0.1:${ports[1]}`, `1=http://127.0.0.2:${ports[1]}`);
  t.match(await failedStart(t, orgKey, argsOf(0, moved)), /\(node 1 at http:\/\/127\.0\.0\.1:\d+ there, at http:\/\/127\.0\.0\.2:\d+ here\)/);

  const added = await startServer({ orgKey, args: [...argsOf(2, three), '--cluster-reassign'] });
  servers.push(added);
  t.match(added.stderr(), /cluster: replaced this node's assignment in the metadata topic/);
  const old = await failedStart(t, orgKey, argsOf(1));
  t.match(old, /--cluster-nodes differs from the cluster's assignment in tally\.meta \(nodes 0,1,2 there, 0,1 here\)/, 'the reassigned record is the cluster\'s now');
  const same = await startServer({ orgKey, args: argsOf(1, three) });
  servers.push(same);
  t.notMatch(same.stderr(), /assignment in the metadata topic/, 'the same assignment: nothing published');
});
