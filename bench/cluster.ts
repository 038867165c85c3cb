/**
 * Write throughput in cluster mode (Kafka as the write-ahead log) beside single-node mode, at a
 * small scale: one real Kafka broker (scripts/kafka.mjs) and one Tally node on the same 2 cores.
 * For each mode: batched writes (BATCH_EVENTS-event batches, a few connections) and single-event
 * POSTs (concurrency 64), each for `--seconds`; in cluster mode an acknowledgement means Kafka has
 * the events, so the bench also waits until the node's consumer has stored them all and reports
 * the stored rate (acknowledged events / (phase + catch-up time)).
 *
 *   node dist/bench/cluster.js [--seconds 8] [--batch-connections 2] [--concurrency 64]
 */
import { startKafka } from '../test/helpers/kafka-cluster.js';
import { startServer, type TestServer } from '../test/helpers/server.js';
import { plainEvent as event } from './events.js';
import { processCpuSeconds, rawRequest as request, sendAll } from './raw-http.js';

const BATCH_EVENTS = 1_000;

function flag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(process.argv[index + 1]);
}

async function count(server: TestServer, collection: string): Promise<number> {
  const response = await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/count`, {
    method: 'POST', headers: { Authorization: server.keys.read, 'Content-Type': 'application/json' },
    body: JSON.stringify({ event_collection: collection, timeframe: 'this_1_days' }),
  });
  return ((await response.json()) as { result?: number }).result ?? 0;
}

interface Row {
  mode: string;
  phase: string;
  acknowledged: number;
  ackRate: number;
  storedRate: number;
  p50: number;
  p99: number;
  serverCpu: number;
}

async function phase(
  server: TestServer, mode: string, name: string, collection: string, connections: number, seconds: number,
  requests: readonly Buffer[], okStatus: number, eventsPerRequest: number,
): Promise<Row> {
  const port = Number(new URL(server.url).port);
  const before = await count(server, collection);
  const cpuBefore = processCpuSeconds(server.child.pid);
  let sent = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const okPrefix = `HTTP/1.1 ${okStatus}`;
  const result = await sendAll(port, connections, () => (performance.now() >= deadline ? null : requests[sent++ % requests.length]!),
    (head) => head.startsWith(okPrefix));
  if (result.failures > 0) throw new Error(`${mode} ${name}: ${result.failures} failed: ${result.firstFailure}`);
  const acknowledged = result.requests * eventsPerRequest;
  // Until every acknowledged event is stored (at once on a single node; the consumer's lag in a cluster).
  while ((await count(server, collection)) - before < acknowledged) await new Promise((r) => setTimeout(r, 50));
  const stored = (performance.now() - started) / 1000;
  const sorted = result.latenciesMs.slice().sort();
  const pick = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  return {
    mode, phase: name, acknowledged,
    ackRate: acknowledged / result.seconds,
    storedRate: acknowledged / stored,
    p50: pick(50), p99: pick(99),
    serverCpu: (processCpuSeconds(server.child.pid) - cpuBefore) / stored,
  };
}

async function main(): Promise<void> {
  const seconds = flag('seconds', 8);
  const batchConnections = flag('batch-connections', 2);
  const concurrency = flag('concurrency', 64);
  const kafka = await startKafka({ nodes: 1 });
  const rows: Row[] = [];
  try {
    for (const mode of ['single', 'cluster']) {
      const args = mode === 'cluster' ? ['--cluster-brokers', kafka.bootstrap.join(','), '--node-id', '1'] : [];
      const server = await startServer({ args });
      try {
        const host = new URL(server.url).host;
        const base = `/3.0/projects/${server.projectId}/events`;
        const batches = Array.from({ length: 4 }, (_, b) => request(host, base, server.keys.write,
          JSON.stringify({ bench_batch: Array.from({ length: BATCH_EVENTS }, (_, i) => event(b * BATCH_EVENTS + i)) })));
        const singles = Array.from({ length: 256 }, (_, i) =>
          request(host, `${base}/bench_single`, server.keys.write, JSON.stringify(event(i))));
        rows.push(await phase(server, mode, `batched ${BATCH_EVENTS} (${batchConnections} conn.)`, 'bench_batch',
          batchConnections, seconds, batches, 200, BATCH_EVENTS));
        rows.push(await phase(server, mode, `single (concurrency ${concurrency})`, 'bench_single',
          concurrency, seconds, singles, 201, 1));
      } finally {
        await server.stop();
        server.cleanup();
      }
    }
  } finally {
    await kafka.stop();
  }
  const n = (x: number) => Math.round(x).toLocaleString('en');
  console.log('| mode | phase | acknowledged events/s | stored events/s | p50 / p99 ms | server CPU (of 2 cores) |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.mode} | ${r.phase} | ${n(r.ackRate)} | ${n(r.storedRate)} | ${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} | ${Math.round(100 * r.serverCpu)}% |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
