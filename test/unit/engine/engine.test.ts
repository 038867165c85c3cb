import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { LogRecord } from '../../../engine/services/types.js';
import { collectionIdKey } from '../../../engine/storage/event-ids.js';
import { abandonDataDirLock } from '../../../engine/base/data-dir-lock.js';
import { SEGMENT_ROWS_MAX } from '../../../engine/base/limits.js';
import { EventBuilder, openEngine, type TallyEngine } from '../../../engine/index.js';
import { readSegment } from '../../../engine/storage/segment/reader.js';
import { decodeRecords } from '../../../engine/wal/record.js';

const ctx = { ip: '203.0.113.9', userAgent: 'test/1.0' };
const DAY = 86_400_000;

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'tally-engine-'));
}

async function open(dataDir: string): Promise<TallyEngine> {
  return openEngine({ dataDir, queryWorkers: 0, flushIntervalMs: 3_600_000 });
}

function rowsOf(engine: TallyEngine, project: string, collection: string): string[] {
  const out: string[] = [];
  for (const chunk of engine.collections.scan(project, collection, 0, 8.64e15)) {
    for (let i = 0; i < chunk.rows; i++) {
      out.push(JSON.stringify(new EventBuilder(chunk, collectionIdKey(project, collection)).event(i)));
    }
  }
  return out;
}

t.test('a fresh data dir gets an org key and a default project whose keys authenticate', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  t.ok(engine.created);
  t.match(engine.organization.key, /^[0-9a-f]{64}$/);
  const [project] = engine.projects.list();
  t.equal(project.name, 'default');
  t.equal(engine.projects.authenticate(project.id, project.api_keys.master), 'master');
  t.equal(engine.projects.authenticate(project.id, project.api_keys.write), 'write');
  t.equal(engine.projects.authenticate(project.id, project.api_keys.read), 'read');
  t.equal(engine.projects.authenticate(project.id, 'f'.repeat(64)), null);
  const fresh = await engine.projects.regenerateKey(project.id, 'write');
  t.equal(engine.projects.authenticate(project.id, project.api_keys.write), null);
  t.equal(engine.projects.authenticate(project.id, fresh), 'write');
  await engine.close();
  const again = await open(dir);
  t.notOk(again.created);
  t.equal(again.projects.authenticate(project.id, fresh), 'write');
  await again.close();
});

t.test('appended events survive a clean restart with their schema', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  const results = await engine.events.append(project, [
    { collection: 'purchases', event: { price: 5, item: { name: 'hat' }, tags: ['a', 'b'] } },
    { collection: 'purchases', event: { price: 'free', 'bad.name': 1 } },
    { collection: 'purchases', event: { price: 7, on: true, nothing: null } },
  ], ctx);
  t.same(results.map((r) => r.ok), [true, false, true]);
  t.equal(engine.collections.get(project, 'purchases')?.properties.price, 'num');
  t.equal(rowsOf(engine, project, 'purchases').length, 2);
  await engine.close();
  const reopened = await open(dir);
  t.same(reopened.collections.get(project, 'purchases')?.properties, {
    'svc.created_at': 'datetime', 'svc.id': 'string', 'svc.timestamp': 'datetime',
    price: 'num', 'item.name': 'string', tags: 'list', on: 'bool', nothing: 'null',
  });
  const rows = rowsOf(reopened, project, 'purchases').map((r) => JSON.parse(r));
  t.same(rows.map((r) => r.price), [5, 7]);
  t.match(rows[0].svc.id, /^[0-9a-f]{24}$/);
  await reopened.close();
});

t.test('a crash before any flush loses nothing acknowledged (WAL replay), exactly once', async (t) => {
  const dir = tempDir();
  const crashed = await open(dir);
  const project = crashed.projects.list()[0].id;
  const writes = [];
  for (let i = 0; i < 50; i++) {
    writes.push(crashed.events.append(project, [{ collection: 'clicks', event: { n: i } }], ctx));
  }
  await Promise.all(writes);
  await crashed.flush();
  await crashed.events.append(project, [{ collection: 'clicks', event: { n: 50 } }], ctx);
  // No close(): the next open sees the files as a kill -9 would leave them.
  abandonDataDirLock(dir);
  const recovered = await open(dir);
  const ns = rowsOf(recovered, project, 'clicks').map((r) => JSON.parse(r).n).sort((a, b) => a - b);
  t.same(ns, Array.from({ length: 51 }, (_, i) => i));
  await recovered.close();
});

t.test('an append\'s tag is replayed with its first offset, also for rows a flush put in segments before its WAL file went', async (t) => {
  const dir = tempDir();
  const crashed = await open(dir);
  const project = crashed.projects.list()[0].id;
  const seen: [string, string, number][] = [];
  crashed.events.onTagged((p, tag, firstOffset) => seen.push([p, tag, firstOffset]));
  await crashed.events.append(project, [{ collection: 'c', event: { n: 0 } }, { collection: 'c', event: { n: 1 } }], ctx,
    { atomic: true, tag: 'first' });
  t.same(seen, [[project, 'first', 0]], 'onTagged has run when the append resolves');
  await crashed.events.append(project, [{ collection: 'c', event: { n: 2 } }], ctx);
  // A hook that fails keeps the flushed records' WAL file: as a crash between manifest and delete.
  let calls = 0;
  const unregister = crashed.events.beforeWalRemove(async () => {
    calls++;
    throw new Error('not yet');
  });
  await t.rejects(crashed.flush(), /not yet/);
  t.equal(calls, 1, 'the hook runs before the WAL files are deleted');
  unregister();
  await crashed.events.append(project, [{ collection: 'c', event: { n: 3 } }], ctx, { tag: 'second' });
  t.same(crashed.events.replayedTags(), [], 'a fresh data dir replays nothing');
  // No close(): a kill -9.
  abandonDataDirLock(dir);
  const recovered = await open(dir);
  t.same(recovered.events.replayedTags(), [
    { projectId: project, tag: 'first', firstOffset: 0 },
    { projectId: project, tag: 'second', firstOffset: 3 },
  ]);
  t.same(rowsOf(recovered, project, 'c').map((r) => JSON.parse(r).n), [0, 1, 2, 3], 'each row once');
  await t.rejects(recovered.events.append(project, [{ collection: 'c', event: {} }], ctx, { tag: 'x'.repeat(1025) }));
  await recovered.close();
  const clean = await open(dir);
  t.same(clean.events.replayedTags(), [], 'a clean close leaves no WAL record to replay');
  await clean.close();
});

t.test('uniqueness tokens drop duplicates, also across restarts', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  const event = () => ({ collection: 'orders', event: { svc: { uniqueness_token: 'tok-1' }, v: 1 } });
  t.same((await engine.events.append(project, [event(), event()], ctx)).map((r) => r.ok), [true, true]);
  await engine.flush();
  await engine.events.append(project, [{ collection: 'orders', event: { svc: { uniqueness_token: 'tok-2' } } }], ctx);
  abandonDataDirLock(dir);
  const reopened = await open(dir); // crash: tok-2 is only in the WAL, tok-1 in tokens.log
  await reopened.events.append(project, [event(), { collection: 'orders', event: { svc: { uniqueness_token: 'tok-2' } } }], ctx);
  t.equal(rowsOf(reopened, project, 'orders').length, 2);
  await reopened.close();
});

t.test('a call that throws stores nothing and leaves no token behind: its retry is stored', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  const first = { collection: 'orders', event: { svc: { uniqueness_token: 'tok-a' }, v: 1 } };
  // An embedded caller's event whose property throws when read: the call fails after the first
  // event was checked and took its token.
  const throwing = { collection: 'orders', event: { v: 2, get w(): number { throw new Error('a getter threw'); } } };
  await t.rejects(engine.events.append(project, [first, throwing], ctx), /a getter threw/);
  t.same((await engine.events.append(project, [first], ctx)).map((r) => r.ok), [true], 'the retry is accepted');
  t.same(rowsOf(engine, project, 'orders').map((r) => JSON.parse(r).v), [1], 'and stored, once');
  await engine.close();
});

t.test('rows are partitioned by day; the log keeps insertion order across partitions', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  const base = Date.UTC(2024, 0, 1);
  const events = Array.from({ length: 30 }, (_, i) => ({
    collection: 'hist',
    event: { i, svc: { timestamp: new Date(base + (i % 3) * DAY + i * 1000).toISOString() } },
  }));
  await engine.events.append(project, events, ctx);
  await engine.flush();
  const days = fs.readdirSync(path.join(dir, 'projects', project, 'hist')).filter((d) => d.startsWith('2024'));
  t.same(days.sort(), ['2024-01-01', '2024-01-02', '2024-01-03']);
  const source = engine.collections.scanSource(project, 'hist', base + DAY, base + 2 * DAY);
  t.equal(source.segments.length, 1, 'segments outside the timeframe are pruned');
  t.same(engine.log.bounds(project, 'hist'), { start: 0, end: 30 });
  const log = engine.log.read(project, 'hist', 5, 10, 1 << 20);
  t.same(log.map((r) => r.offset), [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  t.same(log.map((r) => JSON.parse(r.json).i), [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  t.match(log[0].id, /^[0-9a-f]{24}$/);
  await engine.close();
});

t.test('segment files no manifest names (a crash mid-flush) are removed at open', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  await engine.events.append(project, [{ collection: 'c', event: { a: 1 } }], ctx);
  await engine.close();
  const day = fs.readdirSync(path.join(dir, 'projects', project, 'c')).find((d) => d.startsWith('20'))!;
  const orphan = path.join(dir, 'projects', project, 'c', day, 'orphan.arrow.tmp');
  fs.writeFileSync(orphan, 'half written');
  const reopened = await open(dir);
  t.notOk(fs.existsSync(orphan));
  t.equal(rowsOf(reopened, project, 'c').length, 1);
  await reopened.close();
});

t.test('1,000 properties per collection, the 1,001st is refused', async (t) => {
  const engine = await open(tempDir());
  const project = engine.projects.list()[0].id;
  const wide = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`p${i}`, i]));
  const [ok] = await engine.events.append(project, [{ collection: 'wide', event: wide }], ctx);
  t.ok(ok.ok);
  const [bad] = await engine.events.append(project, [{ collection: 'wide', event: { extra: 1 } }], ctx);
  t.equal(bad.ok ? null : bad.error.error_code, 'TooManyPropertiesError');
  await engine.close();
});

t.test('compaction merges a partition\'s small segments and keeps every row and the log order', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  for (let round = 0; round < 10; round++) {
    const events = Array.from({ length: 20 }, (_, i) => ({ collection: 'c', event: { n: round * 20 + i, s: `v${i % 3}` } }));
    await engine.events.append(project, events, ctx);
    await engine.flush();
  }
  await engine.flush(); // an idle flush runs a compaction step if one is still due
  const source = engine.collections.scanSource(project, 'c', 0, 8.64e15);
  t.ok(source.segments.length < 10, `compacted to ${source.segments.length} segments`);
  const ns = rowsOf(engine, project, 'c').map((r) => JSON.parse(r).n).sort((a, b) => a - b);
  t.same(ns, Array.from({ length: 200 }, (_, i) => i));
  const log = engine.log.read(project, 'c', 0, 500, 1 << 24);
  t.same(log.map((r) => r.offset), Array.from({ length: 200 }, (_, i) => i));
  await engine.close();
  const reopened = await open(dir);
  t.equal(rowsOf(reopened, project, 'c').length, 200);
  const files = fs.readdirSync(path.join(dir, 'projects', project, 'c'), { recursive: true }) as string[];
  t.equal(files.filter((f) => f.endsWith('.arrow')).length, reopened.collections.scanSource(project, 'c', 0, 8.64e15).segments.length,
    'replaced segment files are deleted');
  await reopened.close();
});

t.test('once writes stop, a load\'s worth of buffered rows is flushed without waiting for the flush timer', async (t) => {
  const dir = tempDir();
  const engine = await open(dir); // flush timer: an hour
  const project = engine.projects.list()[0].id;
  const total = 70_000;
  for (let from = 0; from < total; from += 5_000) {
    const events = Array.from({ length: 5_000 }, (_, i) => ({ collection: 'load', event: { n: from + i, id: `u${(from + i) % 977}` } }));
    await engine.events.append(project, events, ctx);
  }
  t.ok(engine.stats().bufferRows > 0, 'the rows are buffered at first');
  const deadline = Date.now() + 30_000;
  while (engine.stats().bufferRows > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(engine.stats().bufferRows, 0, 'the buffers were flushed once writes stopped');
  t.ok(engine.collections.scanSource(project, 'load', 0, 8.64e15).segments.length > 0, 'into segments');
  const small = await engine.events.append(project, [{ collection: 'load', event: { n: total } }], ctx);
  t.ok(small[0].ok);
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  t.equal(engine.stats().bufferRows, 1, 'a trickle of events waits for the flush timer');
  const ns = rowsOf(engine, project, 'load').map((r) => JSON.parse(r).n as number).sort((a, b) => a - b);
  t.equal(ns.length, total + 1);
  t.equal(ns[total], total);
  t.ok(ns.every((n, i) => n === i), 'every row once');
  await engine.close();
});

t.test('writes wait for a flush while the buffers hold the backlog limit; every row lands once', async (t) => {
  const dir = tempDir();
  const engine = await openEngine({ dataDir: dir, queryWorkers: 0, flushIntervalMs: 3_600_000, writeBacklogRows: 1_000 });
  const project = engine.projects.list()[0].id;
  const batch = 2_500;
  const batches = 12;
  const pending: Promise<unknown>[] = [];
  let bufferedMax = 0;
  for (let b = 0; b < batches; b++) {
    const events = Array.from({ length: batch }, (_, i) => ({ collection: 'fast', event: { n: b * batch + i, s: `s${i % 101}` } }));
    pending.push(engine.events.append(project, events, ctx));
    await new Promise((resolve) => setTimeout(resolve, 5)); // acknowledged rows reach the buffers
    bufferedMax = Math.max(bufferedMax, engine.stats().bufferRows);
  }
  const results = await Promise.all(pending) as { ok: boolean }[][];
  t.ok(results.every((rows) => rows.every((row) => row.ok)), 'every event acknowledged');
  t.ok(engine.stats().writesHeldBack > 0, `writes were held back (${engine.stats().writesHeldBack})`);
  // Without the limit all 30,000 rows would wait in the buffers for the hourly flush.
  t.ok(bufferedMax < (batch * batches) / 2, `the buffers stayed near the limit (at most ${bufferedMax} rows seen)`);
  const ns = rowsOf(engine, project, 'fast').map((r) => JSON.parse(r).n as number).sort((a, b) => a - b);
  t.equal(ns.length, batch * batches);
  t.ok(ns.every((n, i) => n === i), 'every row once');
  await engine.close();
});

t.test('the compaction backlog counts days with small segments to merge, not large days of full segments', async (t) => {
  const engine = await open(tempDir());
  const project = engine.projects.list()[0].id;
  const at = (day: number, n: number) => new Date(Date.UTC(2026, 5, day) + (n % 86_400) * 1000).toISOString();
  const write = async (day: number, rows: number) => {
    for (let from = 0; from < rows; from += 10_000) {
      const events = Array.from({ length: Math.min(10_000, rows - from) }, (_, i) =>
        ({ collection: 'days', event: { svc: { timestamp: at(day, from + i) }, n: from + i } }));
      await engine.events.append(project, events, ctx);
    }
    await engine.flush();
  };
  await write(1, 100);
  await write(1, 100);
  t.equal(engine.stats().compactionBacklog, 1, 'a day of two small segments');
  // A large day: two segments of at least half a merged segment's rows each, nothing to merge.
  await write(2, SEGMENT_ROWS_MAX / 2);
  await write(2, SEGMENT_ROWS_MAX / 2);
  t.equal(engine.stats().segments, 4);
  t.equal(engine.stats().compactionBacklog, 1, 'the large day is no backlog');
  await engine.close();
});

t.test('writes held back are let in one batch at a time, counting the rows still on their way to the buffers', async (t) => {
  const engine = await openEngine({ dataDir: tempDir(), queryWorkers: 0, flushIntervalMs: 3_600_000, writeBacklogRows: 1_000 });
  const project = engine.projects.list()[0].id;
  const batch = 2_500;
  const events = (b: number) => Array.from({ length: batch }, (_, i) => ({ collection: 'held', event: { n: b * batch + i } }));
  await engine.events.append(project, events(0), ctx); // the buffers now hold more than the limit
  // Ten batches wait together for the flush; when it ends they must not all go in at once (each
  // sees empty buffers while the others' rows are still being written to the WAL).
  const waiting = Array.from({ length: 10 }, (_, b) => engine.events.append(project, events(b + 1), ctx));
  let bufferedMax = 0;
  const sampler = setInterval(() => { bufferedMax = Math.max(bufferedMax, engine.stats().bufferRows); }, 1);
  const results = await Promise.all(waiting);
  clearInterval(sampler);
  bufferedMax = Math.max(bufferedMax, engine.stats().bufferRows);
  t.ok(results.every((rows) => rows.every((row) => row.ok)), 'every event acknowledged');
  t.ok(bufferedMax <= batch, `at most one batch past the limit in the buffers (${bufferedMax} rows seen)`);
  const ns = rowsOf(engine, project, 'held').map((r) => JSON.parse(r).n as number).sort((a, b) => a - b);
  t.equal(ns.length, batch * 11);
  t.ok(ns.every((n, i) => n === i), 'every row once');
  await engine.close();
});

t.test('a segment a reader listed stays on disk through compaction until the reader is done', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  const append = async (round: number) => {
    const events = Array.from({ length: 20 }, (_, i) => ({ collection: 'c', event: { n: round * 20 + i } }));
    await engine.events.append(project, events, ctx);
    await engine.flush();
  };
  await append(0);
  const release = engine.collections.leaseSegments();
  const [listed] = engine.collections.scanSource(project, 'c', 0, 8.64e15).segments;
  // Read as a query's cache reads it: columns now, the times only when first asked for.
  const chunk = readSegment(listed.file, ['n']);
  for (let round = 1; round < 10; round++) await append(round);
  await engine.flush();
  const live = engine.collections.scanSource(project, 'c', 0, 8.64e15).segments.map((s) => s.file);
  t.notOk(live.includes(listed.file), 'compaction replaced the listed segment');
  t.ok(fs.existsSync(listed.file), 'the leased file is still on disk');
  t.equal(chunk.seq[19] - chunk.seq[0], 19, 'its times and offsets still read from it');
  t.ok(chunk.ts.every((ts) => ts > 0));
  release();
  t.notOk(fs.existsSync(listed.file), 'released: removed');
  t.same(rowsOf(engine, project, 'c').map((r) => JSON.parse(r).n).sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i));
  await engine.close();
});

t.test('refused events in a batch leave the accepted ones intact, in order', async (t) => {
  const engine = await open(tempDir());
  const project = engine.projects.list()[0].id;
  const results = await engine.events.append(project, [
    { collection: 'mix', event: { a: 1, s: 'one' } },
    { collection: 'mix', event: { 'bad.name': 1 } },
    { collection: 'mix', event: { a: 2, s: 'x'.repeat(10_000) } },
    { collection: '$bad', event: { a: 3 } },
    { collection: 'mix', event: { a: 4, s: 'four' } },
  ], ctx);
  t.same(results.map((r) => (r.ok ? 'ok' : r.error.error_code)),
    ['ok', 'InvalidPropertyNameError', 'InvalidPropertyValueError', 'InvalidCollectionNameError', 'ok']);
  const chunk = [...engine.collections.scan(project, 'mix', 0, 8.64e15)][0];
  const s = chunk.columns.get('s')!;
  t.same([s.dict![s.str![0]], s.dict![s.str![1]]], ['one', 'four']);
  t.same([chunk.columns.get('a')!.num![0], chunk.columns.get('a')!.num![1]], [1, 4]);
  await engine.close();
});

t.test('add-ons run after placeholders, on every write, and bad add-on configs are refused', async (t) => {
  const engine = await open(tempDir());
  const project = engine.projects.list()[0].id;
  const results = await engine.events.append(project, [
    { collection: 'visits', event: {
      client: { ip: '${svc.ip}', ua: '${svc.user_agent}' },
      svc: { addons: [
        { name: 'svc:ip_to_geo', input: { ip: 'client.ip' }, output: 'client.geo' },
        { name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'when' },
      ] },
    } },
    { collection: 'visits', event: { svc: { addons: [{ name: 'svc:nope', input: {}, output: 'x' }] } } },
    { collection: 'visits', event: { u: 'http://a.b/', svc: { addons: [{ name: 'svc:url_parser', input: { url: 'u' }, output: 'svc.x' }] } } },
  ], { ip: '8.8.8.8', userAgent: 'curl/8.0' });
  t.same(results.map((r) => (r.ok ? 'ok' : r.error.error_code)), ['ok', 'InvalidEventError', 'InvalidEventError']);
  const [row] = rowsOf(engine, project, 'visits').map((r) => JSON.parse(r));
  t.equal(row.client.ip, '8.8.8.8');
  t.equal(row.client.ua, 'curl/8.0');
  t.equal(row.client.geo.country_code, 'US');
  t.equal(row.when.year, new Date().getUTCFullYear());
  t.equal(engine.collections.get(project, 'visits')?.properties['client.geo.city'], 'string');
  await engine.close();
});

t.test('query workers keep the write buffer snapshot they were sent and see every newer one', async (t) => {
  const engine = await openEngine({ dataDir: tempDir(), queryWorkers: 2, flushIntervalMs: 3_600_000 });
  const project = engine.projects.list()[0].id;
  const timeframe = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };
  const count = async (collection: string, extra: Record<string, unknown> = {}) =>
    (await engine.queries.run(project, 'count', { event_collection: collection, timeframe, ...extra }) as { result: unknown }).result;
  let expected = 0;
  for (let round = 1; round <= 5; round++) {
    const events = Array.from({ length: round * 100 }, (_, i) => ({ collection: 'a', event: { i, g: i % 3 } }));
    await engine.events.append(project, events, ctx);
    await engine.events.append(project, [{ collection: 'b', event: { round } }], ctx);
    expected += round * 100;
    // Several queries on the same snapshot, fanned out over both workers, and another collection between.
    for (let repeat = 0; repeat < 4; repeat++) {
      t.equal(await count('a'), expected);
      t.equal(await count('b'), round);
      const grouped = await count('a', { group_by: 'g' }) as { g: number; result: number }[];
      t.equal(grouped.reduce((sum, group) => sum + group.result, 0), expected);
    }
  }
  await engine.close();
});

/** The one WAL file of `dir` that holds records, and its bytes. */
/** The WAL segment of `dir` that holds records, and its frames (without the room zeroed past them). */
function walOf(dir: string): { walFile: string; whole: Buffer } {
  const walDir = path.join(dir, 'wal');
  const [walFile] = fs.readdirSync(walDir).filter((name) => fs.statSync(path.join(walDir, name)).size > 0);
  const file = fs.readFileSync(path.join(walDir, walFile));
  return { walFile, whole: file.subarray(0, decodeRecords(file).cleanBytes) };
}

/**
 * The WAL of `dir` (as a kill -9 leaves it) cut from its whole length down into its last record,
 * every `step` bytes, each cut replayed in a copy: the whole file must give `before`, and every
 * cut inside the last record exactly its first `kept` events. Returns the cuts checked.
 */
async function replayCuts(t: Test, dir: string, project: string, before: readonly LogRecord[], kept: number, step: number): Promise<number> {
  const { walFile, whole } = walOf(dir);
  const image = tempDir();
  let checked = 0;
  for (let cut = whole.length; cut > 0; cut -= cut === whole.length ? 1 : step) {
    fs.rmSync(image, { recursive: true, force: true });
    fs.cpSync(dir, image, { recursive: true });
    fs.writeFileSync(path.join(image, 'wal', walFile), whole.subarray(0, cut));
    const engine = await open(image);
    const log = engine.log.read(project, 'c', 0, 100, 1 << 20);
    await engine.close();
    if (cut < whole.length && log.length < kept) break; // the cut reached into an earlier record
    const expected = cut === whole.length ? before : before.slice(0, kept);
    if (JSON.stringify(log) !== JSON.stringify(expected)) t.fail(`cut at ${cut} of ${whole.length}: ${log.length} events`);
    checked++;
  }
  return checked;
}

t.test('a WAL torn at every byte offset of its last record replays the events before it, with the same svc.id', async (t) => {
  const dir = tempDir();
  const crashed = await open(dir);
  const project = crashed.projects.list()[0].id;
  for (let i = 0; i < 3; i++) {
    await crashed.events.append(project, [{ collection: 'c', event: { n: i, nested: { ok: true, e: {} } } }], ctx);
  }
  const before = crashed.log.read(project, 'c', 0, 10, 1 << 20);
  // No close(): the WAL is as a kill -9 leaves it. Its last record holds the last event; every cut
  // inside it must replay exactly the first two events, as they were.
  const checked = await replayCuts(t, dir, project, before, 2, 1);
  t.ok(checked > 50, `every byte offset of the last record replays the events before it (${checked} cuts)`);
  t.same(before.map((record) => JSON.parse(record.json).svc.id), before.map((record) => record.id));
});

t.test('enriched batch bodies, whose WAL records hold add-on results once by reference, replay after a crash and from a torn tail', async (t) => {
  const dir = tempDir();
  const crashed = await open(dir);
  const project = crashed.projects.list()[0].id;
  const addons = [
    { name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' },
    { name: 'svc:ua_parser', input: { ua_string: 'ua' }, output: 'agent' },
    { name: 'svc:url_parser', input: { url: 'page' }, output: 'page_parts' },
    { name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'when' },
  ];
  const event = (i: number) => ({
    n: i, ip: i % 2 === 0 ? '8.8.8.8' : '81.2.69.160', ua: 'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0',
    page: `https://shop.example.com/p/${i % 3}?q=é#top`, tags: ['a', 'b'], svc: { addons },
  });
  // Two bodies of several events sharing results: the fast reader takes them, and each WAL record
  // holds each distinct result's leaves once (the second record's results are the first's again).
  for (const from of [0, 6]) {
    const body = Buffer.from(JSON.stringify({ c: Array.from({ length: 6 }, (_, i) => event(from + i)) }));
    const result = await crashed.events.appendBatch(project, body, ctx);
    t.ok(result.results.every((r) => r.ok), `body from ${from} stored`);
  }
  const before = crashed.log.read(project, 'c', 0, 100, 1 << 20);
  t.equal(before.length, 12);
  const first = JSON.parse(before[0].json);
  t.equal(first.geo.country_code, 'US');
  t.equal(first.agent.browser.family, 'Firefox');
  t.equal(first.page_parts.path, '/p/0');
  t.same(first.tags, ['a', 'b']);
  const { whole } = walOf(dir);
  // Each record's leaves start with their header (leaf-codec.ts): "LEAF", ..., fragment entries.
  const tables: number[] = [];
  for (let at = whole.indexOf('FAEL', 0, 'latin1'); at !== -1; at = whole.indexOf('FAEL', at + 1, 'latin1')) tables.push(whole.readUInt32LE(at + 28));
  t.same(tables, [7, 7], 'two records, each with a table of 7 results for 24 uses: 2 places, 1 agent, 3 pages, 1 time');
  // Cuts into the last record (the second body) give the first body's six events as they were.
  // Every 31st byte keeps this quick.
  const checked = await replayCuts(t, dir, project, before, 6, 31);
  t.ok(checked > 20, `the whole WAL and ${checked - 1} cuts into its last record replay the events before the cut`);
});

t.test('an event over 900,000 bytes of properties is refused; one under it is stored', async (t) => {
  const engine = await open(tempDir());
  const project = engine.projects.list()[0].id;
  const wide = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, 'x'.repeat(9_500)]));
  const results = await engine.events.append(project,
    [{ collection: 'big', event: wide(80) }, { collection: 'big', event: wide(100) }, { collection: 'big', event: { small: 1 } }], ctx);
  t.same(results.map((r) => r.ok), [true, false, true]);
  const refused = results[1] as { ok: false; error: { error_code: string; message: string } };
  t.equal(refused.error.error_code, 'InvalidEventError');
  t.match(refused.error.message, /at most 900000 bytes/);
  t.equal(rowsOf(engine, project, 'big').length, 2);
  await engine.close();
});

t.test('a buffered id column that skips interning answers every analysis exactly, and its segment holds each id once', async (t) => {
  const dir = tempDir();
  const engine = await openEngine({ dataDir: dir, queryWorkers: 2, flushIntervalMs: 3_600_000 });
  const project = engine.projects.list()[0].id;
  const base = Date.UTC(2024, 0, 1);
  // 5,000 distinct users, the first 1,000 of them twice: past the buffer's check (4,096 strings
  // with more than half distinct) the user column appends repeats rather than look them up.
  const userOf = (i: number) => `u${i < 5_000 ? i : i - 5_000}`;
  const events = Array.from({ length: 6_000 }, (_, i) => ({
    collection: 'visits',
    event: { user: userOf(i), plan: `p${i % 4}`, svc: { timestamp: new Date(base + i * 1000).toISOString() } },
  }));
  await engine.events.append(project, events, ctx);
  const timeframe = { start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' };
  const query = async (analysis: string, extra: Record<string, unknown>) =>
    (await engine.queries.run(project, analysis, { event_collection: 'visits', timeframe, ...extra }) as { result: unknown }).result;
  const twice = (user: string) => Number(user.slice(1)) < 1_000;
  const expectedUsers = Array.from({ length: 5_000 }, (_, i) => `u${i}`).sort();
  const check = async (when: string) => {
    t.equal(await query('count_unique', { target_property: 'user' }), 5_000, `${when}: count_unique`);
    t.same(await query('select_unique', { target_property: 'user' }), expectedUsers, `${when}: select_unique`);
    t.equal(await query('count', { filters: [{ property_name: 'user', operator: 'eq', property_value: 'u7' }] }), 2,
      `${when}: eq filter on a repeated id`);
    t.equal(await query('count', { filters: [{ property_name: 'user', operator: 'in', property_value: ['u7', 'u4999', 'u5000'] }] }), 3,
      `${when}: in filter`);
    const groups = await query('count', { group_by: 'user' }) as { user: string; result: number }[];
    t.equal(groups.length, 5_000, `${when}: one group per user`);
    t.ok(groups.every((group) => group.result === (twice(group.user) ? 2 : 1)), `${when}: each group counts its rows`);
    const perPlan = await query('count_unique', { target_property: 'user', group_by: 'plan' }) as { plan: string; result: number }[];
    const expectedPerPlan = ['p0', 'p1', 'p2', 'p3'].map((plan) =>
      ({ plan, result: new Set(events.filter((e) => e.event.plan === plan).map((e) => e.event.user)).size }));
    t.same(perPlan.sort((a, b) => a.plan.localeCompare(b.plan)), expectedPerPlan, `${when}: count_unique by plan`);
    const extraction = await query('extraction', { filters: [{ property_name: 'user', operator: 'eq', property_value: 'u999' }] }) as
      { user: string; plan: string }[];
    t.same(extraction.map((e) => [e.user, e.plan]), [['u999', 'p3'], ['u999', 'p3']], `${when}: extraction`);
  };
  await check('in the write buffer');
  await engine.flush();
  t.equal(engine.collections.scanSource(project, 'visits', base, base + DAY).memory, null, 'the flush left no buffered rows');
  await check('from the segment');
  const files: string[] = [];
  (function walk(d: string): void {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const file = path.join(d, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.arrow') && file.includes(`${path.sep}visits${path.sep}`)) files.push(file);
    }
  })(path.join(dir, 'projects', project));
  t.equal(files.length, 1);
  const user = readSegment(files[0], ['user']).columns.get('user')!;
  t.equal(user.dict!.length, 5_000, 'the segment\'s dictionary holds each id once');
  t.equal(new Set(user.dict).size, 5_000);
  await engine.close();
});

t.test('stampEvents checks and stamps without storing; an append of the stamped events keeps their times, on any engine', async (t) => {
  let now = Date.parse('2026-05-01T10:00:00.000Z');
  const dirA = tempDir();
  const a = await openEngine({ dataDir: dirA, queryWorkers: 0, flushIntervalMs: 3_600_000, clock: () => now });
  const project = a.projects.list()[0].id;
  const events = [
    { collection: 'clicks', event: { n: 1, ip: '${svc.ip}', ua: '${svc.user_agent}', svc: { uniqueness_token: 'u1' } } },
    { collection: 'clicks', event: { n: 2, svc: { timestamp: '2026-04-30T08:00:00-02:00' } } },
    { collection: 'clicks', event: { 'bad.name': 1 } },
    { collection: 'clicks', event: { n: 3, svc: { addons: [{ name: 'svc:url_parser', input: { url: 'page' }, output: 'parsed' }] }, page: 'https://example.com/a?b=1' } },
    { collection: 'bad$name', event: { n: 4 } },
    { collection: 'clicks', event: { n: 5, svc: { uniqueness_token: 'u1' } } },
  ];
  const stamped = a.events.stamp(project, events, ctx);
  t.same(stamped.map((r) => r.ok), [true, true, false, true, false, true]);
  t.equal(stamped[2].ok === false && stamped[2].error.error_code, 'InvalidPropertyNameError');
  t.equal(stamped[4].ok === false && stamped[4].error.error_code, 'InvalidCollectionNameError');
  const first = JSON.parse((stamped[0] as { json: string }).json);
  t.same(first, {
    n: 1, ip: ctx.ip, ua: ctx.userAgent,
    svc: { uniqueness_token: 'u1', created_at: '2026-05-01T10:00:00.000Z', timestamp: '2026-05-01T10:00:00.000Z' },
  }, 'placeholders filled, receipt time stamped, no svc.id, no add-on output');
  t.notOk('parsed' in JSON.parse((stamped[3] as { json: string }).json), 'add-ons run where the event is stored, not here');
  t.same(a.collections.list(project), [], 'nothing stored, no collection made');
  t.throws(() => a.events.stamp('0'.repeat(24), events, ctx), { name: 'ApiError', message: /does not exist/ });
  // 1,000 properties is the bound: checked against the collection's schema as it is now.
  await a.events.append(project, [{ collection: 'wide', event: Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`p${i}`, i])) }], ctx);
  t.same(a.events.stamp(project, [{ collection: 'wide', event: { p1: 1 } }, { collection: 'wide', event: { q: 1 } }], ctx)
    .map((r) => (r.ok ? 'ok' : r.error.error_code)), ['ok', 'TooManyPropertiesError']);

  // Two engines (two nodes) store the stamped events later, at other times: the same rows.
  const toStore = stamped.flatMap((r, i) => (r.ok ? [{ collection: events[i].collection, event: JSON.parse(r.json) }] : []));
  const dirB = tempDir();
  const rowsAfterStoring = async (dir: string, at: number) => {
    now = at;
    const engine = dir === dirA ? a : await openEngine({ dataDir: dir, queryWorkers: 0, flushIntervalMs: 3_600_000, clock: () => now });
    const id = dir === dirA ? project : (await engine.projects.create('p')).id;
    const copy = toStore.map((e) => ({ collection: e.collection, event: structuredClone(e.event) }));
    const results = await engine.events.append(id, copy, { ip: 'other', userAgent: 'other' }, { stamped: true });
    t.same(results.map((r) => r.ok && r.offset), [0, 1, 2, -1], 'the repeated uniqueness token is dropped where stored');
    const rows = rowsOf(engine, id, 'clicks').map((row) => {
      const { svc: { id: _id, ...svc }, ...rest } = JSON.parse(row);
      return { ...rest, svc };
    });
    if (engine !== a) await engine.close();
    return rows;
  };
  const rowsA = await rowsAfterStoring(dirA, Date.parse('2026-05-01T10:00:05.000Z'));
  const rowsB = await rowsAfterStoring(dirB, Date.parse('2026-05-03T00:00:00.000Z'));
  t.same(rowsA, rowsB, 'both stores hold the same events');
  t.same(rowsA.map((r) => [r.n, r.svc.timestamp, r.svc.created_at]), [
    [1, '2026-05-01T10:00:00.000Z', '2026-05-01T10:00:00.000Z'],
    [2, '2026-04-30T10:00:00.000Z', '2026-05-01T10:00:00.000Z'],
    [3, '2026-05-01T10:00:00.000Z', '2026-05-01T10:00:00.000Z'],
  ], 'svc.timestamp and svc.created_at as stamped, not the time they were stored');
  t.equal(rowsA[0].ip, ctx.ip, 'the placeholders as the stamping node filled them');
  t.equal(rowsA[2].parsed.path, '/a', 'the add-on ran where the event was stored');
  const unstamped = await a.events.append(project, [{ collection: 'clicks', event: { n: 9 } }], ctx, { stamped: true });
  t.equal(unstamped[0].ok === false && unstamped[0].error.error_code, 'InvalidEventError', 'a stamped append needs svc.created_at');
  await a.close();
});

t.test('a delete goes in between the rounds of a flush that writes keep going round', async (t) => {
  const dir = tempDir();
  const engine = await open(dir);
  const project = engine.projects.list()[0].id;
  const batch = (round: number) =>
    Array.from({ length: 50 }, (_, i) => ({ collection: 'c', event: { n: round * 50 + i, odd: i % 2 } }));
  await engine.events.append(project, batch(0), ctx);
  await engine.flush();
  let deleted = false;
  let deleting: Promise<void> | undefined;
  // A steady load: each round appends and asks for a flush while the last one runs; the delete
  // is asked for once the flush is going round.
  let rounds = 0;
  while (!deleted && rounds < 300) {
    rounds++;
    void engine.flush();
    if (rounds === 3) {
      deleting = engine.collections
        .deleteEvents(project, 'c', { filters: [{ property_name: 'odd', operator: 'eq', property_value: 1 }] })
        .then(() => { deleted = true; });
    }
    await engine.events.append(project, batch(rounds), ctx);
  }
  t.ok(deleted, `the delete was applied while the writes went on (${rounds} rounds)`);
  await deleting;
  await engine.flush();
  const left = rowsOf(engine, project, 'c').map((r) => JSON.parse(r));
  t.ok(left.every((e) => e.odd === 0 || e.n >= 50), 'the odd events written before the delete are gone');
  t.equal(left.filter((e) => e.n < 50).length, 25);
  await engine.close();
});
