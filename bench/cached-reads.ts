/**
 * How fast are cached results read, as a dashboard reads them? Starts the real server, loads N
 * events over HTTP (5,000-event batches), defines a cached query (count by day with a group_by)
 * and a dataset (sum of price by country, daily), waits for both to be ready, then reads each
 * result R times over one keep-alive connection and prints p50/p99 beside the ad-hoc query it
 * replaces, and how long the dataset took to bootstrap.
 *
 *   node dist/bench/cached-reads.js [--events 1000000] [--reads 2000]
 */
import { startServer } from '../test/helpers/server.js';
import { benchArgs } from './args.js';
import { plainEvent } from './events.js';

const args = benchArgs({ events: { arg: 'N' }, reads: { arg: 'R' } });
const EVENTS = args.integer('events', 1_000_000);
const READS = args.integer('reads', 2_000);
const BATCH = 5_000;
const COUNTRIES = ['US', 'FR', 'DE', 'JP', 'BR', 'IN', 'GB', 'CA'];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function timed(url: string, key: string, times: number): Promise<{ p50: number; p99: number; status: number }> {
  const latencies: number[] = [];
  let status = 0;
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    const response = await fetch(url, { headers: { Authorization: key } });
    await response.arrayBuffer();
    latencies.push(performance.now() - started);
    status = response.status;
  }
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), status };
}

async function main(): Promise<void> {
  const server = await startServer();
  const base = `${server.url}/3.0/projects/${server.projectId}`;
  try {
    const loadStarted = performance.now();
    const now = Date.now();
    // Bound: EVENTS / BATCH requests.
    for (let sent = 0; sent < EVENTS; sent += BATCH) {
      const events = Array.from({ length: Math.min(BATCH, EVENTS - sent) }, (_, i) => {
        const n = sent + i;
        return { ...plainEvent(n), country: COUNTRIES[n % COUNTRIES.length], svc: { timestamp: new Date(now - (n % 30) * 86_400_000).toISOString() } };
      });
      const response = await fetch(`${base}/events`, {
        method: 'POST', headers: { Authorization: server.keys.write, 'Content-Type': 'application/json' }, body: JSON.stringify({ sales: events }),
      });
      if (response.status !== 200) throw new Error(`batch refused: ${response.status}`);
      await response.arrayBuffer();
    }
    console.log(`loaded ${EVENTS.toLocaleString('en')} events in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);

    const query = { analysis_type: 'count', event_collection: 'sales', timeframe: 'this_30_days', interval: 'daily', group_by: 'country' };
    const put = (url: string, body: unknown) => fetch(url, {
      method: 'PUT', headers: { Authorization: server.keys.master, 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    }).then((r) => r.json());
    await put(`${base}/queries/saved/daily-by-country`, { query, refresh_rate: 14_400 });
    const bootStarted = performance.now();
    await put(`${base}/datasets/revenue`, {
      query: { analysis_type: 'sum', event_collection: 'sales', target_property: 'price', timeframe: 'this_30_days', interval: 'daily' },
      index_by: ['country'],
    });
    // Bound: polls until the dataset is bootstrapped (or ten minutes).
    for (let i = 0; i < 6_000; i++) {
      const dataset = await fetch(`${base}/datasets/revenue`, { headers: { Authorization: server.keys.read } }).then((r) => r.json()) as { status: string };
      if (dataset.status === 'OK') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    console.log(`dataset bootstrap: ${((performance.now() - bootStarted) / 1000).toFixed(1)} s for ${EVENTS.toLocaleString('en')} events`);

    const cached = await timed(`${base}/queries/saved/daily-by-country/result`, server.keys.read, READS);
    const dataset = await timed(`${base}/datasets/revenue/results?index_by=US&timeframe=this_30_days`, server.keys.read, READS);
    const adHoc = await timed(`${base}/queries/count?event_collection=sales&timeframe=this_30_days&interval=daily&group_by=country`, server.keys.read, 20);
    const row = (name: string, r: { p50: number; p99: number; status: number }) =>
      console.log(`${name.padEnd(40)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (HTTP ${r.status})`);
    row(`cached query result (${READS} reads)`, cached);
    row(`dataset result (${READS} reads)`, dataset);
    row('the same count run ad hoc (20 runs)', adHoc);
    console.log('goal: cached and dataset reads p99 under 5 ms');
  } finally {
    await server.stop();
    server.cleanup();
  }
}

await main();
