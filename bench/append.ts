/**
 * Engine-only write throughput (no HTTP): batch bodies of 5,000 realistic events appended through
 * engine.events.appendBatch (as the HTTP batch route does) with fsync on, several batches in flight. Answers "how fast is the write
 * path itself?"; bench/ingest.ts answers the same over HTTP.
 * --enriched uses events that carry all five add-ons; --preenriched sends the same events already
 * enriched (their add-on outputs as plain properties, no svc), to tell the add-ons' cost from that
 * of storing bigger events.
 * --ingest-workers N sets the engine's ingest workers (0: every batch is prepared in-thread).
 *   node dist/bench/append.js [--events N] [--concurrency C] [--enriched | --preenriched] [--ingest-workers N]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createEnricher } from '../engine/enrich/pipeline.js';
import { openEngine } from '../engine/index.js';
import { benchArgs } from './args.js';
import { enrichedEvent, plainEvent } from './events.js';

const args = benchArgs({
  events: { arg: 'N' }, concurrency: { arg: 'C' }, enriched: {}, preenriched: {}, 'ingest-workers': { arg: 'N' },
});
const total = args.integer('events', 1_000_000);
const concurrency = args.integer('concurrency', 4);
const ingestWorkers = args.has('ingest-workers') ? args.integer('ingest-workers', 0, 0) : undefined;
const BATCH = 5_000;

const enricher = args.flag('preenriched') ? await createEnricher({}) : null;
function preenrichedEvent(i: number): Record<string, unknown> {
  const event = enrichedEvent(i);
  (event.svc as Record<string, unknown>).timestamp = new Date().toISOString();
  enricher!.apply(event, Date.now());
  delete event.svc;
  return event;
}
const event = args.flag('enriched') ? enrichedEvent : enricher ? preenrichedEvent : plainEvent;
const mode = args.flag('enriched') ? ', all five add-ons' : enricher ? ', events already enriched' : '';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-append-'));
const engine = await openEngine({ dataDir: dir, queryWorkers: 1, ...(ingestWorkers !== undefined && { ingestWorkers }) });
const project = engine.projects.list()[0].id;
const ctx = { ip: '127.0.0.1', userAgent: 'bench' };
// Each batch arrives as JSON text and is parsed inside the timed loop, as the HTTP server does.
const BATCH_BODIES = Array.from({ length: 8 }, (_, b) =>
  Buffer.from(JSON.stringify({ bench: Array.from({ length: BATCH }, (_, k) => event(b * BATCH + k)) })));
let next = 0;
let batches = 0;
const latencies: number[] = [];
const started = performance.now();
async function worker() {
  while (next < total) {
    next += BATCH;
    const t0 = performance.now();
    const body = Buffer.from(BATCH_BODIES[batches++ % BATCH_BODIES.length]); // the route's body is its own copy
    const { results } = await engine.events.appendBatch(project, body, ctx);
    if (results.some((result) => !result.ok)) throw new Error('an event was refused');
    latencies.push(performance.now() - t0);
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))].toFixed(1);
console.log(`append: ${total} events in ${seconds.toFixed(2)} s = ${Math.round(total / seconds)} events/s; ` +
  `batch p50 ${pct(0.5)} ms p99 ${pct(0.99)} ms (batch ${BATCH}, concurrency ${concurrency}, fsync on${mode}` +
  `${ingestWorkers !== undefined ? `, ${ingestWorkers} ingest workers` : ''})`);
const t1 = performance.now();
await engine.close();
console.log(`close (final flush): ${(performance.now() - t1).toFixed(0)} ms`);
fs.rmSync(dir, { recursive: true, force: true });
