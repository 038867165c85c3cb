/**
 * The columns are the only stored copy of an event: extraction and the outbound log rebuild each
 * event's JSON from them (event-json.ts). These tests write awkward events through the engine (the
 * in-thread path and the ingest-worker path), read them back from the write buffer, from segments
 * after a flush and after a reopen, and compare with what was sent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { openEngine, type TallyEngine } from '../../../../engine/index.js';
import { abandonDataDirLock } from '../../../../engine/base/data-dir-lock.js';
import { formatTimestamp } from '../../../../engine/schema/timestamp.js';

const ctx = { ip: '203.0.113.9', userAgent: 'test/1.0' };
const BASE = Date.UTC(2024, 4, 1);

function deep(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 'bottom', empty: {} };
  for (let level = 0; level < depth; level++) value = { [`k${level}`]: value, [`n${level}`]: level };
  return value;
}

/** Events that exercise every type, a path seen with several types, nesting, lists and unicode. */
function awkwardEvents(): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [
    { v: 1, s: 'plain', b: true, nil: null, list: [1, 2.5, null], flag: false },
    { v: '1', s: 'ünïcødé ✓ 日本語 😀', list: ['a', null, 'ß'], tags: [] },
    { v: true, s: 'quote " backslash \\ newline \n tab \t nul \u0000 bell \u0007' },
    { v: null, s: '', list: [true, false, null] },
    { v: [3, 4], nested: { a: { b: { c: 'deep' } }, empty: {}, list: ['x'] } },
    { v: { inner: 1.25, more: { x: -7 } }, 'clé ✓': { 'ключ': 'значение' } },
    { n: 0, neg: -123.456, tiny: 1e-7, big: 9007199254740993, huge: 1.5e18, frac: 0.1 + 0.2 },
    { empty: {}, svc: { uniqueness_token: 'tok-1', location: { coordinates: [13.4, 52.52] } } },
    deep(14),
    { mixed: 5 }, { mixed: 'five' }, { mixed: [5] }, { mixed: { five: 5 } }, { mixed: null }, {},
  ];
  return events.map((event, i) => ({
    ...event,
    svc: { ...(event.svc as object | undefined), timestamp: formatTimestamp(BASE + i * 3_600_000) },
  }));
}

/** What the engine should hand back for `sent` at log offset order: the svc fields it sets. */
/** `value` with object keys in sorted order at every depth: JSON objects are unordered. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sorted((value as Record<string, unknown>)[key])]));
}

function stripServerFields(event: Record<string, unknown>): Record<string, unknown> {
  const { id, created_at: createdAt, ...svc } = event.svc as Record<string, unknown>;
  if (typeof id !== 'string' || !/^[0-9a-f]{24}$/.test(id)) throw new Error(`bad svc.id ${String(id)}`);
  if (typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt))) throw new Error('bad svc.created_at');
  return { ...event, svc };
}

async function extraction(engine: TallyEngine, project: string, collection: string): Promise<Record<string, unknown>[]> {
  const got = await engine.queries.run(project, 'extraction', {
    event_collection: collection, timeframe: { start: '2024-01-01T00:00:00Z', end: '2025-01-01T00:00:00Z' },
  }) as { result: Record<string, unknown>[] };
  return got.result;
}

function logEvents(engine: TallyEngine, project: string, collection: string): Record<string, unknown>[] {
  return engine.log.read(project, collection, 0, 1_000_000, 1 << 30).map((record) => {
    const event = JSON.parse(record.json) as Record<string, unknown>;
    if ((event.svc as { id: string }).id !== record.id) throw new Error('the record key is not svc.id');
    return event;
  });
}

async function check(t: Test, engine: TallyEngine, project: string, collection: string, sent: unknown[], when: string): Promise<void> {
  const extracted = await extraction(engine, project, collection);
  t.same(extracted.map(stripServerFields), sent, `extraction equals what was sent (${when})`);
  const logged = logEvents(engine, project, collection);
  t.same(logged.map(stripServerFields), sent, `the outbound log equals what was sent (${when})`);
  t.same(logged, extracted, `extraction and the log agree, svc.id included (${when})`);
  const ids = new Set(logged.map((event) => (event.svc as { id: string }).id));
  t.equal(ids.size, logged.length, `svc.id is unique (${when})`);
}

t.test('events rebuilt from columns equal what was sent: buffer, segments, reopen', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-event-json-'));
  let engine = await openEngine({ dataDir: dir, queryWorkers: 0, flushIntervalMs: 3_600_000 });
  const project = engine.projects.list()[0].id;
  const sent = awkwardEvents();
  const results = await engine.events.append(project,
    sent.map((event) => ({ collection: 'awkward', event: structuredClone(event) })), ctx);
  t.same(results.filter((result) => !result.ok), [], 'every event is accepted');
  await check(t, engine, project, 'awkward', sent, 'write buffer');
  await engine.flush();
  await check(t, engine, project, 'awkward', sent, 'segments');
  await engine.close();
  engine = await openEngine({ dataDir: dir, queryWorkers: 0, flushIntervalMs: 3_600_000 });
  await check(t, engine, project, 'awkward', sent, 'after a reopen');
  await engine.close();
});

t.test('a batch body prepared on an ingest worker round-trips too, add-on config and results included', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-event-json-'));
  const engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 1, flushIntervalMs: 3_600_000 });
  const project = engine.projects.list()[0].id;
  const addons = [{ name: 'svc:url_parser', input: { url: 'page' }, output: 'parsed' }];
  const sent: Record<string, unknown>[] = [];
  const awkward = awkwardEvents();
  // Over 64 KB, so an ingest worker prepares it.
  for (let i = 0; sent.length < 1_500; i++) {
    const event = awkward[i % awkward.length];
    const svc: Record<string, unknown> = { ...(event.svc as Record<string, unknown>), addons };
    if (svc.uniqueness_token !== undefined) svc.uniqueness_token = `tok-${i}`;
    sent.push({ ...event, page: `https://example.com/p/${i}?q=${i % 7}`, svc });
  }
  const body = Buffer.from(JSON.stringify({ batch: sent }));
  t.ok(body.length > 64 * 1024);
  const { results } = await engine.events.appendBatch(project, body, ctx);
  t.same(results.filter((result) => !result.ok), []);
  await engine.flush();
  const extracted = await extraction(engine, project, 'batch');
  t.equal(extracted.length, sent.length);
  const domains = new Set<unknown>();
  const withoutResults = extracted.map((event) => {
    const { parsed, ...rest } = stripServerFields(event);
    domains.add((parsed as { domain: string }).domain);
    return rest;
  });
  t.same([...domains], ['example.com'], 'every event has its add-on result');
  const byTime = (a: Record<string, unknown>, b: Record<string, unknown>) =>
    String((a.svc as { timestamp: string }).timestamp).localeCompare(String((b.svc as { timestamp: string }).timestamp));
  t.same(withoutResults.sort(byTime), [...sent].sort(byTime));
  await engine.close();
});

t.test('events replayed from the WAL after a crash equal what was sent: in-thread and ingest-worker calls', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-event-json-'));
  const options = { dataDir: dir, queryWorkers: 0, ingestWorkers: 1, flushIntervalMs: 3_600_000 };
  const crashed = await openEngine(options);
  const project = crashed.projects.list()[0].id;
  const sent = awkwardEvents();
  const results = await crashed.events.append(project,
    sent.map((event) => ({ collection: 'awkward', event: structuredClone(event) })), ctx);
  t.same(results.filter((result) => !result.ok), [], 'every event is accepted');
  const batch: Record<string, unknown>[] = [];
  for (let i = 0; batch.length < 1_000; i++) {
    const event = sent[i % sent.length];
    const svc = { ...(event.svc as Record<string, unknown>) };
    if (svc.uniqueness_token !== undefined) svc.uniqueness_token = `tok-${i}`; // not a duplicate
    batch.push({ ...event, i, svc });
  }
  const body = Buffer.from(JSON.stringify({ batch }));
  t.ok(body.length > 64 * 1024, 'large enough for an ingest worker');
  t.same((await crashed.events.appendBatch(project, body, ctx)).results.filter((result) => !result.ok), []);
  const before = logEvents(crashed, project, 'batch');
  // No close() and no flush: every row is in the WAL only, as a kill -9 leaves it.
  abandonDataDirLock(dir);
  const recovered = await openEngine(options);
  await check(t, recovered, project, 'awkward', sent, 'WAL replay, in-thread call');
  t.same(logEvents(recovered, project, 'batch'), before, 'the worker-prepared batch replays as it was, svc.id included');
  const replayed = logEvents(recovered, project, 'batch').map(stripServerFields);
  const differing = replayed.findIndex((event, i) => JSON.stringify(sorted(event)) !== JSON.stringify(sorted(batch[i])));
  t.equal(differing, -1, 'every event of the batch equals what was sent', { got: replayed[differing], sent: batch[differing] });
  await recovered.close();
});
