/**
 * How fast does Tally ingest over HTTP with fsync on? Starts the real server on a temporary data dir,
 * then runs (1) batched ingest: 5,000-event batches over a few keep-alive connections and (2) single
 * event POSTs at concurrency 64, each bounded in time and count, and prints events/s and p50/p99
 * latency beside the goals of issue 2. The client is bench/raw-http.ts's minimal HTTP/1.1 client.
 *
 * `--only NAME[,NAME]` runs just those phases: batched, enriched, http, single, heavy.
 *
 *   node dist/bench/ingest.js [--seconds 10] [--batch-connections 4] [--concurrency 64] [--only enriched]
 */
import { startServer } from '../test/helpers/server.js';
import { benchArgs } from './args.js';
import { enrichedEvent, plainEvent as event } from './events.js';
import { processCpuSeconds, rawRequest as request, sendAll, type Sent } from './raw-http.js';

const GOAL_BATCH_EVENTS_PER_S = 200_000;
const GOAL_SINGLE_REQUESTS_PER_S = 30_000;
const GOAL_ENRICHED_EVENTS_PER_S = 50_000;
/** Enriched batches at most this many times slower than plain ones (issue 10). */
const GOAL_ENRICHED_SLOWDOWN_MAX = 2;
const BATCH_EVENTS = 5_000;
/** Upper bound on requests of one phase, whatever the duration. */
const PHASE_REQUESTS_MAX = 2_000_000;

const PHASES = ['batched', 'enriched', 'http', 'single', 'heavy'] as const;
const args = benchArgs({
  seconds: { arg: 'S' }, 'batch-connections': { arg: 'N' }, concurrency: { arg: 'N' }, only: { arg: 'NAME[,NAME]' },
});
const ONLY: readonly string[] | null = args.list('only', PHASES);
const runs = (phase: typeof PHASES[number]) => ONLY === null || ONLY.includes(phase);

interface PhaseResult extends Sent {
  /** CPU seconds of this process (the load generator) and of the server during the phase. */
  readonly clientCpuS: number;
  readonly serverCpuS: number;
}

let serverPid: number | undefined;
/** Plain batched events/s, once that phase has run: the enriched phase is compared with it. */
let plainRate = 0;

/** Runs `connections` sockets, each with one request in flight, until `seconds` pass. */
async function runPhase(
  port: number, connections: number, seconds: number, requests: readonly Buffer[], okStatus: number,
): Promise<PhaseResult> {
  let sent = 0;
  const deadline = performance.now() + seconds * 1000;
  const okPrefix = `HTTP/1.1 ${okStatus}`;
  const next = () => performance.now() >= deadline || sent >= PHASE_REQUESTS_MAX ? null : requests[sent++ % requests.length]!;
  const clientBefore = process.cpuUsage();
  const serverBefore = processCpuSeconds(serverPid);
  const result = await sendAll(port, connections, next, (head) => head.startsWith(okPrefix));
  const client = process.cpuUsage(clientBefore);
  return { ...result, clientCpuS: (client.user + client.system) / 1e6, serverCpuS: processCpuSeconds(serverPid) - serverBefore };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function report(name: string, result: PhaseResult, eventsPerRequest: number, goal: string, goalValue: number): void {
  const rate = (result.requests * eventsPerRequest) / result.seconds;
  const requestRate = result.requests / result.seconds;
  const measured = eventsPerRequest === 1 ? requestRate : rate;
  console.log(`${name}: ${result.requests} requests (${result.failures} failed) in ${result.seconds.toFixed(1)} s`);
  console.log(`  ${Math.round(rate).toLocaleString('en')} events/s, ${Math.round(requestRate).toLocaleString('en')} requests/s`);
  console.log(`  latency p50 ${percentile(result.latenciesMs, 50).toFixed(2)} ms, p99 ${percentile(result.latenciesMs, 99).toFixed(2)} ms`);
  const share = (cpuS: number) => `${Math.round((100 * cpuS) / result.seconds)}%`;
  console.log(`  CPU of the 2 cores (200% = both): load generator ${share(result.clientCpuS)}, server ${share(result.serverCpuS)}` +
    ` (${((1e6 * result.serverCpuS) / Math.max(1, result.requests)).toFixed(0)} µs of server CPU per request)`);
  if (goalValue > 0) console.log(`  goal ${goal}: ${measured >= goalValue ? 'met' : 'NOT met'}`);
  else console.log(`  (${goal})`);
}

async function main(): Promise<void> {
  const seconds = args.positive('seconds', 10);
  const batchConnections = args.integer('batch-connections', 4);
  const concurrency = args.integer('concurrency', 64);
  const serverArgs = process.env.TALLY_SERVER_ARGS?.split(' ').filter((arg) => arg !== '') ?? [];
  const server = await startServer({ args: serverArgs });
  serverPid = server.child.pid;
  const port = Number(new URL(server.url).port);
  const host = `127.0.0.1:${port}`;
  const base = `/3.0/projects/${server.projectId}/events`;
  try {
    if (runs('batched')) {
      const batches = Array.from({ length: 4 }, (_, b) => request(host, base, server.keys.write,
        JSON.stringify({ bench_batch: Array.from({ length: BATCH_EVENTS }, (_, i) => event(b * BATCH_EVENTS + i)) })));
      console.log(`batch body ${batches[0]!.length.toLocaleString('en')} bytes, ${BATCH_EVENTS} events; fsync on`);
      const batched = await runPhase(port, batchConnections, seconds, batches, 200);
      plainRate = (batched.requests * BATCH_EVENTS) / batched.seconds;
      report(`batched (${batchConnections} connections)`, batched, BATCH_EVENTS, `≥ ${GOAL_BATCH_EVENTS_PER_S.toLocaleString('en')} events/s`, GOAL_BATCH_EVENTS_PER_S);
    }

    if (runs('enriched')) {
      const enriched = Array.from({ length: 4 }, (_, b) => request(host, base, server.keys.write,
        JSON.stringify({ bench_enriched: Array.from({ length: BATCH_EVENTS }, (_, i) => enrichedEvent(b * BATCH_EVENTS + i)) })));
      console.log(`enriched batch body ${enriched[0]!.length.toLocaleString('en')} bytes, ${BATCH_EVENTS} events; fsync on`);
      const withAddons = await runPhase(port, batchConnections, seconds, enriched, 200);
      report(`batched, all five add-ons (${batchConnections} connections)`, withAddons, BATCH_EVENTS,
        `≥ ${GOAL_ENRICHED_EVENTS_PER_S.toLocaleString('en')} events/s`, GOAL_ENRICHED_EVENTS_PER_S);
      if (plainRate > 0) {
        const times = plainRate / ((withAddons.requests * BATCH_EVENTS) / withAddons.seconds);
        console.log(`  plain events go ${times.toFixed(2)}x as fast; goal (issue 10) ≤ ${GOAL_ENRICHED_SLOWDOWN_MAX}x: ${times <= GOAL_ENRICHED_SLOWDOWN_MAX ? 'met' : 'NOT met'}`);
      }
    }

    if (runs('http')) {
      // The HTTP layer alone: same requests with a wrong key are answered 401 before any engine write.
      const rejected = Array.from({ length: 16 }, (_, i) =>
        request(host, `${base}/bench_single`, 'f'.repeat(64), JSON.stringify(event(i))));
      const httpOnly = await runPhase(port, concurrency, Math.min(seconds, 5), rejected, 401);
      report('http layer only (401, no write)', httpOnly, 1, 'no goal: the ceiling of this client and machine', 0);
    }

    const singles = Array.from({ length: 256 }, (_, i) =>
      request(host, `${base}/bench_single`, server.keys.write, JSON.stringify(event(i))));
    let acknowledged = 0;
    let singleP99 = NaN;
    if (runs('single')) {
      const single = await runPhase(port, concurrency, seconds, singles, 201);
      report(`single (concurrency ${concurrency})`, single, 1, `≥ ${GOAL_SINGLE_REQUESTS_PER_S.toLocaleString('en')} requests/s`, GOAL_SINGLE_REQUESTS_PER_S);
      acknowledged += single.requests - single.failures;
      singleP99 = percentile(single.latenciesMs, 99);
    }

    if (runs('heavy')) {
      // Write latency while heavy queries run: queries execute on worker threads, never on the thread
      // that serves writes, so the single-event p99 should barely move.
      let queries = 0;
      let querying = true;
      const heavy = (async () => {
        while (querying) {
          await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/count_unique`, {
            method: 'POST', headers: { Authorization: server.keys.read, 'Content-Type': 'application/json' },
            body: JSON.stringify({ event_collection: 'bench_batch', target_property: 'user_id', timeframe: 'this_1_days',
              group_by: 'page', interval: 'hourly', filters: [{ property_name: 'price', operator: 'gt', property_value: 10 }] }),
          }).then((r) => r.arrayBuffer());
          queries++;
        }
      })();
      const underQuery = await runPhase(port, concurrency, seconds, singles, 201);
      querying = false;
      await heavy;
      report(`single while heavy queries run (${queries} queries)`, underQuery, 1,
        `compare with the plain single phase: p99 ${singleP99.toFixed(2)} ms`, 0);
      acknowledged += underQuery.requests - underQuery.failures;
    }

    if (runs('single') || runs('heavy')) {
      const count = await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/count`, {
        method: 'POST', headers: { Authorization: server.keys.read, 'Content-Type': 'application/json' },
        body: JSON.stringify({ event_collection: 'bench_single', timeframe: 'this_1_days' }),
      }).then((r) => r.json() as Promise<{ result?: number }>);
      console.log(`check: ${count.result} single events stored, ${acknowledged} acknowledged`);
    }
  } finally {
    await server.stop();
    server.cleanup();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
