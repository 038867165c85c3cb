/**
 * Question: is the in-house HyperLogLog (engine/sketch) faster and at least as accurate as
 * hyperloglog-lite, both at p=14? Prints adds/s (hash + add, strings and numbers) and relative
 * error at several cardinalities, with the theoretical standard error 1.04/sqrt(2^14) = 0.81%.
 * Run: npx tsc -p tsconfig.json && node dist/bench/sketch.js
 */
import { createRequire } from 'node:module';
import { HLL_PRECISION } from '../engine/base/limits.js';
import { hashNumber, hashString } from '../engine/sketch/hash.js';
import { HyperLogLog } from '../engine/sketch/hyperloglog.js';

interface LiteSketch {
  add(hash: number[]): unknown;
  count(): number;
}
interface LiteModule {
  (precision: number): LiteSketch;
  hash(value: string): number[];
}
const require = createRequire(import.meta.url);
const lite = require('hyperloglog-lite') as LiteModule;

const SEED = 0x2545f491;
const CARDINALITIES = [1e3, 4e4, 1e5, 1e6, 1e7];
const LITE_MAX = 1e6; // hyperloglog-lite adds ~1.5M/s; 1e7 would take most of a minute.

interface Row {
  impl: string;
  input: string;
  distinct: number;
  addsPerSec: number;
  errorPct: number;
}

function runOurs(distinct: number, input: 'string' | 'number'): Row {
  const sketch = new HyperLogLog(HLL_PRECISION);
  const start = performance.now();
  if (input === 'string') {
    for (let i = 0; i < distinct; i++) sketch.add(hashString('user-' + i, SEED));
  } else {
    for (let i = 0; i < distinct; i++) sketch.add(hashNumber(i * 1.25, SEED));
  }
  const seconds = (performance.now() - start) / 1000;
  return row('tally', input, distinct, seconds, sketch.estimate());
}

function runLite(distinct: number, input: 'string' | 'number'): Row {
  const sketch = lite(HLL_PRECISION);
  const start = performance.now();
  if (input === 'string') {
    for (let i = 0; i < distinct; i++) sketch.add(lite.hash('user-' + i));
  } else {
    for (let i = 0; i < distinct; i++) sketch.add(lite.hash(String(i * 1.25)));
  }
  const seconds = (performance.now() - start) / 1000;
  return row('hyperloglog-lite', input, distinct, seconds, sketch.count());
}

function row(
  impl: string,
  input: string,
  distinct: number,
  seconds: number,
  estimate: number,
): Row {
  const errorPct = ((estimate - distinct) / distinct) * 100;
  return { impl, input, distinct, addsPerSec: distinct / seconds, errorPct };
}

function main(): void {
  // Warm both up so small cardinalities measure optimized code, not the JIT.
  for (const input of ['string', 'number'] as const) {
    runOurs(2e5, input);
    runLite(2e5, input);
  }
  const rows: Row[] = [];
  for (const input of ['string', 'number'] as const) {
    for (const distinct of CARDINALITIES) {
      rows.push(runOurs(distinct, input));
      if (distinct <= LITE_MAX) rows.push(runLite(distinct, input));
    }
  }
  console.log(`HyperLogLog p=${HLL_PRECISION}; expected standard error 0.81%`);
  console.log('impl              input   distinct    adds/s (M)  error %');
  for (const r of rows) {
    console.log(
      `${r.impl.padEnd(17)} ${r.input.padEnd(7)} ${String(r.distinct).padStart(9)}` +
        `  ${(r.addsPerSec / 1e6).toFixed(2).padStart(10)}  ${r.errorPct.toFixed(2).padStart(7)}`,
    );
  }
}

main();
