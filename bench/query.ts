/**
 * Query speed against DuckDB on the same rows. Generates N events (default 10,000,000) over 90
 * days with a realistic schema, writes them as one segment per day (the engine's partitioning),
 * loads the same rows into an in-memory DuckDB, runs each query warm on both and prints one
 * table: query, Tally ms, DuckDB ms, ratio. Usage: node dist/bench/query.js [--rows N]
 * [--workers N]. Tally fans each query out over `workers` worker threads (default: one per
 * core, as when queries are the only load); DuckDB uses its default threads.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBDataChunk, DuckDBInstance, DOUBLE, VARCHAR, BOOLEAN } from '@duckdb/node-api';
import { QueryService } from '../engine/query/exec/service.js';
import {
  TAG_BOOL, TAG_NUM, TAG_STR, type Column, type ColumnChunk, type ScanSource, type SegmentRef,
} from '../engine/storage/chunk.js';
import { writeSegment } from '../engine/storage/segment/writer.js';
import { mulberry32 as random } from '../test/helpers/random.js';
import { benchArgs } from './args.js';

const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const DAYS = 90;
const COUNTRIES = ['US', 'DE', 'IN', 'GB', 'FR', 'BR', 'JP', 'CA', 'AU', 'ES', 'IT', 'NL', 'SE',
  'MX', 'KR', 'PL', 'TR', 'AR', 'ZA', 'NG'];
const BROWSERS = ['Chrome', 'Safari', 'Firefox', 'Edge', 'Opera', 'Samsung'];
const USERS = 500_000;
const PATHS = 1000;

/** One day of generated rows as global codes/values, plus its ColumnChunk. */
interface Day {
  readonly ts: Float64Array;
  readonly country: Int32Array;
  readonly browser: Int32Array;
  readonly page: Int32Array;
  readonly user: Int32Array;
  readonly price: Float64Array;
  readonly duration: Float64Array;
  readonly mobile: Uint8Array;
}

function generateDay(day: number, rows: number, rnd: () => number): Day {
  const ts = new Float64Array(rows);
  for (let i = 0; i < rows; i++) ts[i] = START + day * DAY + Math.floor(rnd() * DAY);
  ts.sort();
  const d: Day = {
    ts, country: new Int32Array(rows), browser: new Int32Array(rows), page: new Int32Array(rows),
    user: new Int32Array(rows), price: new Float64Array(rows), duration: new Float64Array(rows),
    mobile: new Uint8Array(rows),
  };
  for (let i = 0; i < rows; i++) {
    // Skewed distributions: a few countries and pages dominate, as in real traffic.
    d.country[i] = Math.floor(COUNTRIES.length * rnd() ** 2);
    d.browser[i] = Math.floor(BROWSERS.length * rnd() ** 1.5);
    d.page[i] = Math.floor(PATHS * rnd() ** 3);
    d.user[i] = Math.floor(USERS * rnd());
    d.price[i] = Math.round(rnd() * rnd() * 20000) / 100;
    d.duration[i] = Math.floor(-Math.log(1 - rnd()) * 800);
    d.mobile[i] = rnd() < 0.45 ? 1 : 0;
  }
  return d;
}

function stringColumn(path: string, codes: Int32Array, name: (code: number) => string, scratch: Int32Array): Column {
  const rows = codes.length;
  const str = new Int32Array(rows);
  const dict: string[] = [];
  const touched: number[] = [];
  for (let i = 0; i < rows; i++) {
    const global = codes[i];
    let local = scratch[global];
    if (local === -1) {
      local = scratch[global] = dict.push(name(global)) - 1;
      touched.push(global);
    }
    str[i] = local;
  }
  for (const global of touched) scratch[global] = -1;
  return { path, tags: new Uint8Array(rows).fill(TAG_STR), num: null, str, dict, lists: null };
}

function numberColumn(path: string, values: Float64Array, tag = TAG_NUM): Column {
  return { path, tags: new Uint8Array(values.length).fill(tag), num: values, str: null, dict: null, lists: null };
}

function toChunk(d: Day, firstSeq: number, scratch: Int32Array, userNames: string[], pageNames: string[]): ColumnChunk {
  const rows = d.ts.length;
  const columns = new Map<string, Column>([
    ['country', stringColumn('country', d.country, (c) => COUNTRIES[c], scratch)],
    ['browser', stringColumn('browser', d.browser, (c) => BROWSERS[c], scratch)],
    ['page.path', stringColumn('page.path', d.page, (c) => pageNames[c], scratch)],
    ['user_id', stringColumn('user_id', d.user, (c) => userNames[c], scratch)],
    ['price', numberColumn('price', d.price)],
    ['duration_ms', numberColumn('duration_ms', d.duration)],
    ['is_mobile', numberColumn('is_mobile', Float64Array.from(d.mobile), TAG_BOOL)],
  ]);
  return {
    rows, ts: d.ts, createdAt: d.ts, columns,
    seq: Float64Array.from({ length: rows }, (_, i) => firstSeq + i),
  };
}

const SCHEMA = {
  country: 'string', browser: 'string', 'page.path': 'string', user_id: 'string', price: 'num',
  duration_ms: 'num', is_mobile: 'bool',
} as const;

async function main(): Promise<void> {
  const args = benchArgs({ rows: { arg: 'N' }, workers: { arg: 'N' } });
  const rows = args.integer('rows', 10_000_000);
  const workers = args.integer('workers', os.availableParallelism(), 0);
  const rnd = random(42);
  const userNames = Array.from({ length: USERS }, (_, u) => `user-${u.toString(36).padStart(5, '0')}`);
  const pageNames = Array.from({ length: PATHS }, (_, p) => `/docs/section-${p % 37}/page-${p}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-'));
  const duck = await DuckDBInstance.create(':memory:');
  const db = await duck.connect();
  await db.run(`CREATE TABLE events (ts DOUBLE, country VARCHAR, browser VARCHAR, page VARCHAR,
    user_id VARCHAR, price DOUBLE, duration_ms DOUBLE, is_mobile BOOLEAN)`);
  const appender = await db.createAppender('events');
  const types = [DOUBLE, VARCHAR, VARCHAR, VARCHAR, VARCHAR, DOUBLE, DOUBLE, BOOLEAN];
  const segments: SegmentRef[] = [];
  const scratch = new Int32Array(USERS).fill(-1);
  const t0 = Date.now();
  let seq = 0;
  for (let day = 0; day < DAYS; day++) {
    const count = Math.floor(rows / DAYS) + (day < rows % DAYS ? 1 : 0);
    const d = generateDay(day, count, rnd);
    const chunk = toChunk(d, seq, scratch, userNames, pageNames);
    seq += count;
    const file = path.join(dir, `${day}.arrow`);
    segments.push({ file, footer: writeSegment(file, chunk, SCHEMA) });
    for (let at = 0; at < count; at += 2048) {
      const n = Math.min(2048, count - at);
      const dc = DuckDBDataChunk.create(types, n);
      const slice = <T>(f: (i: number) => T) => Array.from({ length: n }, (_, k) => f(at + k));
      dc.setColumnValues(0, slice((i) => d.ts[i]));
      dc.setColumnValues(1, slice((i) => COUNTRIES[d.country[i]]));
      dc.setColumnValues(2, slice((i) => BROWSERS[d.browser[i]]));
      dc.setColumnValues(3, slice((i) => pageNames[d.page[i]]));
      dc.setColumnValues(4, slice((i) => userNames[d.user[i]]));
      dc.setColumnValues(5, slice((i) => d.price[i]));
      dc.setColumnValues(6, slice((i) => d.duration[i]));
      dc.setColumnValues(7, slice((i) => d.mobile[i] === 1));
      appender.appendDataChunk(dc);
    }
  }
  appender.flushSync();
  appender.closeSync();
  console.error(`generated and loaded ${rows} rows in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const source = (_p: string, _c: string, startMs: number, endMs: number): ScanSource => ({
    idKey: 0, memoryVersion: 0,
    segments: segments.filter((s) => s.footer.tsMax >= startMs && s.footer.tsMin < endMs),
    memory: null,
    schema: SCHEMA,
  });
  const service = new QueryService({ source, clock: () => START + DAYS * DAY, workers });
  const all = { start: iso(START), end: iso(START + DAYS * DAY) };
  const last30 = { start: iso(START + 60 * DAY), end: iso(START + DAYS * DAY) };
  const inAll = `ts >= ${START} AND ts < ${START + DAYS * DAY}`;
  const queries: [string, string, Record<string, unknown>, string][] = [
    ['count, 30-day timeframe', 'count', { timeframe: last30 },
      `SELECT count(*) FROM events WHERE ts >= ${START + 60 * DAY} AND ts < ${START + DAYS * DAY}`],
    ['count, eq filter', 'count', { timeframe: all, filters: [{ property_name: 'country', operator: 'eq', property_value: 'DE' }] },
      `SELECT count(*) FROM events WHERE ${inAll} AND country = 'DE'`],
    ['count, range filter', 'count', { timeframe: all, filters: [
      { property_name: 'price', operator: 'gte', property_value: 10 },
      { property_name: 'price', operator: 'lt', property_value: 50 }] },
    `SELECT count(*) FROM events WHERE ${inAll} AND price >= 10 AND price < 50`],
    ['sum + average', 'multi_analysis', { timeframe: all, analyses: {
      s: { analysis_type: 'sum', target_property: 'price' },
      a: { analysis_type: 'average', target_property: 'price' } } },
    `SELECT sum(price), avg(price) FROM events WHERE ${inAll}`],
    ['count_unique high-card', 'count_unique', { timeframe: all, target_property: 'user_id' },
      `SELECT count(DISTINCT user_id) FROM events WHERE ${inAll}`],
    ['count_unique low-card', 'count_unique', { timeframe: all, target_property: 'country' },
      `SELECT count(DISTINCT country) FROM events WHERE ${inAll}`],
    ['group_by count', 'count', { timeframe: all, group_by: 'browser' },
      `SELECT browser, count(*) FROM events WHERE ${inAll} GROUP BY browser ORDER BY browser`],
    ['group_by + daily interval', 'count', { timeframe: all, group_by: 'country', interval: 'daily' },
      `SELECT floor(ts / ${DAY}) AS d, country, count(*) FROM events WHERE ${inAll} GROUP BY d, country ORDER BY d, country`],
    ['percentile p90', 'percentile', { timeframe: all, target_property: 'duration_ms', percentile: 90 },
      `SELECT quantile_cont(duration_ms, 0.9) FROM events WHERE ${inAll}`],
  ];
  const table: string[][] = [['query', 'Tally ms', 'DuckDB ms', 'ratio', 'Tally result', 'DuckDB result']];
  for (const [name, analysis, params, sql] of queries) {
    let tallyResult: unknown;
    const tally = await best(async () => {
      tallyResult = await service.run('bench', analysis, { event_collection: 'events', ...params });
    });
    let duckResult: unknown;
    const duckMs = await best(async () => {
      const reader = await db.runAndReadAll(sql);
      duckResult = reader.getRows().length === 1 ? reader.getRows()[0] : `${reader.getRows().length} rows`;
    });
    table.push([name, tally.toFixed(1), duckMs.toFixed(1), (tally / duckMs).toFixed(2),
      summarize(tallyResult), String(duckResult)]);
  }
  printTable(table);
  await service.close();
  db.closeSync();
  fs.rmSync(dir, { recursive: true, force: true });
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Best of 5 warm runs (after 2 warm-ups), in ms. */
async function best(run: () => Promise<void>): Promise<number> {
  await run();
  await run();
  let min = Infinity;
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    await run();
    min = Math.min(min, performance.now() - t);
  }
  return min;
}

function summarize(body: unknown): string {
  const result = (body as { result: unknown }).result;
  if (Array.isArray(result)) return `${result.length} rows`;
  return JSON.stringify(result, (_k, v) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v));
}

function printTable(rows: string[][]): void {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const [r, row] of rows.entries()) {
    console.log(row.map((cell, c) => (c === 0 || c >= 4 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join(' | '));
    if (r === 0) console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  }
}

await main();
