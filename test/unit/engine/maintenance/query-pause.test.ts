/**
 * Background work stands aside for queries (base/query-activity.ts): the segment worker's merges
 * pause while a query runs and go on when it ends; a flush never pauses; a merge someone waits
 * for (urged) and one past its budget do not pause; the query service counts its queries where
 * the worker sees them. Real worker threads and real segment files in a temporary directory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { QueryActivity, QueryPause } from '../../../../engine/base/query-activity.js';
import { BACKGROUND_PAUSE_MAX_MS, SEGMENT_INLINE_ROWS_MAX } from '../../../../engine/base/limits.js';
import { SegmentPool } from '../../../../engine/maintenance/segment-pool.js';
import { QueryService } from '../../../../engine/query/exec/service.js';
import { readSegment } from '../../../../engine/storage/segment/reader.js';
import { writeSegment } from '../../../../engine/storage/segment/writer.js';
import { makeChunk, memorySource, randomEvents } from '../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;

function tempDir(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-pause-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Three small segments of one day, ready to merge. */
function sources(dir: string, name: string): string[] {
  const events = randomEvents(5, 3000, START, DAY).sort((a, b) => a.ts - b.ts);
  return [0, 1, 2].map((part) => {
    const file = path.join(dir, `${name}-${part}.arrow`);
    writeSegment(file, makeChunk(events.slice(part * 1000, (part + 1) * 1000), part * 1000), {});
    return file;
  });
}

/** Whether `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), ms); }),
  ]);
  clearTimeout(timer);
  return settled;
}

/** How long to watch a paused merge: long beside a merge, short of the job's pause budget. */
function pauseWithin(ms: number): number {
  return Math.min(Math.max(600, ms), BACKGROUND_PAUSE_MAX_MS / 2);
}

/** A pool whose worker has started and merged once: later jobs take their own time only. */
async function warmPool(t: Test, dir: string, activity: QueryActivity): Promise<{ pool: SegmentPool; mergeMs: number }> {
  const pool = new SegmentPool(false, activity);
  t.teardown(() => pool.close());
  await pool.run({ op: 'compact', file: path.join(dir, 'warm-1.arrow'), sources: sources(dir, 'warm-1'), schema: {} });
  const files = sources(dir, 'warm-2');
  const started = performance.now();
  await pool.run({ op: 'compact', file: path.join(dir, 'warm-2.arrow'), sources: files, schema: {} });
  return { pool, mergeMs: performance.now() - started };
}

t.test('a merge pauses while a query runs and goes on when it ends', async (t) => {
  const dir = tempDir(t);
  const activity = new QueryActivity();
  const { pool, mergeMs } = await warmPool(t, dir, activity);
  const files = sources(dir, 'a');
  activity.enter();
  const merge = pool.run({ op: 'compact', file: path.join(dir, 'a.arrow'), sources: files, schema: {} });
  const waitMs = pauseWithin(10 * mergeMs);
  t.notOk(await settlesWithin(merge, waitMs), `not merged while the query runs (${waitMs.toFixed(0)} ms, a merge takes ${mergeMs.toFixed(0)})`);
  activity.leave();
  const [footer] = await merge;
  t.equal(footer.rows, 3000, 'merged once the query ended');
  t.equal(readSegment(path.join(dir, 'a.arrow')).rows, 3000);
  t.ok(pool.pausedMs >= waitMs * 0.9, `the worker reports its pause (${pool.pausedMs.toFixed(0)} ms)`);
});

t.test('the pause total only grows, across a restart of the worker', async (t) => {
  const dir = tempDir(t);
  const activity = new QueryActivity();
  const { pool, mergeMs } = await warmPool(t, dir, activity);
  activity.enter();
  const merge = pool.run({ op: 'compact', file: path.join(dir, 'e.arrow'), sources: sources(dir, 'e'), schema: {} });
  t.notOk(await settlesWithin(merge, pauseWithin(5 * mergeMs)), 'paused');
  activity.leave();
  await merge;
  const paused = pool.pausedMs;
  t.ok(paused > 0, `paused ${paused.toFixed(0)} ms`);
  await pool.close(); // the next job starts a new worker, whose own count starts at 0
  await pool.run({ op: 'compact', file: path.join(dir, 'f.arrow'), sources: sources(dir, 'f'), schema: {} });
  t.ok(pool.pausedMs >= paused, `still ${pool.pausedMs.toFixed(0)} ms: a counter never goes back`);
});

t.test('a flush never pauses for queries', async (t) => {
  const dir = tempDir(t);
  const activity = new QueryActivity();
  const { pool, mergeMs } = await warmPool(t, dir, activity);
  const rows = SEGMENT_INLINE_ROWS_MAX + 1000;
  const chunk = makeChunk(randomEvents(6, rows, START, DAY).sort((a, b) => a.ts - b.ts), 0);
  activity.enter();
  t.teardown(() => activity.leave());
  const file = path.join(dir, 'flushed.arrow');
  const flush = pool.run({ op: 'write', chunk, parts: [{ file, indices: null }], schema: {} });
  t.ok(await settlesWithin(flush, Math.max(5_000, 50 * mergeMs)), 'written while the query runs');
  t.equal((await flush)[0].rows, rows);
});

t.test('the merges of a flush someone waits for stop pausing when urged, until it ends', async (t) => {
  const dir = tempDir(t);
  const activity = new QueryActivity();
  const { pool, mergeMs } = await warmPool(t, dir, activity);
  activity.enter();
  t.teardown(() => activity.leave());
  const merge = (name: string) => pool.run({ op: 'compact', file: path.join(dir, `${name}.arrow`), sources: sources(dir, name), schema: {} });
  const first = merge('b');
  t.notOk(await settlesWithin(first, pauseWithin(5 * mergeMs)), 'paused');
  pool.urge();
  t.ok(await settlesWithin(first, Math.max(5_000, 50 * mergeMs)), 'merged while the query still runs');
  t.equal((await first)[0].rows, 3000);
  const second = merge('c');
  t.ok(await settlesWithin(second, Math.max(5_000, 50 * mergeMs)), 'the same flush\'s next merge does not pause either');
  pool.relax(); // the flush ended
  const third = merge('d');
  t.notOk(await settlesWithin(third, pauseWithin(5 * mergeMs)), 'the next flush\'s merge pauses again');
  pool.urge();
  t.equal((await third)[0].rows, 3000);
});

t.test('a pause lasts at most the job budget, and none when no query runs', (t) => {
  const activity = new QueryActivity();
  const pause = new QueryPause(activity.shared);
  pause.begin(10_000);
  let started = performance.now();
  pause.point();
  t.ok(performance.now() - started < 50, 'no query: no pause');
  t.equal(pause.pausedMs, 0);
  activity.enter();
  pause.begin(120);
  started = performance.now();
  pause.point();
  const waited = performance.now() - started;
  t.ok(waited >= 110 && waited < 2_000, `paused for its budget (${waited.toFixed(0)} ms)`);
  started = performance.now();
  pause.point();
  t.ok(performance.now() - started < 50, 'the budget spent: no more pauses in this job');
  activity.leave();
  t.end();
});

t.test('the query service counts a query where background work sees it, until it ends', async (t) => {
  const activity = new QueryActivity();
  const running = new Int32Array(activity.shared);
  const seen: number[] = [];
  const events = randomEvents(9, 500, START, DAY);
  const service = new QueryService({
    source: () => {
      seen.push(Atomics.load(running, 0));
      return memorySource(events);
    },
    clock: () => START + DAY, workers: 0, activity,
  });
  const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-02T00:00:00.000Z' };
  t.same(await service.run('p', 'count', { event_collection: 'e', timeframe }), { result: 500 });
  t.same(seen, [1], 'counted while it ran');
  t.equal(Atomics.load(running, 0), 0, 'and no longer once it ended');
  await t.rejects(service.run('p', 'count', { event_collection: 'e', timeframe: 'nonsense' }));
  t.equal(Atomics.load(running, 0), 0, 'a refused query leaves the count as it found it');
});
