/**
 * How fast can the WAL acknowledge durable appends? Runs closed-loop writers (each awaits its
 * append, then issues the next) against a real segment with fsync on, and prints appends/s,
 * latency percentiles and fdatasyncs/s. Estimate: fdatasync of an appending file costs ~1 ms here,
 * so one writer gets ~1,000/s and 64 writers, sharing syncs, should exceed 30,000/s.
 *
 *   node dist/bench/wal.js [secondsPerCase]
 */
import { randomFillSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wal, type WalStats } from '../engine/wal/wal.js';
import { benchArgs } from './args.js';

interface Case {
  readonly name: string;
  readonly writers: number;
  readonly payloadBytes: number;
  readonly estimate: string;
}

const EVENT_BYTES = 300;
const BATCH_BYTES = 5_000 * EVENT_BYTES;
const CASES: Case[] = [
  { name: '1 writer, 300 B', writers: 1, payloadBytes: EVENT_BYTES, estimate: '~1,000/s' },
  { name: '64 writers, 300 B', writers: 64, payloadBytes: EVENT_BYTES, estimate: '>30,000/s' },
  { name: '1 writer, 1.5 MB', writers: 1, payloadBytes: BATCH_BYTES, estimate: 'disk MB/s' },
  { name: '8 writers, 1.5 MB', writers: 8, payloadBytes: BATCH_BYTES, estimate: 'disk MB/s' },
];

async function runCase(spec: Case, seconds: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tally-bench-wal-'));
  try {
    const { wal } = await Wal.open(dir, { fsync: true });
    const payload = randomFillSync(Buffer.alloc(spec.payloadBytes));
    const latenciesMs: number[] = [];
    const deadline = performance.now() + seconds * 1000;
    const started = performance.now();
    const writer = async () => {
      // Bound: the deadline.
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await wal.append(payload);
        latenciesMs.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: spec.writers }, writer));
    const elapsedS = (performance.now() - started) / 1000;
    await wal.close();
    report(spec, wal.stats, latenciesMs, elapsedS);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function report(spec: Case, stats: WalStats, latenciesMs: number[], elapsedS: number): void {
  latenciesMs.sort((a, b) => a - b);
  const pick = (q: number) => latenciesMs[Math.floor(q * (latenciesMs.length - 1))]!;
  const columns = [
    spec.name.padEnd(20),
    `${fmt(stats.appends / elapsedS)} appends/s (est ${spec.estimate})`.padEnd(40),
    `p50 ${pick(0.5).toFixed(2)} ms`.padEnd(14),
    `p99 ${pick(0.99).toFixed(2)} ms`.padEnd(14),
    `${fmt(stats.syncs / elapsedS)} syncs/s`.padEnd(16),
    `${(stats.appends / stats.syncs).toFixed(1)} appends/sync`.padEnd(20),
    `${(stats.bytes / elapsedS / 1e6).toFixed(1)} MB/s`,
  ];
  console.log(columns.join(' '));
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

const seconds = benchArgs({}, { positionals: ['secondsPerCase'] }).positionalPositive(0, 'secondsPerCase', 3);
for (const spec of CASES) await runCase(spec, seconds);
