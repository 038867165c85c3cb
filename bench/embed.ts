/**
 * Embedding as a script meets it: a fresh Node process imports the engine, opens a small store,
 * appends one event, reads it back with an extraction and closes; each step timed, R runs, each
 * in its own process (so nothing is warm but the OS's file cache), on a new store and on a
 * reopened one. Prints the medians and the whole process's wall time.
 *   node dist/bench/embed.js [--runs R]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from './args.js';

const INDEX = fileURLToPath(new URL('../engine/index.js', import.meta.url));
const runs = benchArgs({ runs: { arg: 'R' } }).integer('runs', 5);

const SCRIPT = `
const t0 = performance.now();
const { openEngine } = await import(${JSON.stringify(INDEX)});
const t1 = performance.now();
const engine = await openEngine({ dataDir: process.argv[2] });
const t2 = performance.now();
const project = engine.projects.list()[0].id;
await engine.events.append(project, [{ collection: 'clicks', event: { button: 'buy' } }], { ip: '127.0.0.1', userAgent: 'bench' });
const t3 = performance.now();
const { result } = await engine.queries.run(project, 'extraction', { event_collection: 'clicks', timeframe: 'this_1_days' });
const t4 = performance.now();
await engine.close();
const t5 = performance.now();
if (result.length < 1) throw new Error('the event was not read back');
console.log(JSON.stringify({ import: t1 - t0, open: t2 - t1, append: t3 - t2, extraction: t4 - t3, close: t5 - t4 }));
`;

type Times = Record<'import' | 'open' | 'append' | 'extraction' | 'close' | 'process', number>;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-embed-'));
// A script file, not `node -e`: worker threads inherit the parent's execArgv, `-e` included.
const scriptFile = path.join(work, 'embed.mjs');
fs.writeFileSync(scriptFile, SCRIPT);

function once(dataDir: string): Times {
  const started = performance.now();
  const out = execFileSync(process.execPath, [scriptFile, dataDir], { encoding: 'utf8' });
  const times = JSON.parse(out.trim().split('\n').pop()!) as Omit<Times, 'process'>;
  return { ...times, process: performance.now() - started };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

try {
  const fresh: Times[] = [];
  const reopened: Times[] = [];
  for (let run = 0; run < runs; run++) {
    const dir = path.join(work, `store-${run}`);
    fresh.push(once(dir));
    reopened.push(once(dir));
  }
  const keys: (keyof Times)[] = ['import', 'open', 'append', 'extraction', 'close', 'process'];
  console.log(`medians of ${runs} runs, ms (${os.cpus().length} cores, Node ${process.version})`);
  console.log(`${'store'.padEnd(10)}${keys.map((k) => k.padStart(11)).join('')}`);
  for (const [name, all] of [['new', fresh], ['reopened', reopened]] as const) {
    console.log(`${name.padEnd(10)}${keys.map((k) => median(all.map((t) => t[k])).toFixed(1).padStart(11)).join('')}`);
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
