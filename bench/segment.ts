/**
 * Question: how fast do segments write and read, and how large are they against the raw JSON?
 * Builds a 1M-row chunk with 10 property columns (low/high cardinality strings, numbers, bools,
 * some missing and null), writes it with writeSegment, reads it back whole and projected; then
 * times the segment worker's two jobs on it (maintenance/segment-worker.ts): a merge of its two
 * halves written as segments, and a flush split in two parts with its id columns as a write buffer
 * keeps them (one dictionary entry per row, chunk.ts Column.repeats).
 * Run: npx tsc -p tsconfig.json && node dist/bench/segment.js [rows]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import {
  TAG_BOOL,
  TAG_MISSING,
  TAG_NULL,
  TAG_NUM,
  TAG_STR,
  type Column,
  type ColumnChunk,
  type SchemaType,
} from '../engine/storage/chunk.js';
import { computeFooter } from '../engine/storage/segment/footer.js';
import { readFooter, readSegment } from '../engine/storage/segment/reader.js';
import { computeSketches } from '../engine/storage/segment/sketches.js';
import { encodeSegment, writeSegment } from '../engine/storage/segment/writer.js';
import { gatherChunk } from '../engine/storage/chunk-ops.js';
import { runSegmentJob } from '../engine/maintenance/segment-worker.js';
import { benchArgs } from './args.js';

const ROWS = benchArgs({}, { positionals: ['rows'] }).positionalInteger(0, 'rows', 1_000_000);
const T0 = Date.UTC(2026, 0, 1);

const COUNTRIES = ['US', 'GB', 'DE', 'FR', 'JP', 'BR', 'IN', 'CA', 'AU', 'ES'];
const BROWSERS = ['Chrome', 'Safari', 'Firefox', 'Edge', 'Opera'];

/** A deterministic pseudo-random stream (xorshift32), so runs are comparable. */
function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
}

interface ColumnSpec {
  readonly path: string;
  readonly type: SchemaType;
  /** Value of row i: number, string, boolean, null, or undefined (missing). */
  readonly value: (row: number, next: () => number) => number | string | boolean | null | undefined;
}

const SPECS: readonly ColumnSpec[] = [
  { path: 'country', type: 'string', value: (_, r) => COUNTRIES[Math.floor(r() * 10)] },
  { path: 'browser', type: 'string', value: (_, r) => BROWSERS[Math.floor(r() * 5)] },
  { path: 'user.id', type: 'string', value: (_, r) => `u${Math.floor(r() * 200_000)}` },
  { path: 'session', type: 'string', value: (i) => `s-${i.toString(36)}-${(i * 7919) % 100_003}` },
  { path: 'page', type: 'string', value: (_, r) => `/p/${Math.floor(r() * 2000)}` },
  { path: 'amount', type: 'num', value: (_, r) => Math.round(r() * 100_000) / 100 },
  { path: 'latency_ms', type: 'num', value: (_, r) => (r() < 0.1 ? undefined : r() * 900) },
  { path: 'score', type: 'num', value: (_, r) => (r() < 0.05 ? null : r()) },
  { path: 'paid', type: 'bool', value: (_, r) => r() < 0.3 },
  { path: 'returning', type: 'bool', value: (_, r) => (r() < 0.5 ? undefined : r() < 0.5) },
];

let rawJsonBytes = 0;

function buildChunk(rows: number): ColumnChunk {
  const next = random(42);
  const columns = new Map<string, Column>();
  const values = SPECS.map(() => new Array<unknown>(rows));
  for (const [index, spec] of SPECS.entries()) {
    const column = emptyColumn(spec.path, rows);
    const codes = new Map<string, number>();
    for (let row = 0; row < rows; row++) {
      const value = spec.value(row, next);
      values[index][row] = value;
      setValue(column, codes, row, value);
    }
    columns.set(spec.path, column);
  }
  rawJsonBytes = jsonBytes(rows, values);
  return {
    rows,
    ts: Float64Array.from({ length: rows }, (_, row) => T0 + row * 37),
    createdAt: Float64Array.from({ length: rows }, (_, row) => T0 + row * 37 + 3),
    seq: Float64Array.from({ length: rows }, (_, row) => row),
    columns,
  };
}

function emptyColumn(path: string, rows: number): Column & { dict: string[] } {
  const tags = new Uint8Array(rows);
  const num = new Float64Array(rows);
  return { path, tags, num, str: new Int32Array(rows), dict: [], lists: null };
}

function setValue(
  column: Column & { dict: string[] },
  codes: Map<string, number>,
  row: number,
  value: unknown,
): void {
  const tags = column.tags;
  if (value === undefined) tags[row] = TAG_MISSING;
  else if (value === null) tags[row] = TAG_NULL;
  else if (typeof value === 'number') {
    tags[row] = TAG_NUM;
    column.num![row] = value;
  } else if (typeof value === 'boolean') {
    tags[row] = TAG_BOOL;
    column.num![row] = value ? 1 : 0;
  } else {
    tags[row] = TAG_STR;
    const text = value as string;
    let code = codes.get(text);
    if (code === undefined) codes.set(text, (code = column.dict.push(text) - 1));
    column.str![row] = code;
  }
}

/** Bytes of the rows as JSON, the size the segment is compared with. */
function jsonBytes(rows: number, values: unknown[][]): number {
  let total = 0;
  for (let row = 0; row < rows; row++) {
    const timestamp = new Date(T0 + row * 37).toISOString();
    const event: Record<string, unknown> = { svc: { timestamp } };
    SPECS.forEach((spec, index) => (event[spec.path] = values[index][row]));
    total += Buffer.byteLength(JSON.stringify(event));
  }
  return total;
}

function timed<T>(run: () => T): [T, number] {
  const start = performance.now();
  const result = run();
  return [result, (performance.now() - start) / 1000];
}

function report(label: string, seconds: number, rows: number, bytes: number): void {
  const mb = bytes / 1e6;
  console.log(
    `${label.padEnd(26)} ${seconds.toFixed(3).padStart(7)} s` +
      `  ${(rows / seconds / 1e6).toFixed(2)} M rows/s` +
      `  ${(mb / seconds).toFixed(0).padStart(5)} MB/s of raw JSON`,
  );
}

function ms(seconds: number): string {
  return `${(seconds * 1000).toFixed(0)} ms`;
}

function main(): void {
  const schema = Object.fromEntries(SPECS.map((spec) => [spec.path, spec.type]));
  const [chunk, buildSeconds] = timed(() => buildChunk(ROWS));
  const rawBytes = rawJsonBytes;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-')), 'segment.arrow');
  const columns = SPECS.length;
  console.log(`${ROWS} rows, ${columns} property columns; built in ${buildSeconds.toFixed(1)} s`);
  const [, writeSeconds] = timed(() => writeSegment(file, chunk, schema));
  report('write', writeSeconds, ROWS, rawBytes);
  const [footer, footerStatsSeconds] = timed(() => computeFooter(chunk));
  const [, sketchSeconds] = timed(() => computeSketches(chunk));
  const [, encodeSeconds] = timed(() => encodeSegment(chunk, schema, footer));
  console.log(
    `  of which: stats ${ms(footerStatsSeconds)}, sketches ${ms(sketchSeconds)},` +
      ` Arrow encode + LZ4 ${ms(encodeSeconds)}, the rest (fsync, rename) is disk`,
  );
  const [, readSeconds] = timed(() => readSegment(file));
  report('read all columns', readSeconds, ROWS, rawBytes);
  const [, decodeSeconds] = timed(() => tableFromIPC(fs.readFileSync(file)));
  console.log(
    `  of which: file read + Arrow decode + LZ4 ${ms(decodeSeconds)},` +
      ` conversion to ColumnChunk ${ms(readSeconds - decodeSeconds)}`,
  );
  const [, projectedSeconds] = timed(() => readSegment(file, ['country', 'amount']));
  report('read 2 columns', projectedSeconds, ROWS, rawBytes);
  const [, footerSeconds] = timed(() => readFooter(file));
  const fileBytes = fs.statSync(file).size;
  const metaBytes = fs.statSync(file + '.meta').size;
  console.log(`readFooter                 ${(footerSeconds * 1000).toFixed(1)} ms`);
  console.log(`raw JSON   ${(rawBytes / 1e6).toFixed(1)} MB`);
  const percent = ((fileBytes / rawBytes) * 100).toFixed(1);
  const megabytes = (fileBytes / 1e6).toFixed(1);
  console.log(`segment    ${megabytes} MB (${percent}% of raw JSON, _raw included)`);
  console.log(`sidecar    ${(metaBytes / 1e3).toFixed(1)} kB`);
  segmentJobs(chunk, schema, path.dirname(file), rawBytes);
  fs.rmSync(path.dirname(file), { recursive: true });
}

/** The segment worker's merge and flush jobs on `chunk`, each the median of three. */
function segmentJobs(chunk: ColumnChunk, schema: Record<string, SchemaType>, dir: string, rawBytes: number): void {
  const half = Math.floor(chunk.rows / 2);
  const halves = [Int32Array.from({ length: half }, (_, row) => row),
    Int32Array.from({ length: chunk.rows - half }, (_, row) => half + row)];
  const sources = halves.map((rows, index) => {
    const source = path.join(dir, `half-${index}.arrow`);
    writeSegment(source, gatherChunk(chunk, rows), schema);
    return source;
  });
  const median = (run: (attempt: number) => void): number =>
    [0, 1, 2].map((attempt) => timed(() => run(attempt))[1]).sort((a, b) => a - b)[1];
  report('merge 2 halves', median((attempt) => runSegmentJob(
    { op: 'compact', id: attempt, file: path.join(dir, `merged-${attempt}.arrow`), sources, schema })), chunk.rows, rawBytes);
  const columns = new Map(chunk.columns);
  for (const idPath of ['user.id', 'session']) {
    const column = chunk.columns.get(idPath)!;
    const dict: string[] = [];
    const str = new Int32Array(chunk.rows);
    for (let row = 0; row < chunk.rows; row++) {
      if (column.tags[row] === TAG_STR) str[row] = dict.push(column.dict![column.str![row]]) - 1;
    }
    columns.set(idPath, { ...column, str, dict, repeats: true });
  }
  const buffered: ColumnChunk = { ...chunk, columns };
  report('flush in 2 parts', median((attempt) => runSegmentJob({ op: 'write', id: attempt, chunk: buffered, schema,
    parts: halves.map((indices, index) => ({ file: path.join(dir, `flushed-${attempt}-${index}.arrow`), indices })) })),
  chunk.rows, rawBytes);
}

main();
