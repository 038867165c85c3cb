/**
 * First runs against best of 3, on the same stored rows, many times over: what a query pays the
 * first time a fresh server's query workers read a column, without bench/scale's load, DuckDB and
 * compaction around it. Loads bench/scale's workload once (or reuses a data directory it kept),
 * lets flushes and compaction settle, then per round starts a server on that directory (fresh
 * workers and caches; the files are in the OS page cache, as right after a load), runs each of
 * bench/scale's queries (and an average of an integer column) once and then twice more, and stops
 * it (started with --no-cache-warming: the first runs read from disk, as without warming). Prints per query the median first run, best of 3 and ratio, and the server's CPU time over
 * the first run and the least over the three (all its threads: on a machine others share, the CPU
 * a query takes varies far less than the time it waits for a core). Every round's answers must
 * equal the first round's (`--answers FILE` compares them with another build's, on the same data).
 *
 *   node dist/bench/first-run.js [--events 2000000] [--rounds 5] [--keep] [--answers FILE]
 *   node dist/bench/first-run.js --data DIR --org-key KEY [--rounds 5] [--json FILE]
 *   TALLY_SERVER_ARGS="--memory-budget 1g" node dist/bench/first-run.js ...
 *   TALLY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node dist/bench/first-run.js --data DIR --org-key KEY --rounds 1 --only user_id
 *   node dist/bench/first-run.js --data DIR --org-key KEY --cold
 *
 * `--cold` (Linux, as root) drops the OS page cache before each query's first run, so that run
 * reads every file it needs from the disk: a server started after a reboot, or a store whose
 * files other work pushed out of memory (bench/scale's 100M run: its ~20 GB workload file).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { mulberry32 } from '../test/helpers/random.js';
import { startServer, type TestServer } from '../test/helpers/server.js';
import { rawRequest, sendAll } from './raw-http.js';

const BATCH = 5_000;
const DAY = 86_400_000;
const END = Date.UTC(2026, 9, 1);
const START = END - 90 * DAY;
const COUNTRIES = Array.from({ length: 50 }, (_, i) => `C${String(i).padStart(2, '0')}`);
const DEVICES = ['desktop', 'mobile', 'tablet', 'tv', 'console'];

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1] : fallback;
}

const EVENTS = Number(option('events', '2000000'));
const ROUNDS = Number(option('rounds', '5'));
const DATA = option('data', '');
const ORG_KEY = option('org-key', '');
const ANSWERS = option('answers', '');
/** Appends each query's first and best runs of every round, as a JSON line, to this file. */
const JSON_OUT = option('json', '');
/** Runs only the queries whose name contains this text (profiling one query's first run). */
const ONLY = option('only', '');
/** Runs after the first (2: best of 3; 0 profiles first runs alone). */
const REPEATS = Number(option('repeats', '2'));
const KEEP = process.argv.includes('--keep') || DATA !== '';
const COLD = process.argv.includes('--cold');
const USERS = Math.max(1_000, Math.floor(EVENTS / 20));
const SESSIONS = Math.max(1_000, Math.floor(EVENTS / 5));

/** bench/scale's batch `index`, as its HTTP body (the same rows for the same --events). */
function body(index: number, rows: number): string {
  const random = mulberry32(1_000 + index);
  let text = '{"views":[';
  for (let i = 0; i < rows; i++) {
    const position = (index * BATCH + i + random()) / EVENTS;
    const ts = START + Math.floor(position * 90 * DAY);
    const user = `u${Math.floor(random() * USERS)}`;
    const session = `s${Math.floor(random() * SESSIONS)}`;
    const page = `/p/${Math.floor(1000 * random() ** 3)}`;
    const country = COUNTRIES[Math.floor(COUNTRIES.length * random() ** 2)];
    const device = DEVICES[Math.floor(DEVICES.length * random() ** 1.5)];
    const price = Math.round(random() * random() * 20_000) / 100;
    const quantity = 1 + Math.floor(random() * 5);
    const member = random() < 0.3;
    text += `${i === 0 ? '' : ','}{"user_id":"${user}","session_id":"${session}","page":{"path":"${page}",` +
      `"country":"${country}"},"device":"${device}","price":${price},"quantity":${quantity},` +
      `"is_member":${member},"svc":{"timestamp":"${new Date(ts).toISOString()}"}}`;
  }
  return text + ']}';
}

const timeframe = { start: new Date(START).toISOString(), end: new Date(END).toISOString() };

/** bench/scale's queries, plus a plain average (the issue's "average of quantity"). */
const QUERIES: { name: string; analysis: string; params: Record<string, unknown> }[] = [
  { name: 'count, 90 days', analysis: 'count', params: {} },
  { name: 'count, eq filter', analysis: 'count', params: { filters: [{ property_name: 'page.country', operator: 'eq', property_value: 'C03' }] } },
  { name: 'count, range filter', analysis: 'count', params: { filters: [{ property_name: 'price', operator: 'gte', property_value: 50 }, { property_name: 'price', operator: 'lt', property_value: 100 }] } },
  { name: 'select_unique, 5 values', analysis: 'select_unique', params: { target_property: 'device' } },
  { name: 'count_unique, 50 values', analysis: 'count_unique', params: { target_property: 'page.country' } },
  { name: 'count_unique, user_id', analysis: 'count_unique', params: { target_property: 'user_id' } },
  { name: 'group_by, 50 values', analysis: 'count', params: { group_by: 'page.country' } },
  { name: 'group_by + daily interval', analysis: 'count', params: { group_by: 'device', interval: 'daily' } },
  { name: 'sum', analysis: 'sum', params: { target_property: 'price' } },
  { name: 'average of quantity', analysis: 'average', params: { target_property: 'quantity' } },
  { name: 'average by device', analysis: 'average', params: { target_property: 'price', group_by: 'device' } },
  { name: 'maximum, filtered', analysis: 'maximum', params: { target_property: 'price', filters: [{ property_name: 'is_member', operator: 'eq', property_value: true }] } },
  { name: 'median', analysis: 'median', params: { target_property: 'price' } },
  { name: 'percentile 90', analysis: 'percentile', params: { target_property: 'price', percentile: 90 } },
  { name: 'count, in filter + group_by path', analysis: 'count', params: { group_by: 'page.path', filters: [{ property_name: 'device', operator: 'in', property_value: ['tv', 'console'] }] } },
  { name: 'extraction, latest 100', analysis: 'extraction', params: { latest: 100 } },
];

if (ONLY !== '') QUERIES.splice(0, QUERIES.length, ...QUERIES.filter((spec) => spec.name.includes(ONLY)));

/**
 * CPU the server's threads have run so far (ms; Linux: the sum of /proc/PID/task/TID/schedstat's
 * on-CPU time, exact to the ns), so a query's CPU is told apart from the wall time it waited for
 * a core on a machine others share.
 */
function serverCpuMs(pid: number): number {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns / 1e6;
}

async function query(server: TestServer, analysis: string, params: Record<string, unknown>): Promise<{ ms: number; cpuMs: number; result: string }> {
  const cpuBefore = serverCpuMs(server.child.pid!);
  const started = performance.now();
  const response = await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/${analysis}`, {
    method: 'POST', headers: { Authorization: server.keys.read, 'Content-Type': 'application/json' },
    body: JSON.stringify({ event_collection: 'views', timeframe, ...params }),
  });
  const parsed = await response.json() as { result?: unknown; message?: string };
  const ms = performance.now() - started;
  const cpuMs = serverCpuMs(server.child.pid!) - cpuBefore;
  if (response.status !== 200) throw new Error(`${analysis}: HTTP ${response.status}: ${parsed.message}`);
  const result = Array.isArray(parsed.result) && analysis === 'select_unique' ? [...parsed.result].sort() : parsed.result;
  return { ms, cpuMs, result: JSON.stringify(result) };
}

/** Writes dirty pages out and drops the clean ones, the segment files' among them (root only). */
function dropPageCache(): void {
  execFileSync('sync');
  try {
    fs.writeFileSync('/proc/sys/vm/drop_caches', '1');
  } catch (error) {
    throw new Error(`--cold drops the page cache through /proc/sys/vm/drop_caches, which needs root: ${(error as Error).message}`);
  }
}

async function settled(server: TestServer): Promise<void> {
  for (;;) {
    const text = await fetch(`${server.url}/metrics`, { headers: { Authorization: server.orgKey } }).then((r) => r.text());
    const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    if (sample('tally_buffer_rows') === 0 && sample('tally_compaction_backlog') === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function prepare(): Promise<{ dataDir: string; orgKey: string }> {
  if (DATA !== '') return { dataDir: DATA, orgKey: ORG_KEY };
  const extra = (process.env.TALLY_SERVER_ARGS ?? '').split(' ').filter(Boolean);
  const server = await startServer({ args: extra });
  const host = new URL(server.url).host;
  const base = `/3.0/projects/${server.projectId}/events`;
  let index = 0;
  const next = (): Buffer | null => {
    if (index * BATCH >= EVENTS) return null;
    const request = rawRequest(host, base, server.keys.write, body(index, Math.min(BATCH, EVENTS - index * BATCH)));
    index++;
    return request;
  };
  const sent = await sendAll(Number(new URL(server.url).port), 4, next, (head) => head.startsWith('HTTP/1.1 200'));
  if (sent.failures > 0) throw new Error(`${sent.failures} batches refused: ${sent.firstFailure}`);
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  await settled(server);
  await server.stop();
  console.log(`loaded ${EVENTS.toLocaleString('en-US')} events; data dir ${server.dataDir} --org-key ${server.orgKey}`);
  return { dataDir: server.dataDir, orgKey: server.orgKey };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2 === 1 ? sorted[sorted.length >> 1] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
};

async function main(): Promise<void> {
  const { dataDir, orgKey } = await prepare();
  const extra = (process.env.TALLY_SERVER_ARGS ?? '').split(' ').filter(Boolean);
  const firsts = QUERIES.map((): number[] => []);
  const bests = QUERIES.map((): number[] => []);
  const firstCpus = QUERIES.map((): number[] => []);
  const bestCpus = QUERIES.map((): number[] => []);
  const answers: string[] = [];
  let mismatches = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // Cold caches, what this script measures: a server warms the stored segments at start unless told not to.
    const server = await startServer({ dataDir, orgKey, args: ['--no-cache-warming', ...extra] });
    // The workers are up (the pool posts 'ready') and the HTTP client is warm: a trivial query.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    for (let i = 0; i < 5; i++) {
      await fetch(`${server.url}/3.0/projects/${server.projectId}/queries/count?api_key=${server.keys.read}` +
        '&event_collection=nothing&timeframe=this_1_days').then((r) => r.text());
    }
    for (const [q, spec] of QUERIES.entries()) {
      if (COLD) dropPageCache();
      const runs = [await query(server, spec.analysis, spec.params)];
      for (let i = 0; i < REPEATS; i++) runs.push(await query(server, spec.analysis, spec.params));
      firsts[q].push(runs[0].ms);
      bests[q].push(Math.min(...runs.map((run) => run.ms)));
      firstCpus[q].push(runs[0].cpuMs);
      bestCpus[q].push(Math.min(...runs.map((run) => run.cpuMs)));
      for (const run of runs) {
        answers[q] ??= run.result;
        if (run.result !== answers[q]) {
          mismatches++;
          console.log(`MISMATCH ${spec.name}: ${run.result.slice(0, 80)} vs ${answers[q].slice(0, 80)}`);
        }
      }
    }
    await server.stop();
  }
  const rows = [['query (medians)', 'first ms', 'best of 3 ms', 'first / best', 'server CPU, first ms', 'least of 3']];
  for (const [q, spec] of QUERIES.entries()) {
    rows.push([spec.name, median(firsts[q]).toFixed(1), median(bests[q]).toFixed(1),
      median(firsts[q].map((first, r) => first / bests[q][r])).toFixed(2), median(firstCpus[q]).toFixed(1), median(bestCpus[q]).toFixed(1)]);
  }
  const total = (values: number[][]) => values.reduce((t, v) => t + median(v), 0).toFixed(1);
  rows.push(['sum of medians', total(firsts), total(bests), '', total(firstCpus), total(bestCpus)]);
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  if (JSON_OUT !== '') {
    fs.appendFileSync(JSON_OUT, `${JSON.stringify({ queries: QUERIES.map((spec) => spec.name), firsts, bests, firstCpus, bestCpus })}\n`);
  }
  console.log(`${DATA === '' ? `${EVENTS.toLocaleString('en-US')} events` : dataDir}, ${ROUNDS} rounds, ${os.cpus().length} cores; server args: ${extra.join(' ') || '(defaults)'}` +
    `${COLD ? '; page cache dropped before each first run' : ''}`);
  for (const row of rows) console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '));
  console.log(`answers: ${mismatches === 0 ? 'the same in every run' : `${mismatches} MISMATCHES`}`);
  if (ANSWERS !== '') {
    if (fs.existsSync(ANSWERS)) {
      const before = JSON.parse(fs.readFileSync(ANSWERS, 'utf8')) as string[];
      const differ = QUERIES.filter((_, q) => before[q] !== answers[q]).map((spec) => spec.name);
      console.log(`answers against ${ANSWERS}: ${differ.length === 0 ? 'identical' : `DIFFER: ${differ.join(', ')}`}`);
    } else {
      fs.writeFileSync(ANSWERS, JSON.stringify(answers));
      console.log(`answers written to ${ANSWERS}`);
    }
  }
  if (!KEEP) fs.rmSync(dataDir, { recursive: true, force: true });
  else if (DATA === '') console.log(`kept: --data ${dataDir} --org-key ${orgKey}`);
}

await main();
