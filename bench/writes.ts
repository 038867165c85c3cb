/**
 * Writes at the client's speed: single-event POSTs as a user's tracking client sends them, against
 * the real server and against a bare node:http server (the floor), from the same client in the
 * same run.
 *
 * The client is a standard keep-alive one, an undici `Pool` (`--connections`, pipelining 1) with
 * `--concurrency` requests in flight, each one ~110-byte JSON event POSTed to
 * /3.0/projects/<id>/events/views with the Write Key in Authorization, as keen-tracking sends it;
 * each response body is read. Latencies are measured in the client per request (node:perf_hooks
 * histogram). The floor is a node:http server in a child process that reads the body and answers
 * 201 {"created":true}: what this client and machine allow when the server does nothing.
 *
 * Scenarios (`--scenarios a,b,c`), each on a fresh server and data dir:
 *   a  an empty store;
 *   b  right after a load of `--load` N events (5,000-event batch POSTs over 4 connections, as
 *      bench/scale loads): the writes start as soon as the last batch is acknowledged, and are
 *      measured from their first request (no warm-up), with flushes and compaction under way;
 *   c  while a query mix runs: `--query-load` events are loaded and left to settle (flushed and
 *      merged, at most `--settle-max` s), then a second undici client runs count, sum,
 *      count_unique, median and group_by queries (`--query-concurrency` loops) over the
 *      collection the writes go to, during the whole write test. Tally, like Keen, answers at most
 *      200 ad-hoc queries a minute per project (then 429 for a minute), so the loops keep each
 *      project under `--query-rate` a minute (default 190); `--query-projects P` loads the same
 *      events into P-1 more projects and spreads the queries over all P, for more queries than one
 *      project is allowed. `--query-rate 0` sends them back to back (and meets the 429s).
 * Per scenario: requests/s, the ratio to the floor's, p50 and p99, non-2xx responses, client-side
 * errors, and the CPU seconds of each process (Tally server, floor server, this client, which in c
 * also runs the query loop) over the measured window, from /proc. A table on stdout; JSON with
 * `--out`.
 *
 *   node dist/bench/writes.js [--duration 10] [--scenarios a,b,c] [--load 1000000] [--out writes.json]
 *   TALLY_SERVER_ARGS="--ingest-workers 0" TALLY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node dist/bench/writes.js ...
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { mulberry32 } from '../test/helpers/random.js';
import { startServer, type TestServer } from '../test/helpers/server.js';
import { processCpuSeconds, rawRequest, sendAll } from './raw-http.js';

const USAGE = `Usage: node dist/bench/writes.js [flags]

Single-event POSTs from an undici Pool against Tally and against a bare node:http server (the floor).

  --scenarios LIST         a,b,c (default a,b,c): a empty store; b right after --load events;
                           c while a query mix runs over --query-load settled events
  --duration S             seconds measured per scenario (default 10)
  --warmup S               seconds of writes before the window, in a, c and the floor (default 1)
  --concurrency N          requests in flight (default 64)
  --connections N          the Pool's connections (default: --concurrency)
  --load N                 events loaded before scenario b (default 1000000)
  --query-load N           events loaded before scenario c (default: --load)
  --query-concurrency N    query loops in scenario c (default 2)
  --query-rate R           queries a minute per project in c, at most (default 190; Tally allows
                           200, then answers 429 for a minute); 0: back to back
  --query-projects P       projects queried in c, each loaded with --query-load events (default 1;
                           the first is the one written to)
  --settle-max S           longest wait in c for the load to be flushed and merged (default 120)
  --skip-floor             do not measure the floor (ratios are then empty)
  --out PATH               also write the results as JSON to PATH
  -h, --help               this text

Environment: TALLY_SERVER_ARGS (server flags), TALLY_NODE_ARGS (node flags for the server, e.g.
"--cpu-prof --cpu-prof-dir=/tmp/prof").`;

const LOAD_BATCH = 5_000;
const LOAD_IN_FLIGHT = 4;
const COLLECTION = 'views';
const DAY = 86_400_000;
/** Loaded events lie in the 30 days before the run; queries ask for this timeframe, which also holds the writes. */
const QUERY_TIMEFRAME = 'this_31_days';
const COUNTRIES = Array.from({ length: 50 }, (_, i) => `C${String(i).padStart(2, '0')}`);
const DEVICES = ['desktop', 'mobile', 'tablet', 'tv', 'console'];
/** Distinct single-event bodies the write client cycles through. */
const WRITE_BODIES = 1_024;

interface Options {
  scenarios: ('a' | 'b' | 'c')[];
  durationS: number;
  warmupS: number;
  concurrency: number;
  connections: number;
  load: number;
  queryLoad: number;
  queryConcurrency: number;
  queryRate: number;
  queryProjects: number;
  settleMaxS: number;
  skipFloor: boolean;
  out: string | null;
}

class UsageError extends Error {}

function readOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv, strict: true, allowPositionals: false,
    options: {
      scenarios: { type: 'string', default: 'a,b,c' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '1' },
      concurrency: { type: 'string', default: '64' },
      connections: { type: 'string' },
      load: { type: 'string', default: '1000000' },
      'query-load': { type: 'string' },
      'query-concurrency': { type: 'string', default: '2' },
      'query-rate': { type: 'string', default: '190' },
      'query-projects': { type: 'string', default: '1' },
      'settle-max': { type: 'string', default: '120' },
      'skip-floor': { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return null;
  const number = (flag: string, text: string, min: number, integer: boolean): number => {
    const value = Number(text.replace(/_/g, ''));
    if (text.trim() === '' || !Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new UsageError(`--${flag} must be ${integer ? 'an integer' : 'a number'} of at least ${min}, not "${text}".`);
    }
    return value;
  };
  const scenarios = values.scenarios.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = scenarios.find((s) => s !== 'a' && s !== 'b' && s !== 'c');
  if (scenarios.length === 0 || unknown !== undefined) {
    throw new UsageError(`--scenarios takes a comma-separated list of a, b and c, not "${values.scenarios}".`);
  }
  const concurrency = number('concurrency', values.concurrency, 1, true);
  const load = number('load', values.load, 0, true);
  return {
    scenarios: [...new Set(scenarios)] as Options['scenarios'],
    durationS: number('duration', values.duration, 0.1, false),
    warmupS: number('warmup', values.warmup, 0, false),
    concurrency,
    connections: values.connections === undefined ? concurrency : number('connections', values.connections, 1, true),
    load,
    queryLoad: values['query-load'] === undefined ? load : number('query-load', values['query-load'], 0, true),
    queryConcurrency: number('query-concurrency', values['query-concurrency'], 1, true),
    queryRate: number('query-rate', values['query-rate'], 0, false),
    queryProjects: number('query-projects', values['query-projects'], 1, true),
    settleMaxS: number('settle-max', values['settle-max'], 0, false),
    skipFloor: values['skip-floor'],
    out: values.out ?? null,
  };
}

// --- the events ------------------------------------------------------------------------------

/** One web-analytics event, ~110 bytes of JSON: the shape bench/scale loads, without the timestamp. */
function eventJson(random: () => number, users: number, sessions: number): string {
  return `{"user_id":"u${Math.floor(random() * users)}","session_id":"s${Math.floor(random() * sessions)}",` +
    `"page":{"path":"/p/${Math.floor(1000 * random() ** 3)}","country":"${COUNTRIES[Math.floor(COUNTRIES.length * random() ** 2)]}"},` +
    `"device":"${DEVICES[Math.floor(DEVICES.length * random() ** 1.5)]}","price":${Math.round(random() * random() * 20_000) / 100}}`;
}

function writeBodies(): Buffer[] {
  const random = mulberry32(7);
  return Array.from({ length: WRITE_BODIES }, () => Buffer.from(eventJson(random, 50_000, 200_000)));
}

/**
 * Loads `events` events into `server` in 5,000-event batch POSTs, LOAD_IN_FLIGHT in flight (the
 * raw client bench/scale uses), in time order over the 30 days before now. Batches are generated
 * as they are sent.
 */
async function loadEvents(url: string, project: Project, events: number): Promise<{ seconds: number; eventsPerS: number }> {
  if (events === 0) return { seconds: 0, eventsPerS: 0 };
  const host = new URL(url).host;
  const path = `/3.0/projects/${project.id}/events`;
  const users = Math.max(1_000, Math.floor(events / 20));
  const sessions = Math.max(1_000, Math.floor(events / 5));
  const end = Date.now() - 60_000;
  const start = end - 30 * DAY;
  let index = 0;
  const next = (): Buffer | null => {
    if (index * LOAD_BATCH >= events) return null;
    const random = mulberry32(1_000 + index);
    const rows = Math.min(LOAD_BATCH, events - index * LOAD_BATCH);
    let body = `{"${COLLECTION}":[`;
    for (let i = 0; i < rows; i++) {
      const ts = start + Math.floor(((index * LOAD_BATCH + i + random()) / events) * (end - start));
      const event = eventJson(random, users, sessions);
      body += `${i === 0 ? '' : ','}${event.slice(0, -1)},"svc":{"timestamp":"${new Date(ts).toISOString()}"}}`;
    }
    index++;
    return rawRequest(host, path, project.write, `${body}]}`);
  };
  const sent = await sendAll(Number(new URL(url).port), LOAD_IN_FLIGHT, next,
    (head, body) => head.startsWith('HTTP/1.1 200') && !body.includes('"success":false'));
  if (sent.failures > 0) throw new Error(`${sent.failures} load batches refused; the first: ${sent.firstFailure}`);
  return { seconds: sent.seconds, eventsPerS: events / sent.seconds };
}

interface Project {
  readonly id: string;
  readonly write: string;
  readonly read: string;
}

/** One more project, through the organization API. */
async function createProject(server: TestServer, name: string): Promise<Project> {
  const response = await fetch(`${server.url}/3.0/organizations/default/projects`, {
    method: 'POST', headers: { Authorization: server.orgKey, 'Content-Type': 'application/json' }, body: JSON.stringify({ name }),
  });
  const body = await response.json() as { id: string; api_keys: { write: string; read: string } };
  if (response.status !== 201) throw new Error(`cannot create project ${name}: ${response.status} ${JSON.stringify(body)}`);
  return { id: body.id, write: body.api_keys.write, read: body.api_keys.read };
}

/** Waits until /metrics shows no buffered rows and no compaction backlog, or `maxS` pass; says which. */
async function settle(server: TestServer, maxS: number): Promise<{ settled: boolean; seconds: number }> {
  const started = performance.now();
  for (;;) {
    const text = await fetch(`${server.url}/metrics`, { headers: { Authorization: server.orgKey } }).then((r) => r.text());
    const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    const seconds = (performance.now() - started) / 1000;
    if (sample('tally_buffer_rows') === 0 && sample('tally_compaction_backlog') === 0) return { settled: true, seconds };
    if (seconds >= maxS) return { settled: false, seconds };
    await sleep(500);
  }
}

// --- the floor -------------------------------------------------------------------------------

/** The floor: node:http, reads the whole body, answers 201 {"created":true}; exits when its stdin closes. */
const FLOOR_SOURCE = `
const http = require('node:http');
const created = Buffer.from('{"created":true}');
const server = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    Buffer.concat(chunks); // the whole body in hand, as a server has it before parsing
    response.writeHead(201, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': created.length });
    response.end(created);
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write('floor ' + server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

async function startFloor(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['-e', FLOOR_SOURCE], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, NODE_OPTIONS: '' } });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /floor (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the floor server exited with ${code} before listening`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

// --- the client ------------------------------------------------------------------------------

interface Cpu {
  tallyS: number;
  floorS: number;
  clientS: number;
}

interface Measured {
  requests: number;
  seconds: number;
  requestsPerS: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  /** Requests that ended without a response (connection errors, resets). */
  errors: number;
  cpu: Cpu;
}

interface Pids {
  tally: number | undefined;
  floor: number | undefined;
}

function cpuNow(pids: Pids): Cpu {
  const own = process.cpuUsage();
  return { tallyS: processCpuSeconds(pids.tally), floorS: processCpuSeconds(pids.floor), clientS: (own.user + own.system) / 1e6 };
}

function cpuSince(before: Cpu, pids: Pids): Cpu {
  const now = cpuNow(pids);
  return { tallyS: now.tallyS - before.tallyS, floorS: now.floorS - before.floorS, clientS: now.clientS - before.clientS };
}

/** Called as the measured window opens and right after it closes (while the writes still run). */
interface WindowHooks {
  open?: () => Promise<void>;
  close?: () => Promise<void>;
}

interface Wal {
  /** WAL group commits (one fdatasync each) per second over the window. */
  fsyncsPerS: number;
  /** Acknowledged requests per group commit. */
  requestsPerFsync: number;
  /** Mean fdatasync time, ms. */
  fsyncMeanMs: number;
}

/** The WAL's fdatasync count and total seconds, from /metrics. */
async function walSyncs(server: TestServer): Promise<{ count: number; sumS: number }> {
  const text = await fetch(`${server.url}/metrics`, { headers: { Authorization: server.orgKey } }).then((r) => r.text());
  const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { count: sample('tally_wal_fsync_seconds_count'), sumS: sample('tally_wal_fsync_seconds_sum') };
}

const ms = (histogram: RecordableHistogram, percentile: number) =>
  histogram.count === 0 ? NaN : histogram.percentile(percentile) / 1e6;

/**
 * `concurrency` loops POST single events through one Pool for `warmupS` + `durationS` seconds; the
 * window counts the requests that complete within the last `durationS` seconds, and CPU is read
 * at its start and end.
 */
async function writeTest(origin: string, path: string, key: string, bodies: readonly Buffer[],
  options: Options, warmupS: number, pids: Pids, window: WindowHooks = {}): Promise<Measured> {
  const pool = new Pool(origin, { connections: options.connections, pipelining: 1 });
  const histogram = createHistogram();
  const headers = { authorization: key, 'content-type': 'application/json' };
  let running = true;
  let measuring = false;
  let requests = 0, non2xx = 0, errors = 0, sent = 0;
  let windowStart = 0, windowEnd = 0;
  let cpuBefore: Cpu | null = null;
  let cpu: Cpu | null = null;
  const openWindow = () => {
    cpuBefore = cpuNow(pids);
    windowStart = performance.now();
    measuring = true;
  };
  const loop = async () => {
    while (running) {
      const body = bodies[sent++ % bodies.length]!;
      const started = performance.now();
      let status = 0;
      try {
        const response = await pool.request({ origin, path, method: 'POST', headers, body });
        status = response.statusCode;
        await response.body.text();
      } catch {
        status = -1;
      }
      if (!measuring) continue;
      if (status === -1) {
        errors++;
        await sleep(5); // a refused connection is not a busy loop
        continue;
      }
      requests++;
      histogram.record(Math.max(1, Math.round((performance.now() - started) * 1e6)));
      if (status < 200 || status > 299) non2xx++;
    }
  };
  if (warmupS === 0) {
    await window.open?.();
    openWindow();
  }
  const loops = Array.from({ length: options.concurrency }, loop);
  if (warmupS > 0) {
    await sleep(warmupS * 1000);
    await window.open?.();
    openWindow();
  }
  await sleep(options.durationS * 1000);
  measuring = false;
  windowEnd = performance.now();
  cpu = cpuSince(cpuBefore!, pids);
  await window.close?.();
  running = false;
  await Promise.all(loops);
  await pool.close();
  const seconds = (windowEnd - windowStart) / 1000;
  return {
    requests, seconds, requestsPerS: requests / seconds,
    p50Ms: ms(histogram, 50), p99Ms: ms(histogram, 99), maxMs: histogram.count === 0 ? NaN : histogram.max / 1e6,
    non2xx, errors, cpu,
  };
}

const QUERY_MIX: { name: string; analysis: string; params: Record<string, unknown> }[] = [
  { name: 'count', analysis: 'count', params: {} },
  { name: 'sum price', analysis: 'sum', params: { target_property: 'price' } },
  { name: 'count_unique user_id', analysis: 'count_unique', params: { target_property: 'user_id' } },
  { name: 'median price', analysis: 'median', params: { target_property: 'price' } },
  { name: 'count group_by page.country', analysis: 'count', params: { group_by: 'page.country' } },
];

interface QueryStats {
  queries: number;
  queriesPerS: number;
  non2xx: number;
  /** The first non-200 answer: status and the start of its body. */
  firstNon2xx: string | null;
  errors: number;
  byQuery: Record<string, { queries: number; p50Ms: number; p99Ms: number }>;
}

/**
 * Runs the query mix in `loops` loops until stop() is called, over `projects` in turn; with
 * `perMinute` > 0 each project's queries start at most that many a minute, evenly spaced.
 */
function queryLoop(url: string, projects: readonly Project[], loops: number, perMinute: number): { stop: () => Promise<QueryStats> } {
  const pool = new Pool(url, { connections: loops, pipelining: 1 });
  const histograms = QUERY_MIX.map(() => createHistogram());
  const bodies = QUERY_MIX.map((q) => JSON.stringify({ event_collection: COLLECTION, timeframe: QUERY_TIMEFRAME, ...q.params }));
  let running = true;
  let queries = 0, non2xx = 0, errors = 0, turn = 0;
  let firstNon2xx: string | null = null;
  const started = performance.now();
  /** When the next query may start, per project, for the pace. */
  const nextStart = projects.map(() => started);
  const spacingMs = perMinute > 0 ? 60_000 / perMinute : 0;
  const loop = async () => {
    while (running) {
      const which = turn % QUERY_MIX.length;
      const p = turn++ % projects.length;
      const project = projects[p]!;
      const slot = nextStart[p]!;
      nextStart[p] = Math.max(slot, performance.now()) + spacingMs;
      const wait = slot - performance.now();
      if (wait > 0) await sleep(wait);
      if (!running) break;
      const begun = performance.now();
      try {
        const response = await pool.request({
          path: `/3.0/projects/${project.id}/queries/${QUERY_MIX[which]!.analysis}`, method: 'POST',
          headers: { authorization: project.read, 'content-type': 'application/json' }, body: bodies[which],
        });
        const text = await response.body.text();
        if (response.statusCode !== 200) {
          non2xx++;
          firstNon2xx ??= `${QUERY_MIX[which]!.name}: ${response.statusCode} ${text.slice(0, 200)}`;
        }
        histograms[which]!.record(Math.max(1, Math.round((performance.now() - begun) * 1e6)));
        queries++;
      } catch {
        errors++;
        await sleep(5);
      }
    }
  };
  const all = Array.from({ length: loops }, loop);
  return {
    stop: async () => {
      const seconds = (performance.now() - started) / 1000;
      running = false;
      await Promise.all(all);
      await pool.close();
      const byQuery = Object.fromEntries(QUERY_MIX.map((q, i) =>
        [q.name, { queries: histograms[i]!.count, p50Ms: ms(histograms[i]!, 50), p99Ms: ms(histograms[i]!, 99) }]));
      return { queries, queriesPerS: queries / seconds, non2xx, firstNon2xx, errors, byQuery };
    },
  };
}

// --- the run ---------------------------------------------------------------------------------

interface ScenarioResult extends Measured {
  scenario: string;
  description: string;
  ratioToFloor: number | null;
  /** Tally's CPU per acknowledged request over the window, µs. */
  tallyCpuUsPerRequest: number | null;
  load?: { events: number; seconds: number; eventsPerS: number };
  settle?: { settled: boolean; seconds: number };
  queryMix?: QueryStats;
  wal?: Wal;
}

const DESCRIPTIONS = {
  floor: 'floor: node:http, reads the body, answers 201',
  a: 'a: empty store',
  b: 'b: right after a load',
  c: 'c: queries running',
};

async function runScenario(name: 'a' | 'b' | 'c', options: Options, bodies: readonly Buffer[], floorPid: number | undefined,
  floorRate: number | null, log: (line: string) => void): Promise<ScenarioResult> {
  const extra = (process.env.TALLY_SERVER_ARGS ?? '').split(' ').filter(Boolean);
  const server = await startServer({ args: extra });
  const pids: Pids = { tally: server.child.pid, floor: floorPid };
  try {
    let description = DESCRIPTIONS[name];
    let load: ScenarioResult['load'];
    let settled: ScenarioResult['settle'];
    const first: Project = { id: server.projectId, write: server.keys.write, read: server.keys.read };
    const projects = [first];
    if (name === 'c') {
      for (let i = 1; i < options.queryProjects; i++) projects.push(await createProject(server, `query-${i}`));
    }
    if (name === 'b' || name === 'c') {
      const events = name === 'b' ? options.load : options.queryLoad;
      description = name === 'b' ? `b: right after loading ${events.toLocaleString('en-US')} events`
        : `c: queries running, ${events.toLocaleString('en-US')} events${projects.length > 1 ? ` in each of ${projects.length} projects` : ''}`;
      log(`${name}: loading ${events.toLocaleString('en-US')} events${projects.length > 1 ? ` into each of ${projects.length} projects` : ''} in ${LOAD_BATCH.toLocaleString('en-US')}-event batches...`);
      const startedMs = performance.now();
      for (const project of projects) await loadEvents(server.url, project, events);
      const seconds = (performance.now() - startedMs) / 1000;
      const loaded = { seconds, eventsPerS: (events * projects.length) / seconds };
      load = { events: events * projects.length, ...loaded };
      log(`${name}: loaded in ${loaded.seconds.toFixed(1)} s (${Math.round(loaded.eventsPerS).toLocaleString('en-US')} events/s)`);
      if (name === 'c') {
        settled = await settle(server, options.settleMaxS);
        log(`${name}: ${settled.settled ? 'settled' : 'NOT settled'} after ${settled.seconds.toFixed(1)} s`);
      }
    }
    const path = `/3.0/projects/${server.projectId}/events/${COLLECTION}`;
    const queries = name === 'c' ? queryLoop(server.url, projects, options.queryConcurrency, options.queryRate) : null;
    log(`${name}: writing for ${name === 'b' ? 0 : options.warmupS} + ${options.durationS} s...`);
    let before = { count: NaN, sumS: NaN }, after = before;
    const hooks: WindowHooks = { open: async () => { before = await walSyncs(server); }, close: async () => { after = await walSyncs(server); } };
    const measured = await writeTest(server.url, path, server.keys.write, bodies, options, name === 'b' ? 0 : options.warmupS, pids, hooks);
    const syncs = after.count - before.count;
    const wal: Wal = { fsyncsPerS: syncs / measured.seconds, requestsPerFsync: measured.requests / syncs, fsyncMeanMs: (1000 * (after.sumS - before.sumS)) / syncs };
    const queryMix = queries === null ? undefined : await queries.stop();
    return {
      scenario: name, description, ...measured,
      ratioToFloor: floorRate === null ? null : measured.requestsPerS / floorRate,
      tallyCpuUsPerRequest: measured.requests === 0 ? null : (1e6 * measured.cpu.tallyS) / measured.requests,
      ...(load && { load }), ...(settled && { settle: settled }), ...(queryMix && { queryMix }), wal,
    };
  } finally {
    await server.stop();
    server.cleanup();
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  return rows.map((row) => row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ')).join('\n');
}

const fixed = (value: number | null | undefined, digits: number) => value === null || value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);

async function main(): Promise<void> {
  let options: Options | null;
  try {
    options = readOptions(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`writes: ${(error as Error).message} (--help lists the flags)\n`);
    process.exit(2);
  }
  if (options === null) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const bodies = writeBodies();
  const averageBytes = bodies.reduce((sum, body) => sum + body.length, 0) / bodies.length;
  const loadavg = os.loadavg();
  console.log(`${os.cpus().length} cores, load average ${loadavg.map((l) => l.toFixed(2)).join(' ')}; ` +
    `undici Pool, ${options.connections} connections, pipelining 1, ${options.concurrency} in flight; ` +
    `events of ${averageBytes.toFixed(0)} bytes; ${options.durationS} s a scenario`);

  const floor = await startFloor();
  const kill = () => floor.child.kill('SIGTERM');
  process.once('exit', kill);
  const results: ScenarioResult[] = [];
  let floorResult: ScenarioResult | null = null;
  try {
    if (!options.skipFloor) {
      log(`floor: writing for ${options.warmupS} + ${options.durationS} s...`);
      const measured = await writeTest(floor.url, `/3.0/projects/floor/events/${COLLECTION}`, 'floor-key', bodies, options,
        options.warmupS, { tally: undefined, floor: floor.child.pid });
      floorResult = { scenario: 'floor', description: DESCRIPTIONS.floor, ...measured, ratioToFloor: 1, tallyCpuUsPerRequest: null };
    }
    for (const name of options.scenarios) {
      results.push(await runScenario(name, options, bodies, floor.child.pid, floorResult?.requestsPerS ?? null, log));
    }
  } finally {
    kill();
  }

  const rows = [['scenario', 'requests/s', 'x floor', 'p50 ms', 'p99 ms', 'non-2xx', 'errors',
    'CPU s: Tally', 'floor', 'client', 'Tally µs/req', 'fsyncs/s', 'req/fsync', 'fsync ms']];
  for (const r of floorResult === null ? results : [floorResult, ...results]) {
    rows.push([r.description, Math.round(r.requestsPerS).toLocaleString('en-US'), fixed(r.ratioToFloor, 2), fixed(r.p50Ms, 2),
      fixed(r.p99Ms, 2), String(r.non2xx), String(r.errors), r.scenario === 'floor' ? '-' : fixed(r.cpu.tallyS, 2),
      fixed(r.cpu.floorS, 2), fixed(r.cpu.clientS, 2), fixed(r.tallyCpuUsPerRequest, 0),
      fixed(r.wal?.fsyncsPerS, 0), fixed(r.wal?.requestsPerFsync, 1), fixed(r.wal?.fsyncMeanMs, 2)]);
  }
  console.log(table(rows));
  for (const r of results) {
    if (r.load) console.log(`${r.scenario}: load ${r.load.events.toLocaleString('en-US')} events in ${r.load.seconds.toFixed(1)} s` +
      ` (${Math.round(r.load.eventsPerS).toLocaleString('en-US')} events/s)${r.settle ? `, ${r.settle.settled ? 'settled' : 'NOT settled'} after ${r.settle.seconds.toFixed(1)} s` : ''}`);
    if (r.queryMix) {
      const q = r.queryMix;
      console.log(`${r.scenario}: ${q.queries} queries (${q.queriesPerS.toFixed(1)}/s, ${q.non2xx} non-200, ${q.errors} errors) ` +
        `over ${options.queryConcurrency} loops, ${options.queryRate > 0 ? `at most ${options.queryRate}/minute per project` : 'back to back'}; p50/p99 ms: ` +
        Object.entries(q.byQuery).map(([name, s]) => `${name} ${fixed(s.p50Ms, 1)}/${fixed(s.p99Ms, 1)}`).join(', '));
      if (q.firstNon2xx !== null) console.log(`${r.scenario}: the first non-200 query answer: ${q.firstNon2xx}`);
    }
  }
  console.log('CPU s: user+system of each process over the measured window (the client includes the query loop in c); ' +
    'fsyncs: the WAL\'s group commits in the window, from /metrics.');
  if (options.out !== null) {
    const { out, ...flags } = options;
    fs.writeFileSync(out, `${JSON.stringify({
      date: new Date().toISOString(), cores: os.cpus().length, loadavg, node: process.version,
      eventBytes: averageBytes, options: flags, floor: floorResult, scenarios: results,
    }, null, 2)}\n`);
    console.log(`JSON written to ${out}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
