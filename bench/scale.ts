/**
 * Tally at scale against DuckDB, as a user meets both: N generated web-analytics events (user_id,
 * session_id, page.path, page.country, device, price, quantity, is_member over 90 days) are
 * generated first (not timed), then loaded into the real server over HTTP in 5,000-event batches
 * (4 connections with a batch in flight on each, fsync on; bench/raw-http.ts), and the same rows
 * into a DuckDB file; right after the last batch is acknowledged (no waiting for flushes or
 * compaction) the same queries run on both: Tally over HTTP with the Read Key, DuckDB in-process
 * with 2 threads. Prints per query the first and best Tally time, DuckDB's best, the ratio and
 * whether the answers are equal; then bytes per event on disk (right after the load and once
 * flushes and compaction have settled), the server's peak RSS and the batched ingest rate.
 *
 *   node dist/bench/scale.js [--events 10000000] [--order time|random] [--skip-duckdb] [--keep] [--trivial-series]
 *   TALLY_SERVER_ARGS="--memory-budget 1g" node dist/bench/scale.js ...
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { mulberry32 } from '../test/helpers/random.js';
import { startServer, type TestServer } from '../test/helpers/server.js';
import { benchArgs } from './args.js';
import { processCpuSeconds, rawRequest, sendAll } from './raw-http.js';

const BATCH = 5_000;
const IN_FLIGHT = 4;
const DAY = 86_400_000;
const END = Date.UTC(2026, 9, 1);
const START = END - 90 * DAY;
const COUNTRIES = Array.from({ length: 50 }, (_, i) => `C${String(i).padStart(2, '0')}`);
const DEVICES = ['desktop', 'mobile', 'tablet', 'tv', 'console'];

const args = benchArgs({
  events: { arg: 'N' }, order: { arg: 'time|random' }, 'skip-duckdb': {}, keep: {}, 'trivial-series': {}, 'settle-first': {},
});
const EVENTS = args.integer('events', 2_000_000);
const ORDER = args.choice('order', ['time', 'random'], 'time');
const SKIP_DUCKDB = args.flag('skip-duckdb');
/** Leaves Tally's data directory in place (its path is printed) to look at the segments. */
const KEEP = args.flag('keep');
const USERS = Math.max(1_000, Math.floor(EVENTS / 20));
const SESSIONS = Math.max(1_000, Math.floor(EVENTS / 5));

interface Row {
  ts: number; user: string; session: string; path: string; country: string; device: string;
  price: number; quantity: number; member: boolean;
}

/** Batch `index` of the workload: its rows (for DuckDB) and its HTTP body (for Tally). */
function batch(index: number, rows: number): { rows: Row[]; body: string } {
  const random = mulberry32(1_000 + index);
  const out: Row[] = [];
  let body = '{"views":[';
  for (let i = 0; i < rows; i++) {
    const position = ORDER === 'time' ? (index * BATCH + i + random()) / EVENTS : random();
    const row: Row = {
      ts: START + Math.floor(position * 90 * DAY),
      user: `u${Math.floor(random() * USERS)}`,
      session: `s${Math.floor(random() * SESSIONS)}`,
      path: `/p/${Math.floor(1000 * random() ** 3)}`,
      country: COUNTRIES[Math.floor(COUNTRIES.length * random() ** 2)],
      device: DEVICES[Math.floor(DEVICES.length * random() ** 1.5)],
      price: Math.round(random() * random() * 20_000) / 100,
      quantity: 1 + Math.floor(random() * 5),
      member: random() < 0.3,
    };
    out.push(row);
    body += `${i === 0 ? '' : ','}{"user_id":"${row.user}","session_id":"${row.session}","page":{"path":"${row.path}",` +
      `"country":"${row.country}"},"device":"${row.device}","price":${row.price},"quantity":${row.quantity},` +
      `"is_member":${row.member},"svc":{"timestamp":"${new Date(row.ts).toISOString()}"}}`;
  }
  return { rows: out, body: body + ']}' };
}

function du(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    try {
      total += entry.isDirectory() ? du(full) : fs.statSync(full).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // renamed or removed meanwhile
    }
  }
  return total;
}

function statusKb(pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : 0;
}

/**
 * Generates the workload before anything is timed: every batch's whole HTTP request into one file
 * (and the same rows as CSV for DuckDB), so the load measures the server and not the generator,
 * which on 2 cores would otherwise take a third of the CPU from it.
 */
function generate(server: TestServer, requests: string, csv: string | null): { offsets: number[]; seconds: number } {
  const started = performance.now();
  const host = new URL(server.url).host;
  const base = `/3.0/projects/${server.projectId}/events`;
  const out = fs.openSync(requests, 'w');
  const csvOut = csv === null ? null : fs.openSync(csv, 'w');
  const offsets = [0];
  for (let index = 0; index * BATCH < EVENTS; index++) {
    const { rows, body } = batch(index, Math.min(BATCH, EVENTS - index * BATCH));
    if (csvOut !== null) {
      let text = '';
      for (const r of rows) {
        text += `${new Date(r.ts).toISOString()},${r.user},${r.session},${r.path},${r.country},${r.device},${r.price},${r.quantity},${r.member}\n`;
      }
      fs.writeSync(csvOut, text);
    }
    const request = rawRequest(host, base, server.keys.write, body);
    fs.writeSync(out, request);
    offsets.push(offsets[offsets.length - 1] + request.length);
  }
  fs.closeSync(out);
  if (csvOut !== null) fs.closeSync(csvOut);
  return { offsets, seconds: (performance.now() - started) / 1000 };
}

/** Sends the generated requests over IN_FLIGHT keep-alive connections, each read from the file as it goes. */
async function load(server: TestServer, requests: string, offsets: readonly number[]): Promise<{ seconds: number; clientCpuS: number; serverCpuS: number }> {
  const file = fs.openSync(requests, 'r');
  let index = 0;
  const next = (): Buffer | null => {
    if (index + 1 >= offsets.length) return null;
    const request = Buffer.allocUnsafe(offsets[index + 1] - offsets[index]);
    fs.readSync(file, request, 0, request.length, offsets[index]);
    index++;
    return request;
  };
  const clientBefore = process.cpuUsage();
  const serverBefore = processCpuSeconds(server.child.pid);
  const sent = await sendAll(Number(new URL(server.url).port), IN_FLIGHT, next,
    (head, body) => head.startsWith('HTTP/1.1 200') && !body.includes('"success":false'));
  const client = process.cpuUsage(clientBefore);
  fs.closeSync(file);
  if (sent.failures > 0) throw new Error(`${sent.failures} batches refused; the first: ${sent.firstFailure}`);
  return { seconds: sent.seconds, clientCpuS: (client.user + client.system) / 1e6, serverCpuS: processCpuSeconds(server.child.pid) - serverBefore };
}

interface Query {
  readonly name: string;
  readonly analysis: string;
  readonly params: Record<string, unknown>;
  readonly sql: string;
  /** Tally's result → the comparable shape of DuckDB's rows. */
  readonly tally: (result: unknown) => unknown;
  readonly duck: (rows: unknown[][]) => unknown;
  /** Estimates above the seed's exact bounds: equal within this relative error. */
  readonly tolerance?: number;
}

const timeframe = { start: new Date(START).toISOString(), end: new Date(END).toISOString() };
const WHERE = `ts >= '${timeframe.start}'::TIMESTAMP AND ts < '${timeframe.end}'::TIMESTAMP`;
const num = (value: unknown) => Number(value);
const byKey = (pairs: unknown[][]) => Object.fromEntries(pairs.map(([k, v]) => [String(k), Number(v)]).sort());

const QUERIES: Query[] = [
  { name: 'count, 90 days', analysis: 'count', params: {}, sql: `SELECT count(*) FROM views WHERE ${WHERE}`,
    tally: num, duck: (rows) => num(rows[0][0]) },
  { name: 'count, eq filter', analysis: 'count',
    params: { filters: [{ property_name: 'page.country', operator: 'eq', property_value: 'C03' }] },
    sql: `SELECT count(*) FROM views WHERE ${WHERE} AND country = 'C03'`, tally: num, duck: (rows) => num(rows[0][0]) },
  // One user's events: the dictionary of ids (about an entry a row) is matched as stored.
  { name: 'count, eq filter on user_id', analysis: 'count',
    params: { filters: [{ property_name: 'user_id', operator: 'eq', property_value: 'u4242' }] },
    sql: `SELECT count(*) FROM views WHERE ${WHERE} AND user_id = 'u4242'`, tally: num, duck: (rows) => num(rows[0][0]) },
  { name: 'count, range filter', analysis: 'count',
    params: { filters: [{ property_name: 'price', operator: 'gte', property_value: 50 }, { property_name: 'price', operator: 'lt', property_value: 100 }] },
    sql: `SELECT count(*) FROM views WHERE ${WHERE} AND price >= 50 AND price < 100`, tally: num, duck: (rows) => num(rows[0][0]) },
  { name: 'select_unique, 5 values', analysis: 'select_unique', params: { target_property: 'device' },
    sql: `SELECT DISTINCT device FROM views WHERE ${WHERE}`,
    tally: (r) => (r as string[]).slice().sort(), duck: (rows) => rows.map((row) => String(row[0])).sort() },
  { name: 'count_unique, 50 values', analysis: 'count_unique', params: { target_property: 'page.country' },
    sql: `SELECT count(DISTINCT country) FROM views WHERE ${WHERE}`, tally: num, duck: (rows) => num(rows[0][0]) },
  { name: 'count_unique, user_id', analysis: 'count_unique', params: { target_property: 'user_id' },
    sql: `SELECT count(DISTINCT user_id) FROM views WHERE ${WHERE}`, tally: num, duck: (rows) => num(rows[0][0]), tolerance: 0.01 },
  { name: 'group_by, 50 values', analysis: 'count', params: { group_by: 'page.country' },
    sql: `SELECT country, count(*) FROM views WHERE ${WHERE} GROUP BY country`,
    tally: (r) => byKey((r as { 'page.country': string; result: number }[]).map((g) => [g['page.country'], g.result])),
    duck: (rows) => byKey(rows.map((row) => [row[0], row[1]])) },
  { name: 'group_by + daily interval', analysis: 'count', params: { group_by: 'device', interval: 'daily' },
    sql: `SELECT epoch_ms(date_trunc('day', ts)), device, count(*) FROM views WHERE ${WHERE} GROUP BY 1, 2`,
    tally: (r) => byKey((r as { timeframe: { start: string }; value: { device: string; result: number }[] }[])
      .flatMap((bucket) => bucket.value.filter((g) => g.result > 0).map((g) => [`${Date.parse(bucket.timeframe.start)}/${g.device}`, g.result]))),
    duck: (rows) => byKey(rows.map((row) => [`${row[0]}/${row[1]}`, row[2]])) },
  { name: 'sum', analysis: 'sum', params: { target_property: 'price' }, sql: `SELECT sum(price) FROM views WHERE ${WHERE}`,
    tally: (r) => Math.round(num(r) * 100), duck: (rows) => Math.round(num(rows[0][0]) * 100) },
  { name: 'average by device', analysis: 'average', params: { target_property: 'price', group_by: 'device' },
    sql: `SELECT device, avg(price) FROM views WHERE ${WHERE} GROUP BY device`,
    tally: (r) => byKey((r as { device: string; result: number }[]).map((g) => [g.device, g.result.toFixed(6)])),
    duck: (rows) => byKey(rows.map((row) => [row[0], num(row[1]).toFixed(6)])) },
  { name: 'minimum', analysis: 'minimum', params: { target_property: 'price' },
    sql: `SELECT min(price) FROM views WHERE ${WHERE}`, tally: num, duck: (rows) => num(rows[0][0]) },
  { name: 'maximum, filtered', analysis: 'maximum',
    params: { target_property: 'price', filters: [{ property_name: 'is_member', operator: 'eq', property_value: true }] },
    sql: `SELECT max(price) FROM views WHERE ${WHERE} AND is_member`, tally: num, duck: (rows) => num(rows[0][0]) },
  { name: 'median', analysis: 'median', params: { target_property: 'price' },
    sql: `SELECT quantile_disc(price, 0.5) FROM views WHERE ${WHERE}`, tally: num, duck: (rows) => num(rows[0][0]), tolerance: 0.01 },
  { name: 'percentile 90', analysis: 'percentile', params: { target_property: 'price', percentile: 90 },
    sql: `SELECT quantile_disc(price, 0.9) FROM views WHERE ${WHERE}`, tally: num, duck: (rows) => num(rows[0][0]), tolerance: 0.01 },
  { name: 'count, in filter + group_by path', analysis: 'count',
    params: { group_by: 'page.path', filters: [{ property_name: 'device', operator: 'in', property_value: ['tv', 'console'] }] },
    sql: `SELECT path, count(*) FROM views WHERE ${WHERE} AND device IN ('tv', 'console') GROUP BY path`,
    tally: (r) => byKey((r as { 'page.path': string; result: number }[]).map((g) => [g['page.path'], g.result])),
    duck: (rows) => byKey(rows.map((row) => [row[0], row[1]])) },
  // Users who viewed one page, then those of them who viewed another: two distinct sets of ids and
  // their intersection (~65,000 and ~43,000 users at 10M, ten times that at 100M: under the
  // 1,000,000 actors a funnel step may have; a tablet's view had 4.8M at 100M).
  { name: 'funnel, 2 pages by user_id', analysis: 'funnel',
    params: { steps: [
      { event_collection: 'views', actor_property: 'user_id', filters: [{ property_name: 'page.path', operator: 'eq', property_value: '/p/10' }] },
      { event_collection: 'views', actor_property: 'user_id', filters: [{ property_name: 'page.path', operator: 'eq', property_value: '/p/20' }] },
    ] },
    sql: `WITH a AS (SELECT DISTINCT user_id FROM views WHERE ${WHERE} AND path = '/p/10'), ` +
      `b AS (SELECT DISTINCT user_id FROM views WHERE ${WHERE} AND path = '/p/20') ` +
      'SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM a JOIN b USING (user_id))',
    tally: (r) => (r as number[]).join('/'), duck: (rows) => `${num(rows[0][0])}/${num(rows[0][1])}` },
  { name: 'extraction, latest 100', analysis: 'extraction', params: { latest: 100 },
    sql: `SELECT epoch_ms(ts), user_id, price FROM views WHERE ${WHERE} ORDER BY ts DESC LIMIT 100`,
    tally: (r) => (r as { svc: { timestamp: string }; user_id: string; price: number }[])
      .map((e) => `${Date.parse(e.svc.timestamp)}/${e.user_id}/${e.price}`).sort(),
    duck: (rows) => rows.map((row) => `${row[0]}/${row[1]}/${num(row[2])}`).sort() },
];

/**
 * Runs this process's `fetch` a few hundred times against a throwaway node:http server of its own,
 * so that the trivial query's figure is the server's latency and not the first calls of the load
 * generator's HTTP client (undici compiling: ~0.4 ms a call for its first tens of calls here).
 * Tally is not involved.
 */
async function warmClient(): Promise<void> {
  const local = http.createServer((_request, response) => response.end('{}'));
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  const { port } = local.address() as { port: number };
  for (let i = 0; i < 300; i++) await fetch(`http://127.0.0.1:${port}/3.0/warm?i=${i}`).then((r) => r.text());
  local.closeAllConnections();
  await new Promise<void>((resolve) => local.close(() => resolve()));
}

/** Rows not yet flushed and day partitions not yet merged, from /metrics. */
async function storeState(server: TestServer): Promise<{ bufferRows: number; backlog: number; pausedS: number }> {
  const text = await fetch(`${server.url}/metrics`, { headers: { Authorization: server.orgKey } }).then((r) => r.text());
  const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    bufferRows: sample('tally_buffer_rows'), backlog: sample('tally_compaction_backlog'),
    pausedS: sample('tally_background_paused_seconds_total'),
  };
}

/** Longest wait, after the fixed 25 s, for the buffers to be empty and every day one segment. */
const SETTLE_WAIT_MAX_MS = 180_000;

/**
 * Waits until /metrics shows no buffered rows and no compaction backlog, so that "settled" bytes
 * are those of the compacted store and not of a merge still under way. Says how long it took.
 */
async function untilSettled(server: TestServer, waitMaxMs: number): Promise<string> {
  const started = performance.now();
  for (;;) {
    const { bufferRows, backlog } = await storeState(server);
    const waitedS = ((performance.now() - started) / 1000).toFixed(0);
    if (bufferRows === 0 && backlog === 0) {
      return `compacted, ${waitedS} s after the first 25`;
    }
    if (performance.now() - started > waitMaxMs) return `NOT compacted after 25 + ${waitedS} s`;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function tallyQuery(server: TestServer, query: Query): Promise<{ ms: number; result: unknown }> {
  const started = performance.now();
  const response = await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/${query.analysis}`, {
    method: 'POST', headers: { Authorization: server.keys.read, 'Content-Type': 'application/json' },
    // A funnel names its steps' collections; the root timeframe is every step's.
    body: JSON.stringify({ ...(query.analysis === 'funnel' ? {} : { event_collection: 'views' }), timeframe, ...query.params }),
  });
  const body = await response.json() as { result?: unknown; message?: string };
  const ms = performance.now() - started;
  if (response.status !== 200) return { ms, result: `HTTP ${response.status}: ${body.message}` };
  return { ms, result: body.result };
}

function equal(a: unknown, b: unknown, tolerance = 0): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= tolerance * Math.abs(b);
  return JSON.stringify(a) === JSON.stringify(b);
}

async function main(): Promise<void> {
  const extra = (process.env.TALLY_SERVER_ARGS ?? '').split(' ').filter(Boolean);
  const server = await startServer({ args: ['--kafka-in-port', '0', '--kafka-out-port', '0', ...extra] });
  const pid = server.child.pid!;
  let rssMaxKb = 0, phaseMaxKb = 0;
  const sampler = setInterval(() => {
    const kb = statusKb(pid, 'VmRSS');
    rssMaxKb = Math.max(rssMaxKb, kb);
    phaseMaxKb = Math.max(phaseMaxKb, kb);
  }, 250);
  /** Peak RSS (MB) since the last call: where the peak comes from (load, queries, settling). */
  const phasePeakMb = (): string => {
    const mb = (Math.max(phaseMaxKb, statusKb(pid, 'VmRSS')) / 1024).toFixed(0);
    phaseMaxKb = 0;
    return mb;
  };
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-scale-'));
  let duck: DuckDBConnection | null = null;
  if (!SKIP_DUCKDB) {
    const instance = await DuckDBInstance.create(path.join(work, 'views.duckdb'));
    duck = await instance.connect();
    await duck.run('SET threads = 2');
    await duck.run(`CREATE TABLE views (ts TIMESTAMP, user_id VARCHAR, session_id VARCHAR, path VARCHAR,
      country VARCHAR, device VARCHAR, price DOUBLE, quantity BIGINT, is_member BOOLEAN)`);
  }
  console.log(`${EVENTS.toLocaleString('en-US')} events, ${ORDER} order, ${os.cpus().length} cores; server args: ${extra.join(' ') || '(defaults)'}`);
  // The trivial query's collection: one event.
  await fetch(`${server.url}/3.0/projects/${server.projectId}/events/tiny`, {
    method: 'POST', body: '{"a":1}', headers: { Authorization: server.keys.write, 'Content-Type': 'application/json' },
  });
  await warmClient();
  const requests = path.join(work, 'requests.bin');
  const generated = generate(server, requests, duck === null ? null : path.join(work, 'views.csv'));
  console.log(`generated ${(generated.offsets[generated.offsets.length - 1] / 1e9).toFixed(2)} GB of requests in ${generated.seconds.toFixed(1)} s (not timed)`);
  const loaded = await load(server, requests, generated.offsets);
  fs.rmSync(requests);
  const rate = EVENTS / loaded.seconds;
  console.log(`Tally batched ingest over HTTP: ${Math.round(rate).toLocaleString('en-US')} events/s ` +
    `(${loaded.seconds.toFixed(1)} s; CPU: server ${loaded.serverCpuS.toFixed(1)} s, ` +
    `${(1e6 * loaded.serverCpuS / EVENTS).toFixed(1)} µs/event; client ${loaded.clientCpuS.toFixed(1)} s)`);
  const bytesAfterLoad = du(server.dataDir);
  const loadPeakMb = phasePeakMb();

  const table: string[][] = [['query', 'Tally first ms', 'DuckDB first ms', 'first ratio', 'Tally best ms', 'DuckDB best ms', 'ratio', 'equal']];
  const trivial: number[] = [];
  for (let i = 0; i < 30; i++) {
    const started = performance.now();
    await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/count?api_key=${server.keys.read}` +
      `&event_collection=tiny&timeframe=this_100_years`).then((r) => r.text());
    trivial.push(performance.now() - started);
  }
  if (args.flag('trivial-series')) console.log(`trivial queries in order (ms): ${trivial.map((ms) => ms.toFixed(2)).join(' ')}`);
  trivial.sort((a, b) => a - b);
  table.push(['trivial: count of a 1-event collection (p50 of 30)', trivial[15].toFixed(2), '', '', trivial[0].toFixed(2), '', '', '']);
  if (duck !== null) {
    const started = performance.now();
    await duck.run(`COPY views FROM '${path.join(work, 'views.csv')}' (HEADER false)`);
    await duck.run('CHECKPOINT');
    console.log(`DuckDB load from CSV: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  // Diagnostic: queries on a settled store (flushed, merged) tell cold caches from contention.
  if (args.flag('settle-first')) console.log(`settled before the queries: ${await untilSettled(server, SETTLE_WAIT_MAX_MS)}`);
  const atQueries = await storeState(server);
  console.log(`when the queries start: ${atQueries.bufferRows} rows not flushed, ${atQueries.backlog} day partitions not merged`);
  let atOrUnder = 0, firstAtOrUnder = 0, equalCount = 0;
  for (const query of QUERIES) {
    const runs = [await tallyQuery(server, query)];
    for (let i = 0; i < 2; i++) runs.push(await tallyQuery(server, query));
    const best = Math.min(...runs.map((run) => run.ms));
    const tallyValue = typeof runs[0].result === 'string' && runs[0].result.startsWith('HTTP') ? runs[0].result : query.tally(runs[0].result);
    let duckMs = NaN, duckFirstMs = NaN, same = '';
    if (duck !== null) {
      let rows: unknown[][] = [];
      duckMs = Infinity;
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        rows = (await duck.runAndReadAll(query.sql)).getRows() as unknown[][];
        const ms = performance.now() - started;
        if (i === 0) duckFirstMs = ms;
        duckMs = Math.min(duckMs, ms);
      }
      const ok = equal(tallyValue, query.duck(rows), query.tolerance ?? 0);
      same = ok ? (query.tolerance ? 'yes (≈)' : 'yes') : `MISMATCH ${JSON.stringify(tallyValue).slice(0, 60)} vs ${JSON.stringify(query.duck(rows)).slice(0, 60)}`;
      if (ok) equalCount++;
      if (best <= duckMs) atOrUnder++;
      if (runs[0].ms <= duckFirstMs) firstAtOrUnder++;
    }
    const withDuck = (text: string) => duck === null ? '' : text;
    table.push([query.name, runs[0].ms.toFixed(1), withDuck(duckFirstMs.toFixed(1)), withDuck((runs[0].ms / duckFirstMs).toFixed(2)),
      best.toFixed(1), withDuck(duckMs.toFixed(1)), withDuck((best / duckMs).toFixed(2)), same]);
  }
  const afterQueries = await storeState(server);
  console.log(`after the queries: ${afterQueries.backlog} day partitions not merged; merges stood still` +
    ` ${(afterQueries.pausedS - atQueries.pausedS).toFixed(1)} s while Tally's queries ran`);
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '));
  if (duck !== null) {
    console.log(`at or under DuckDB's time: first runs ${firstAtOrUnder} of ${QUERIES.length}, best of 3 ${atOrUnder} of ${QUERIES.length};` +
      ` equal: ${equalCount} of ${QUERIES.length}`);
  }

  const queryPeakMb = phasePeakMb();
  await new Promise((resolve) => setTimeout(resolve, 25_000)); // flushes and compaction settle
  const settledAfterS = await untilSettled(server, SETTLE_WAIT_MAX_MS);
  const settlePeakMb = phasePeakMb();
  const bytesSettled = du(server.dataDir);
  const duckBytes = duck === null ? NaN : fs.statSync(path.join(work, 'views.duckdb')).size;
  clearInterval(sampler);
  const peakKb = Math.max(rssMaxKb, statusKb(pid, 'VmHWM'));
  console.log(`Tally data dir: ${(bytesAfterLoad / EVENTS).toFixed(1)} B/event right after the load, ` +
    `${(bytesSettled / EVENTS).toFixed(1)} B/event settled (${settledAfterS}); DuckDB file: ${(duckBytes / EVENTS).toFixed(1)} B/event`);
  console.log(`Tally server peak RSS: ${(peakKb / 1024).toFixed(0)} MB (load ${loadPeakMb}, queries ${queryPeakMb}, ` +
    `settling ${settlePeakMb}; now ${(statusKb(pid, 'VmRSS') / 1024).toFixed(0)})`);
  await server.stop();
  // What the server logged (flush or merge failures would show here): the last lines.
  const logged = server.stderr().trim().split('\n').filter((line) => line !== '');
  if (logged.length > 0) console.log(`server stderr, last ${Math.min(20, logged.length)} of ${logged.length} lines:\n${logged.slice(-20).join('\n')}`);
  if (KEEP) console.log(`Tally data dir kept: ${server.dataDir}`);
  else server.cleanup();
  fs.rmSync(work, { recursive: true, force: true });
}

await main();
