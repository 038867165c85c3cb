/**
 * Cluster mode (Kafka as the write-ahead log) beside single-node mode, at a small scale: one real
 * Kafka broker (scripts/kafka.mjs) and one or three Tally nodes on the same machine. A cost figure,
 * not a scaling one: on 2 cores three nodes and the broker share what one node had.
 *
 * Modes (`--modes`, default all):
 *   single    one node, no Kafka;
 *   cluster   one node on the broker (every partition stored by it);
 *   cluster3  three nodes, --cluster-replicas 2: each partition stored by two of them, writes and
 *             queries spread over the three.
 * For each mode: batched writes (BATCH_EVENTS-event batches over COLLECTIONS collections, a few
 * connections per node) and single-event POSTs (`--concurrency` in flight, spread over the nodes),
 * each for `--seconds`. In cluster mode an acknowledgement means Kafka has the events, so the bench
 * also waits until the owners' consumers stored them all and reports the stored rate
 * (acknowledged events / (phase + catch-up time)) and the CPU of every node per event.
 * Then the query mix (count, count_unique, sum, median, count by group), each asked `--runs`
 * times of node 0: in cluster3 for a collection node 0 stores (answered locally) and for one it
 * does not (answered by an owner as a partial state, merged on node 0): the latency the fan-out adds.
 *
 *   node dist/bench/cluster.js [--seconds 8] [--batch-connections 2] [--concurrency 64] [--runs 15]
 *                              [--modes single,cluster,cluster3]
 */
import { parseArgs } from 'node:util';
import { Assignment } from '../server/cluster/assignment.js';
import { caughtUp, clusterArgs } from '../test/helpers/cluster.js';
import { startKafka, type RealKafka } from '../test/helpers/kafka-cluster.js';
import { freePort, startServer, type TestServer } from '../test/helpers/server.js';
import { plainEvent as event } from './events.js';
import { processCpuSeconds, rawRequest as request, sendAll } from './raw-http.js';

const BATCH_EVENTS = 1_000;
const COLLECTIONS = 12;
const PARTITIONS = 12;
const SECRET = 'bench-cluster-secret-0123456789';
const TIMEFRAME = 'this_1_days';

const { values: flags } = parseArgs({ options: {
  seconds: { type: 'string', default: '8' }, 'batch-connections': { type: 'string', default: '2' },
  concurrency: { type: 'string', default: '64' }, runs: { type: 'string', default: '15' },
  modes: { type: 'string', default: 'single,cluster,cluster3' },
} });
const seconds = Number(flags.seconds);
const batchConnections = Number(flags['batch-connections']);
const concurrency = Number(flags.concurrency);
const runs = Number(flags.runs);

async function ask(server: TestServer, analysis: string, body: Record<string, unknown>): Promise<unknown> {
  const response = await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/${analysis}`, {
    method: 'POST', headers: { Authorization: server.keys.read, 'Content-Type': 'application/json' },
    body: JSON.stringify({ timeframe: TIMEFRAME, ...body }),
  });
  const json = (await response.json()) as { result?: unknown };
  if (response.status !== 200) throw new Error(`${analysis} ${JSON.stringify(body)}: ${response.status} ${JSON.stringify(json)}`);
  return json.result;
}

async function countAll(server: TestServer, prefix: string): Promise<number> {
  let total = 0;
  for (let c = 0; c < COLLECTIONS; c++) total += (await ask(server, 'count', { event_collection: `${prefix}${c}` })) as number;
  return total;
}

interface Row {
  mode: string;
  phase: string;
  acknowledged: number;
  ackRate: number;
  storedRate: number;
  p50: number;
  p99: number;
  /** CPU seconds of all nodes a second, and µs of all nodes' CPU per event. */
  serverCpu: number;
  cpuPerEventUs: number;
}

function percentile(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function phase(
  nodes: readonly TestServer[], mode: string, name: string, prefix: string, connectionsPerNode: number,
  requestsOf: (node: TestServer) => readonly Buffer[], okStatus: number, eventsPerRequest: number,
): Promise<Row> {
  const before = await countAll(nodes[0]!, prefix);
  const cpu = () => nodes.reduce((sum, node) => sum + processCpuSeconds(node.child.pid), 0);
  const cpuBefore = cpu();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const okPrefix = `HTTP/1.1 ${okStatus}`;
  const results = await Promise.all(nodes.map((node) => {
    const requests = requestsOf(node);
    let sent = 0;
    return sendAll(Number(new URL(node.url).port), connectionsPerNode,
      () => (performance.now() >= deadline ? null : requests[sent++ % requests.length]!), (head) => head.startsWith(okPrefix));
  }));
  const failed = results.find((r) => r.failures > 0);
  if (failed) throw new Error(`${mode} ${name}: ${failed.failures} failed: ${failed.firstFailure}`);
  const acknowledged = results.reduce((sum, r) => sum + r.requests, 0) * eventsPerRequest;
  // Until every acknowledged event is stored (at once on a single node; the consumers' lag in a cluster).
  while ((await countAll(nodes[0]!, prefix)) - before < acknowledged) await new Promise((r) => setTimeout(r, 50));
  const stored = (performance.now() - started) / 1000;
  const latencies = Float64Array.from(results.flatMap((r) => [...r.latenciesMs])).sort();
  const cpuSeconds = cpu() - cpuBefore;
  return {
    mode, phase: name, acknowledged,
    ackRate: acknowledged / Math.max(...results.map((r) => r.seconds)),
    storedRate: acknowledged / stored,
    p50: percentile(latencies, 50), p99: percentile(latencies, 99),
    serverCpu: cpuSeconds / stored, cpuPerEventUs: (cpuSeconds / acknowledged) * 1e6,
  };
}

async function writes(nodes: readonly TestServer[], mode: string): Promise<Row[]> {
  const batchesOf = (node: TestServer) => {
    const host = new URL(node.url).host;
    // A batch carries BATCH_EVENTS events over four collections, so every node's batches reach several partitions.
    return Array.from({ length: COLLECTIONS }, (_, b) => request(host, `/3.0/projects/${node.projectId}/events`, node.keys.write,
      JSON.stringify(Object.fromEntries(Array.from({ length: 4 }, (_, k) => [`bench_batch${(b + k * 3) % COLLECTIONS}`,
        Array.from({ length: BATCH_EVENTS / 4 }, (_, i) => event(b * BATCH_EVENTS + k * 1000 + i))])))));
  };
  const singlesOf = (node: TestServer) => {
    const host = new URL(node.url).host;
    return Array.from({ length: 256 }, (_, i) =>
      request(host, `/3.0/projects/${node.projectId}/events/bench_single${i % COLLECTIONS}`, node.keys.write, JSON.stringify(event(i))));
  };
  const perNode = (total: number) => Math.max(1, Math.round(total / nodes.length));
  return [
    await phase(nodes, mode, `batched ${BATCH_EVENTS} (${batchConnections} conn.)`, 'bench_batch', perNode(batchConnections),
      batchesOf, 200, BATCH_EVENTS),
    await phase(nodes, mode, `single (concurrency ${concurrency})`, 'bench_single', perNode(concurrency), singlesOf, 201, 1),
  ];
}

const MIX: ReadonlyArray<readonly [string, string, Record<string, unknown>]> = [
  ['count', 'count', {}],
  ['count_unique user_id', 'count_unique', { target_property: 'user_id' }],
  ['sum price', 'sum', { target_property: 'price' }],
  ['median price', 'median', { target_property: 'price' }],
  ['count by page', 'count', { group_by: 'page' }],
];

interface QueryRow {
  mode: string;
  query: string;
  /** Where node 0 found the collection: 'local' or 'fan-out'. */
  where: string;
  p50: number;
  p90: number;
}

async function queryMix(nodes: readonly TestServer[], mode: string, assignment: Assignment | undefined): Promise<QueryRow[]> {
  const first = nodes[0]!;
  const stores = (c: number) => !assignment || assignment.ownersOf(assignment.partitionOf(`${first.projectId}/bench_batch${c}`)).some((m) => m.id === 0);
  const targets: Array<[string, number]> = [];
  const local = Array.from({ length: COLLECTIONS }, (_, c) => c).find(stores);
  const remote = Array.from({ length: COLLECTIONS }, (_, c) => c).find((c) => !stores(c));
  if (local !== undefined) targets.push(['local', local]);
  if (remote !== undefined) targets.push(['fan-out', remote]);
  const rows: QueryRow[] = [];
  for (const [where, c] of targets) {
    for (const [name, analysis, body] of MIX) {
      const ms: number[] = [];
      for (let r = 0; r < runs; r++) {
        const started = performance.now();
        await ask(first, analysis, { event_collection: `bench_batch${c}`, ...body });
        ms.push(performance.now() - started);
      }
      ms.sort((x, y) => x - y);
      rows.push({ mode, query: name, where, p50: percentile(ms, 50), p90: percentile(ms, 90) });
    }
  }
  return rows;
}

async function startNodes(mode: string, kafka: RealKafka): Promise<{ nodes: TestServer[]; assignment?: Assignment }> {
  if (mode === 'single') return { nodes: [await startServer()] };
  if (mode === 'cluster') return { nodes: [await startServer({ args: clusterArgs(kafka.bootstrap, 1, 1000) })] };
  const ports = [await freePort(), await freePort(), await freePort()];
  const list = ports.map((port, id) => `${id}=http://127.0.0.1:${port}`).join(',');
  const argsOf = (id: number) => [...clusterArgs(kafka.bootstrap, id, 1000), '--http-port', String(ports[id]),
    '--cluster-nodes', list, '--cluster-replicas', '2', '--cluster-secret', SECRET, '--cluster-topic', 'bench3.events',
    // Topics of their own: the one-node mode's organization is in the default metadata topic.
    '--cluster-meta-topic', 'bench3.meta',
    '--cluster-partitions', String(PARTITIONS)];
  const nodes = [await startServer({ args: argsOf(0) })];
  // The same organization and project on every node, through the shared metadata topic.
  for (const id of [1, 2]) nodes.push(await startServer({ orgKey: nodes[0]!.orgKey, args: argsOf(id) }));
  await Promise.all(nodes.map((node) => caughtUp(node)));
  const members = ports.map((_, id) => ({ id, url: '' }));
  return { nodes, assignment: new Assignment(members, 2, PARTITIONS, 'bench3.events') };
}

async function main(): Promise<void> {
  const kafka = await startKafka({ nodes: 1 });
  const rows: Row[] = [];
  const queryRows: QueryRow[] = [];
  try {
    for (const mode of flags.modes!.split(',')) {
      const { nodes, assignment } = await startNodes(mode, kafka);
      try {
        rows.push(...await writes(nodes, mode));
        queryRows.push(...await queryMix(nodes, mode, assignment));
      } finally {
        for (const node of nodes) {
          await node.stop();
          node.cleanup();
        }
      }
    }
  } finally {
    await kafka.stop();
  }
  const n = (x: number) => Math.round(x).toLocaleString('en');
  console.log('| mode | phase | acknowledged events/s | stored events/s | p50 / p99 ms | nodes\' CPU (cores) | nodes\' CPU µs an event |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.mode} | ${r.phase} | ${n(r.ackRate)} | ${n(r.storedRate)} | ${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} | `
      + `${r.serverCpu.toFixed(2)} | ${r.cpuPerEventUs.toFixed(1)} |`);
  }
  console.log(`\nQueries asked of node 0 over one collection (${runs} runs each), p50 / p90 ms:\n`);
  console.log('| mode | query | where | p50 | p90 |');
  console.log('|---|---|---|---|---|');
  for (const r of queryRows) console.log(`| ${r.mode} | ${r.query} | ${r.where} | ${r.p50.toFixed(1)} | ${r.p90.toFixed(1)} |`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
