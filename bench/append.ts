/**
 * Engine-only write throughput (no HTTP): batches of 5,000 realistic events appended through
 * engine.appendEvents with fsync on, several batches in flight. Answers "how fast is the write
 * path itself?"; bench/ingest.ts answers the same over HTTP.
 *   node dist/bench/append.js [--events N] [--concurrency C]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEngine } from '../engine/index.js';

const args = new Map(process.argv.slice(2).map((a, i, all) => [a, all[i + 1]]));
const total = Number(args.get('--events') ?? 1_000_000);
const concurrency = Number(args.get('--concurrency') ?? 4);
const BATCH = 5_000;

function event(i: number) {
  return {
    user: { id: `u${i % 50_000}`, plan: ['free', 'pro', 'team'][i % 3] },
    page: `/p/${i % 200}`,
    price: (i % 1000) / 10,
    ok: i % 2 === 0,
    tags: ['a', 'b'],
  };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-append-'));
const engine = await openEngine({ dataDir: dir, queryWorkers: 1 });
const project = engine.listProjects()[0].id;
const ctx = { ip: '127.0.0.1', userAgent: 'bench' };
let next = 0;
const latencies: number[] = [];
const started = performance.now();
async function worker() {
  while (next < total) {
    const base = next;
    next += BATCH;
    const events = Array.from({ length: BATCH }, (_, k) => ({ collection: 'bench', event: event(base + k) }));
    const t0 = performance.now();
    await engine.appendEvents(project, events, ctx);
    latencies.push(performance.now() - t0);
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))].toFixed(1);
console.log(`append: ${total} events in ${seconds.toFixed(2)} s = ${Math.round(total / seconds)} events/s; ` +
  `batch p50 ${pct(0.5)} ms p99 ${pct(0.99)} ms (batch ${BATCH}, concurrency ${concurrency}, fsync on)`);
const t1 = performance.now();
await engine.close();
console.log(`close (final flush): ${(performance.now() - t1).toFixed(0)} ms`);
fs.rmSync(dir, { recursive: true, force: true });
