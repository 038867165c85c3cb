/**
 * The cost of a filtered delete of 1% of N events (default 1,000,000) while queries run: writes N
 * events over 10 days through the embedded engine, flushes them to segments, then measures a
 * filtered count's latency before the delete, while the background rewrite removes the deleted
 * rows (the delete entry is still applied as a predicate), and after. Prints the delete's
 * acknowledgement time, the rewrite's duration and the segment bytes before and after (once the
 * replaced files' grace period has passed). Queries during the rewrite read each rewritten
 * segment cold, and the rewrite shares the cores, hence their higher latency.
 * Usage: node dist/bench/delete.js [--rows N]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEngine } from '../engine/index.js';
import { benchArgs } from './args.js';

const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const BATCH = 20_000;

function arrowBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.arrow'))
      total += fs.statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return total;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function main(): Promise<void> {
  const rows = benchArgs({ rows: { arg: 'N' } }).integer('rows', 1_000_000);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-delete-'));
  const engine = await openEngine({ dataDir, fsync: false, flushIntervalMs: 3_600_000 });
  const project = engine.projects.list()[0].id;
  const ctx = { ip: '127.0.0.1', userAgent: 'bench' };
  for (let from = 0; from < rows; from += BATCH) {
    const events = [];
    for (let i = from; i < Math.min(rows, from + BATCH); i++) {
      const ts = new Date(START + Math.floor((i / rows) * 10 * DAY)).toISOString();
      events.push({
        bucket: i % 100,
        price: i % 1000,
        country: `c${i % 20}`,
        svc: { timestamp: ts },
      });
    }
    await engine.events.appendBatch(project, Buffer.from(JSON.stringify({ pv: events })), ctx);
    if ((from + BATCH) % 1_000_000 === 0) await engine.flush(); // keeps the write buffer small
  }
  await engine.flush();
  const query = {
    event_collection: 'pv',
    timeframe: { start: '2023-12-01T00:00:00Z', end: '2024-02-01T00:00:00Z' },
    filters: [{ property_name: 'price', operator: 'gte', property_value: 0 }],
  };
  const time = async () => {
    const t0 = performance.now();
    const result = await engine.queries.run(project, 'count', query);
    return { ms: performance.now() - t0, result: (result as { result: number }).result };
  };
  const coldMs = (await time()).ms; // decodes every segment into the workers' caches
  const before: number[] = [];
  for (let i = 0; i < 10; i++) before.push((await time()).ms);
  const bytesBefore = arrowBytes(dataDir);
  const t0 = performance.now();
  await engine.collections.deleteEvents(project, 'pv', {
    filters: [{ property_name: 'bucket', operator: 'eq', property_value: 0 }],
  });
  const ackMs = performance.now() - t0;
  const during: number[] = [];
  const deletesFile = path.join(dataDir, 'deletes.json');
  const pending = () =>
    (JSON.parse(fs.readFileSync(deletesFile, 'utf8')) as { entries: unknown[] }).entries.length > 0;
  let rewriting = true;
  const rewrite = (async () => {
    while (pending()) await engine.flush();
    rewriting = false;
  })();
  let counted = 0;
  while (rewriting) {
    const { ms, result } = await time();
    during.push(ms);
    counted = result;
  }
  await rewrite;
  const rewriteMs = performance.now() - t0;
  const after: number[] = [];
  for (let i = 0; i < 10; i++) {
    const { ms, result } = await time();
    after.push(ms);
    counted = result;
  }
  // Replaced segment files are removed after a grace period (engine/deletes/manager.ts).
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  const bytesAfter = arrowBytes(dataDir);
  const row = (name: string, v: number[]) =>
    console.log(
      `${name.padEnd(8)} queries=${String(v.length).padStart(4)} p50=${percentile(v, 50).toFixed(1)} ms p99=${percentile(v, 99).toFixed(1)} ms`,
    );
  console.log(`rows=${rows} deleted=${rows / 100} (1%) count after=${counted}`);
  console.log(
    `delete acknowledged in ${ackMs.toFixed(1)} ms; background rewrite done in ${(rewriteMs / 1000).toFixed(2)} s`,
  );
  console.log(`first (cold) query ${coldMs.toFixed(1)} ms`);
  row('before', before);
  row('during', during);
  row('after', after);
  console.log(`segment bytes before=${bytesBefore} after=${bytesAfter}`);
  await engine.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

await main();
