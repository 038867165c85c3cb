/**
 * Enriched ingest, Tally against DuckDB, on the same machine and the same events.
 *
 * Tally gets the events as clients send them: 5,000-event batch bodies (JSON text) whose events
 * each carry all five add-ons; engine.events.appendBatch parses, enriches, fsyncs and buffers them.
 * DuckDB gets the easier job: the same events already enriched (the JSON Tally stores, about
 * 1.6 KB each), as 5,000-line NDJSON files, each loaded by one INSERT ... FROM read_ndjson_auto
 * into a table in a database file (one commit per batch). Both run for the same time with the
 * same number of batches in flight (DuckDB: one connection, as its writes to a table serialize).
 *
 *   node dist/bench/ingest-duckdb.js [--seconds 10]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { openEngine } from '../engine/index.js';
import { benchArgs } from './args.js';
import { enrichedEvent } from './events.js';

const SECONDS = benchArgs({ seconds: { arg: 'S' } }).positive('seconds', 10);
const BATCH = 5_000;
const BODIES = 8;
const IN_FLIGHT = 4;
const ctx = { ip: '127.0.0.1', userAgent: 'bench' };

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-duckdb-'));
const bodies = Array.from({ length: BODIES }, (_, b) =>
  Buffer.from(JSON.stringify({ bench: Array.from({ length: BATCH }, (_, k) => enrichedEvent(b * BATCH + k)) })));

async function tally(): Promise<{ eventsPerS: number; stored: string[] }> {
  const engine = await openEngine({ dataDir: path.join(dir, 'tally'), queryWorkers: 1 });
  const project = engine.projects.list()[0]!.id;
  // Warm-up: starts the ingest workers and fills the enrichment caches once.
  await engine.events.appendBatch(project, Buffer.from(bodies[0]!), ctx);
  let batches = 0;
  const started = performance.now();
  const run = async () => {
    while (performance.now() - started < SECONDS * 1000) {
      const results = (await engine.events.appendBatch(project, Buffer.from(bodies[batches++ % BODIES]!), ctx)).results;
      if (results.some((r) => !r.ok)) throw new Error('an event was refused');
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, run));
  const eventsPerS = (batches * BATCH) / ((performance.now() - started) / 1000);
  const stored = engine.log.read(project, 'bench', 0, BATCH * BODIES, 1 << 30).map((record) => record.json);
  await engine.close();
  return { eventsPerS, stored };
}

async function duckdb(stored: readonly string[]): Promise<number> {
  const files = Array.from({ length: BODIES }, (_, b) => {
    const file = path.join(dir, `batch-${b}.ndjson`);
    fs.writeFileSync(file, stored.slice(b * BATCH, (b + 1) * BATCH).join('\n'));
    return file;
  });
  const instance = await DuckDBInstance.create(path.join(dir, 'duck.db'));
  const connection = await instance.connect();
  await connection.run(`CREATE TABLE events AS SELECT * FROM read_ndjson_auto('${files[0]}') LIMIT 0`);
  await connection.run(`INSERT INTO events SELECT * FROM read_ndjson_auto('${files[0]}')`); // warm-up
  let batches = 0;
  const started = performance.now();
  while (performance.now() - started < SECONDS * 1000) {
    await connection.run(`INSERT INTO events SELECT * FROM read_ndjson_auto('${files[batches++ % BODIES]}')`);
  }
  const eventsPerS = (batches * BATCH) / ((performance.now() - started) / 1000);
  connection.closeSync();
  instance.closeSync();
  return eventsPerS;
}

const { eventsPerS: tallyRate, stored } = await tally();
const bytes = stored.reduce((sum, json) => sum + Buffer.byteLength(json), 0) / stored.length;
const duckRate = await duckdb(stored);
console.log(`events: ${bodies[0]!.length / BATCH | 0} B as sent, ${bytes | 0} B as stored; ${BATCH}-event batches, ${os.availableParallelism()} cores`);
console.log(`tally  (parse + five add-ons + fsync):       ${Math.round(tallyRate).toLocaleString('en-US')} events/s`);
console.log(`duckdb (already enriched NDJSON, one INSERT per batch): ${Math.round(duckRate).toLocaleString('en-US')} events/s`);
console.log(`tally / duckdb: ${(tallyRate / duckRate).toFixed(2)}x`);
fs.rmSync(dir, { recursive: true, force: true });
