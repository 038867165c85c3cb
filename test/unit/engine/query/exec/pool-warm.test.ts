/**
 * Warming through the real worker pool (worker threads, real segment files): a store whose warmed
 * columns fit the cache is warmed whole; one that would not fit is not, once a segment shows
 * what a row takes; a collection's newest segment is warmed first, with its ids and times.
 */
import fs from 'node:fs';
import t, { type Test } from 'tap';
import type { SegmentRef } from '../../../../../engine/storage/chunk.js';
import { columnsBytes, dictStringBytes, systemBytes } from '../../../../../engine/storage/chunk-bytes.js';
import { compactColumns, readSegment } from '../../../../../engine/storage/segment/reader.js';
import { WARM_REST_SHARE } from '../../../../../engine/base/limits.js';
import { WorkerPool } from '../../../../../engine/query/exec/pool.js';
import { QueryService } from '../../../../../engine/query/exec/service.js';
import { SIDECAR_SUFFIX } from '../../../../../engine/storage/segment/layout.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

function segments(count: number): SegmentRef[] {
  return writeDaySegments(t, count, 2000, (s, i) => ({ price: i * 0.5 + s, tag: `t${i % 7}` }));
}

/**
 * Segments with an id column (a value a row), which warming leaves out but for the newest
 * segment, and four float columns (8 bytes a row each), so that the columns warmed without ids
 * are most of a segment.
 */
function segmentsWithIds(count: number): SegmentRef[] {
  return writeDaySegments(t, count, 2000, (s, i) => ({
    price: i * 0.5 + s, a: Math.sqrt(i + 1), b: Math.sqrt(i + 2), c: Math.sqrt(i + 3), d: Math.sqrt(i + 5), user: `u${s}-${i}`,
  }));
}

/** The pool's warmed count once it has moved past `from` and then stayed put for a second. */
async function settled(pool: WorkerPool, from = 0): Promise<number> {
  const deadline = Date.now() + 30_000;
  // A worker first loads its modules (Arrow's import, slow on a busy machine).
  while (pool.segmentsWarmed === from && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  let last = -1;
  while (pool.segmentsWarmed !== last && Date.now() < deadline) {
    last = pool.segmentsWarmed;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return pool.segmentsWarmed;
}

t.test('a store that fits the cache is warmed whole', async (t) => {
  const refs = segments(6);
  const pool = new WorkerPool(1, 64 << 20, 8 << 20);
  t.teardown(() => pool.close());
  pool.warm(refs, 1);
  t.equal(await settled(pool), 6, 'every segment');
});

/** A one-worker pool whose cache holds the columns without ids of three segments like `ref`. */
function roomForThree(t: Test, ref: SegmentRef): WorkerPool {
  const probe = readSegment(ref.file, compactColumns(ref.file));
  const one = columnsBytes(probe) + systemBytes(probe) + dictStringBytes(probe);
  const pool = new WorkerPool(1, Math.floor(3.5 * one), 8 << 20);
  t.teardown(() => pool.close());
  return pool;
}

t.test('a store larger than the cache is not warmed past the first segment', async (t) => {
  const refs = segments(6);
  const pool = roomForThree(t, refs[0]);
  pool.warm(refs, 1);
  t.equal(await settled(pool), 1, 'the first shows the six would not fit: no more');
  // Three segments replaced by a merge: the three left fit, and new ones are warmed again.
  pool.forget(refs.slice(0, 3).map((ref) => ref.file));
  pool.warm(refs.slice(3), 1);
  t.equal(await settled(pool, 1), 3, 'the two others of the three left (the newest was warmed first)');
});

t.test('a store larger than the cache still warms each newer newest segment (a merge or a flush writes it)', async (t) => {
  const all = segments(7);
  const pool = roomForThree(t, all[0]);
  pool.warm(all.slice(0, 6), 1);
  t.equal(await settled(pool), 1, 'the first shows the six would not fit');
  pool.warm([all[6]], 1);
  t.equal(await settled(pool, 1), 2, 'the collection\'s new newest segment is warmed all the same');
  t.equal(pool.segmentsWarmedWhole, 2, 'whole, as the newest');
});

t.test("a collection's newest segment is warmed first and whole; the rest only while it fits", async (t) => {
  const all = segmentsWithIds(14);
  const refs = all.slice(0, 12);
  const probe = readSegment(refs[0].file, compactColumns(refs[0].file));
  const one = columnsBytes(probe) + systemBytes(probe) + dictStringBytes(probe);
  const whole = readSegment(refs[11].file);
  for (const times of [whole.ts, whole.createdAt, whole.seq]) t.equal(times.length, 2000);
  const wholeBytes = columnsBytes(whole) + systemBytes(whole) + dictStringBytes(whole);
  t.ok(wholeBytes > one, `${wholeBytes} bytes whole (ids and times), ${one} without`);
  // Room for the newest whole and a few more without ids, not for all twelve without ids.
  const budget = Math.floor(wholeBytes + 2.5 * one);
  t.ok(12 * one > budget);
  const pool = new WorkerPool(1, budget, 8 << 20);
  t.teardown(() => pool.close());
  pool.warm(refs, 1);
  t.equal(await settled(pool), 1, 'the newest, whole; it shows (by its columns without ids) that the twelve would not fit');
  t.equal(pool.segmentsWarmedWhole, 1);
  // Merged down to two segments and a newer one flushed: they fit, and the newer one is whole.
  pool.forget(refs.slice(0, 10).map((ref) => ref.file));
  pool.forget([refs[11].file]);
  pool.warm([all[13]], 1);
  t.equal(await settled(pool, 1), 2, 'the newer one (the one left of the twelve was dropped with the queue)');
  t.equal(pool.segmentsWarmedWhole, 2, 'the newer segment warmed whole');
});

t.test('ids go in once the other columns are warmed, only within the share of the cache they may take', async (t) => {
  const refs = segmentsWithIds(6);
  const probe = readSegment(refs[0].file, compactColumns(refs[0].file));
  const one = columnsBytes(probe) + systemBytes(probe) + dictStringBytes(probe);
  const full = readSegment(refs[0].file, Object.keys(refs[0].footer.columns));
  const withIds = columnsBytes(full) + systemBytes(full) + dictStringBytes(full);
  t.ok(withIds > one, `${withIds} bytes with ids, ${one} without`);
  // Room for the six without ids, and within three quarters of it for the six with ids too.
  const roomy = new WorkerPool(1, Math.ceil((8 * withIds) / WARM_REST_SHARE), 8 << 20);
  t.teardown(() => roomy.close());
  roomy.warm(refs, 1);
  t.equal(await settled(roomy), 6);
  await until(() => roomy.segmentsWarmedRest === 5);
  t.equal(roomy.segmentsWarmedRest, 5, 'the five not warmed whole get their ids');
  // Room for the six without ids, not for their ids within the share.
  const tight = new WorkerPool(1, Math.ceil((6 * (one + withIds) / 2) / WARM_REST_SHARE), 8 << 20);
  t.teardown(() => tight.close());
  tight.warm(refs, 1);
  t.equal(await settled(tight), 6);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  t.equal(tight.segmentsWarmedRest, 0, 'ids past the share stay on disk');
});

/** Waits (up to 30 s) until `done()`. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** The six-day week the service tests query. */
const WEEK = { event_collection: 'e', timeframe: { start: '2024-01-01T00:00:00.000Z', end: '2024-01-08T00:00:00.000Z' } };

/**
 * A 2-worker service over six segments (named 0 .. 5, so worker 1 scans the newest, 5), once it
 * has warmed all six and read each footer on the worker that does not scan its segment.
 */
async function warmedService(t: Test, refs: SegmentRef[]): Promise<QueryService> {
  const service = new QueryService({
    source: () => ({ idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} }),
    clock: () => Date.UTC(2024, 0, 8),
    workers: 2,
    fanOut: 2,
  });
  t.teardown(() => service.close());
  service.warm(refs);
  const deadline = Date.now() + 30_000;
  // Bound: the deadline; a worker first loads its modules.
  while ((service.footersWarmed < 2 * refs.length || service.segmentsWarmed < refs.length) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.equal(service.footersWarmed, 2 * refs.length, 'each footer read by both workers, the one that scans its segment too');
  t.equal(service.segmentsWarmed, refs.length);
  return service;
}

t.test('while a bulk load runs, footers are still read by every worker, columns not', async (t) => {
  const refs = segments(6);
  let loading = true;
  const pool = new WorkerPool(2, 64 << 20, 16 << 20, () => !loading);
  t.teardown(() => pool.close());
  pool.warm(refs, 2);
  await until(() => pool.footersWarmed === 2 * refs.length);
  t.equal(pool.footersWarmed, 2 * refs.length, 'each footer read by both workers during the load');
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(pool.segmentsWarmed, 0, 'no column decoded while it runs');
  loading = false;
  await until(() => pool.segmentsWarmed === refs.length);
  t.equal(pool.segmentsWarmed, refs.length, 'the columns once it is over');
});

t.test('every worker reads the footers of the segments the others scan: a distinct count then reads no footer file', async (t) => {
  const refs = segments(6);
  const service = await warmedService(t, refs);
  // Each share of a distinct count reads every segment's footer (footer-sketch.ts): all are held.
  for (const ref of refs) fs.rmSync(ref.file + SIDECAR_SUFFIX);
  t.same(await service.run('p', 'count_unique', { ...WEEK, target_property: 'tag' }), { result: 7 });
  t.same(await service.run('p', 'count_unique', { ...WEEK, target_property: 'price' }), { result: 2010 }, 'halves from 0 to 1004.5');
});

t.test('a distinct count of ids after warming reads no segment file', async (t) => {
  const refs = segmentsWithIds(6);
  const service = await warmedService(t, refs);
  // Every segment but the newest (warmed whole, ids and all) gets its ids after.
  await until(() => service.segmentsWarmedRest === 5);
  t.equal(service.segmentsWarmedRest, 5);
  for (const ref of refs) fs.rmSync(ref.file);
  t.same(await service.run('p', 'count_unique', { ...WEEK, target_property: 'user' }), { result: 12_000 }, 'each row its own id');
});

t.test('an extraction runs on the worker whose cache holds the newest segment', async (t) => {
  const refs = segments(6);
  // An idle pool would otherwise give the task to worker 0, whose cache does not hold segment 5.
  const service = await warmedService(t, refs);
  fs.rmSync(refs[5].file);
  fs.rmSync(refs[5].file + SIDECAR_SUFFIX);
  for (let run = 0; run < 3; run++) {
    const { result } = await service.run('p', 'extraction', { ...WEEK, latest: 5 }) as { result: { price: number }[] };
    t.same(result.map((event) => event.price), [1002.5, 1003, 1003.5, 1004, 1004.5], `run ${run + 1}: the latest five, oldest first, from the cache`);
  }
});

t.test('a task posted while a segment is being warmed runs before the rest of it: the warm stops between columns and goes on after', async (t) => {
  const rows = 40_000;
  const refs = writeDaySegments(t, 6, rows, (s, i) => ({
    price: i * 0.5 + s, a: Math.sqrt(i + 1), b: Math.sqrt(i + 2), c: Math.sqrt(i + 3), user: `u${s}-${i}`,
  }));
  const service = new QueryService({
    source: () => ({ idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} }),
    clock: () => Date.UTC(2024, 0, 8),
    workers: 1,
  });
  t.teardown(() => service.close());
  service.warm(refs);
  // Footers go first; then the columns, segment by segment (the newest first and whole, ids and times).
  const deadline = Date.now() + 30_000;
  while (service.footersWarmed < refs.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
  // A task over the first day alone (segment 0, the oldest): the others stay warming's to finish.
  const firstDay = { event_collection: 'e', timeframe: { start: '2024-01-01T00:00:00.000Z', end: '2024-01-02T00:00:00.000Z' } };
  const filters = [{ property_name: 'a', operator: 'gt', property_value: 100 }];
  const sumOf = (from: number, to: number, column: (i: number) => number) => {
    let sum = 0;
    for (let s = from; s < to; s++) for (let i = 0; i < rows; i++) if (Math.sqrt(i + 1) > 100) sum += column(i) + (column === price ? s : 0);
    return sum;
  };
  const price = (i: number) => i * 0.5;
  t.same(await service.run('p', 'sum', { ...firstDay, target_property: 'price', filters }), { result: sumOf(0, 1, price) });
  t.ok(service.warmsPaused >= 1, `the warm under way stopped for the task (${service.warmsPaused})`);
  await until(() => service.segmentsWarmed >= refs.length - 1 && service.segmentsWarmedRest >= refs.length - 2);
  t.ok(service.segmentsWarmed >= refs.length - 1, 'every segment the task did not read first is warmed all the same');
  t.ok(service.segmentsWarmedRest >= refs.length - 2, 'and their ids (but the newest\'s, warmed whole) after');
  // None left half: with the files gone, the other days' columns, ids too, are all in memory.
  for (const ref of refs) fs.rmSync(ref.file);
  const lastDays = { event_collection: 'e', timeframe: { start: '2024-01-02T00:00:00.000Z', end: '2024-01-08T00:00:00.000Z' } };
  // Sums of square roots: added in another order than here, equal to 1e-9.
  const near = async (column: string, want: number) => {
    const { result } = await service.run('p', 'sum', { ...lastDays, target_property: column, filters }) as { result: number };
    t.ok(Math.abs(result - want) < want * 1e-9, `${column}: ${result} ≈ ${want}`);
  };
  await near('c', sumOf(1, refs.length, (i) => Math.sqrt(i + 3)));
  await near('b', sumOf(1, refs.length, (i) => Math.sqrt(i + 2)));
  t.same(await service.run('p', 'count_unique', { ...lastDays, target_property: 'user', filters }), { result: (refs.length - 1) * (rows - 10_000) });
});

t.test("a funnel run whole on one worker (listing actors) reads the other worker's warmed segments from its shared memory, answering as one worker does", async (t) => {
  const refs = segments(6);
  const service = await warmedService(t, refs);
  t.ok(service.segmentsShared >= refs.length, `each warmed segment shared (${service.segmentsShared})`);
  // Listing its actors, a funnel runs whole on one worker (without, it fans out: service.ts).
  const steps = [
    { event_collection: 'e', actor_property: 'tag', timeframe: WEEK.timeframe, filters: [{ property_name: 'price', operator: 'lt', property_value: 100 }] },
    { event_collection: 'e', actor_property: 'tag', timeframe: WEEK.timeframe, with_actors: true, filters: [{ property_name: 'price', operator: 'gt', property_value: 1000 }] },
  ];
  const one = new QueryService({
    source: () => ({ idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} }),
    clock: () => Date.UTC(2024, 0, 8),
    workers: 1,
  });
  t.teardown(() => one.close());
  const want = await one.run('p', 'funnel', { steps });
  t.same((want as { result: number[] }).result, [7, 7], 'every tag in both steps');
  t.equal(one.segmentsReadFromPeers, 0, 'one worker: no peers');
  for (let run = 0; run < 2; run++) {
    const before = service.segmentsReadFromPeers;
    t.same(await service.run('p', 'funnel', { steps }), want, `run ${run + 1}: as one worker answers`);
    const read = service.segmentsReadFromPeers - before;
    t.ok(read > 0, `run ${run + 1}: the other worker's segments from its memory (${read} loads)`);
  }
  // Not listing actors, it fans out: each worker reads only the days it owns, none of the other's.
  const before = service.segmentsReadFromPeers;
  const keyed = await service.run('p', 'funnel', { steps: steps.map(({ with_actors: _, ...step }) => step) }) as { result: number[] };
  t.same(keyed.result, (want as { result: number[] }).result);
  t.equal(service.segmentsReadFromPeers - before, 0, 'fanned out: no worker read another\'s days');
});

t.test('a funnel on warmed ids (a bit per dense id) counts as one listing its actors does', async (t) => {
  const refs = segmentsWithIds(6);
  const service = await warmedService(t, refs);
  await until(() => service.segmentsWarmedRest === 5);
  const steps = [
    { event_collection: 'e', actor_property: 'user', timeframe: WEEK.timeframe },
    { event_collection: 'e', actor_property: 'user', timeframe: WEEK.timeframe, filters: [{ property_name: 'price', operator: 'gt', property_value: 1000 }] },
  ];
  const keyed = await service.run('p', 'funnel', { steps }) as { result: number[] };
  const valued = await service.run('p', 'funnel', { steps: [steps[0], { ...steps[1], with_actors: true }] }) as { result: number[]; actors: unknown[] };
  t.same(keyed.result, valued.result);
  t.same(keyed.result, [12_000, 25], 'each row its own user; 25 rows priced over 1000');
  t.equal((valued.actors[1] as unknown[]).length, 25);
});
