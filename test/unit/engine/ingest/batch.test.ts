/**
 * A large batch body prepared on an ingest worker must give exactly what the in-thread path gives:
 * the same results (offsets, error codes and messages), the same stored rows and the same schema.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import {
  TAG_BOOL, TAG_LIST, TAG_MISSING, TAG_NUM, TAG_STR, openEngine, type AppendResult, type BatchAppendResult, type TallyEngine,
} from '../../../../engine/index.js';
import { INGEST_WORKER_BODY_BYTES_MIN } from '../../../../engine/base/limits.js';
import { newLeaves } from '../../../../engine/schema/flatten.js';
import { FastBatchReader } from '../../../../engine/ingest/fast-batch.js';

const ctx = { ip: '8.8.8.8', userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0' };
const NOW = Date.parse('2026-11-22T10:00:00.000Z');

async function open(ingestWorkers: number): Promise<TallyEngine> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-ingest-'));
  return openEngine({ dataDir, queryWorkers: 0, ingestWorkers, flushIntervalMs: 3_600_000, clock: () => NOW });
}

const ADDONS = [
  { name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' },
  { name: 'svc:ua_parser', input: { ua_string: 'ua' }, output: 'agent.parsed' },
  { name: 'svc:url_parser', input: { url: 'page' }, output: 'page_parts' },
  { name: 'svc:referrer_parser', input: { referrer_url: 'ref', page_url: 'page' }, output: 'ref_parts' },
  { name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'when' },
];

/** Events of every kind the write path tells apart, good and refused, from a seeded generator. */
function batchBody(seed: number): string {
  const random = mulberry32(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const events = (n: number) => Array.from({ length: n }, (_, i) => {
    const base: Record<string, unknown> = {
      i, user: `u${Math.floor(random() * 50)}`, amount: Math.round(random() * 1e4) / 100, vip: random() < 0.5, none: null,
    };
    switch (pick(['plain', 'addons', 'addons', 'placeholders', 'token', 'conflict', 'list', 'bad'] as const)) {
      case 'plain': return base;
      case 'addons': return {
        ...base, ip: pick(['8.8.8.8', '2001:4860:4860::8888', '10.0.0.1', 'not an ip']),
        ua: pick([ctx.userAgent, '', 'curl/8.0']), page: pick(['https://shop.example.com/a/b?x=1#top', 'nope']),
        ref: pick(['https://www.google.com/search?q=tally', '']), svc: { addons: ADDONS },
      };
      case 'placeholders': return {
        ...base, deep: { ip: '${svc.ip}', who: ['${svc.user_agent}'] },
        svc: { addons: [{ name: 'svc:ip_to_geo', input: { ip: 'deep.ip' }, output: 'g' }] },
      };
      case 'token': return { ...base, svc: { uniqueness_token: `tok${Math.floor(random() * 20)}` } };
      case 'conflict': return { ...base, amount: pick(['a string', true, null, { nested: 1 }]) };
      case 'list': return { ...base, tags: [pick(['a', 'b']), 1, true, null], objects: [{ a: 1 }] };
      default: return pick<unknown>([
        'not an object', null, [1, 2], { svc: 'not an object' }, { svc: { id: 'mine' } }, { 'a.b': 1 },
        { svc: { addons: [{ name: 'svc:nope', input: {}, output: 'x' }] } },
        { svc: { addons: [{ name: 'svc:url_parser', input: { url: 'missing' }, output: 'x' }] } },
        { svc: { addons: [{ name: 'svc:url_parser', input: { url: 'i' }, output: 'svc.x' }] } },
        { svc: { timestamp: 'yesterday' } }, { huge: 'x'.repeat(950_000) },
      ]);
    }
  });
  return JSON.stringify({ purchases: events(700), clicks: events(300), 'bad\u0001name': events(2), '': events(1) });
}

function summary(result: BatchAppendResult): unknown {
  return {
    collections: result.collections,
    results: result.results.map((r: AppendResult) => (r.ok ? r.offset : `${r.error.error_code}: ${r.error.message}`)),
  };
}

function storedRows(engine: TallyEngine, project: string, collection: string): unknown[] {
  return engine.log.read(project, collection, 0, 10_000, 1 << 30).map((record) => {
    const event = JSON.parse(record.json) as { svc: Record<string, unknown> };
    delete event.svc.id; // random per event
    return { offset: record.offset, createdAtMs: record.createdAtMs, event };
  });
}

/** Every row's column values (what queries read), by path. */
function columnValues(engine: TallyEngine, project: string, collection: string): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  let before = 0;
  for (const chunk of engine.collections.scan(project, collection, 0, 8.64e15)) {
    for (const column of chunk.columns.values()) {
      const values = (out[column.path] ??= []);
      for (let row = 0; row < chunk.rows; row++) {
        const tag = column.tags[row];
        values[before + row] = tag === TAG_MISSING ? 'missing' : tag === TAG_NUM ? column.num![row]
          : tag === TAG_BOOL ? column.num![row] === 1 : tag === TAG_STR ? column.dict![column.str![row]!]
          : tag === TAG_LIST ? column.lists![row] : null;
      }
    }
    before += chunk.rows;
  }
  return out;
}

t.test('ingest workers and the in-thread path agree on every result, row and schema', async (t) => {
  const inThread = await open(0);
  const onWorker = await open(1);
  t.teardown(() => Promise.all([inThread.close(), onWorker.close()]));
  const project = (engine: TallyEngine) => engine.projects.list()[0]!.id;
  for (const seed of [1, 2, 3]) {
    const body = Buffer.from(batchBody(seed));
    t.ok(body.length >= INGEST_WORKER_BODY_BYTES_MIN, 'the body is large enough to go to a worker');
    const expected = await inThread.events.appendBatch(project(inThread), Buffer.from(body), ctx);
    const got = await onWorker.events.appendBatch(project(onWorker), body, ctx);
    t.same(summary(got), summary(expected), `seed ${seed}: the same results`);
    const refused = expected.results.filter((r) => !r.ok).length;
    t.ok(refused > 20 && refused < expected.results.length - 500, `seed ${seed}: ${refused} refused, most stored`);
  }
  for (const collection of ['purchases', 'clicks']) {
    const rows = storedRows(onWorker, project(onWorker), collection);
    t.ok(rows.length > 300, `${collection}: ${rows.length} rows stored`);
    t.same(rows, storedRows(inThread, project(inThread), collection), `${collection}: the same stored rows`);
    t.same(columnValues(onWorker, project(onWorker), collection), columnValues(inThread, project(inThread), collection),
      `${collection}: the same column values`);
    t.same(onWorker.collections.get(project(onWorker), collection), inThread.collections.get(project(inThread), collection),
      `${collection}: the same schema`);
  }
  t.same(onWorker.collections.list(project(onWorker)).map((c) => c.name), inThread.collections.list(project(inThread)).map((c) => c.name));
});

t.test('a large body that is not a batch is refused with the in-thread path\'s error', async (t) => {
  const inThread = await open(0);
  const onWorker = await open(2);
  t.teardown(() => Promise.all([inThread.close(), onWorker.close()]));
  const padding = 'x'.repeat(INGEST_WORKER_BODY_BYTES_MIN);
  const bodies = [
    `{"c": [{"a": "${padding}"}`,
    `[{"a": "${padding}"}]`,
    `{"c": {"a": "${padding}"}}`,
    JSON.stringify({ c: Array.from({ length: 20_001 }, () => ({ a: 1 })) }),
  ];
  for (const body of bodies) {
    const refusal = async (engine: TallyEngine) => {
      const error = await engine.events.appendBatch(engine.projects.list()[0]!.id, Buffer.from(body), ctx)
        .then(() => null, (e: { error_code: string; message: string }) => e);
      return error && `${error.error_code}: ${error.message}`;
    };
    const expected = await refusal(inThread);
    t.match(expected, /^Invalid(Json|Batch)Error: /);
    t.equal(await refusal(onWorker), expected, expected!.slice(0, 60));
  }
});

t.test('a body of plain events, read by the fast path on either thread, is stored as the general path stores it', async (t) => {
  const general = await open(0);
  const inThread = await open(0);
  const onWorker = await open(1);
  t.teardown(() => Promise.all([general.close(), inThread.close(), onWorker.close()]));
  const project = (engine: TallyEngine) => engine.projects.list()[0]!.id;
  const random = mulberry32(5);
  // As text, so that it holds what JSON.stringify cannot write (-0); the general path gets JSON.parse of it.
  const event = (i: number): string => `{"user_id":"u${Math.floor(random() * 1e6)}","price":${Math.round(random() * 1e4) / 100},` +
    `"n":${i % 3 === 0 ? '-0' : i % 3 === 1 ? '-0.0' : i},"page":{"path":"/p/${i % 40}","empty":{},"name with space":"é😀\\n\\""},` +
    `"tags":${i % 2 ? '["a",null,"${svc.ip}"]' : '[]'},"member":${random() < 0.5},"none":null` +
    (i % 4 === 0 ? '}' : `,"svc":{"timestamp":"${i % 4 === 1 ? '2026-11-20T01:02:03.456Z' : '2026-11-20T01:02:03+05:30'}"}}`);
  const text = `{"views":[${Array.from({ length: 3_000 }, (_, i) => event(i)).join(',')}],` +
    `"clicks":[${Array.from({ length: 600 }, (_, i) => event(i)).join(',')}]}`;
  const { views, clicks } = JSON.parse(text) as { views: object[]; clicks: object[] };
  const body = Buffer.from(text);
  t.ok(body.length >= INGEST_WORKER_BODY_BYTES_MIN, 'the body is large enough to go to a worker');
  t.not(new FastBatchReader().read(body, ctx, NOW, newLeaves()), null, 'the fast path takes this body');
  const expected = await general.events.append(project(general), [
    ...views.map((event) => ({ collection: 'views', event })),
    ...clicks.map((event) => ({ collection: 'clicks', event })),
  ], ctx);
  const exactValues = (engine: TallyEngine, collection: string) => Object.fromEntries(Object.entries(columnValues(engine, project(engine), collection))
    .map(([path, values]) => [path, values.map((value) => (Object.is(value, -0) ? '-0' : value))]));
  for (const engine of [inThread, onWorker]) {
    const got = await engine.events.appendBatch(project(engine), Buffer.from(body), ctx);
    t.same(summary(got), summary({ collections: [['views', 3_000], ['clicks', 600]], results: expected }), 'the same results');
    for (const collection of ['views', 'clicks']) {
      t.strictSame(storedRows(engine, project(engine), collection), storedRows(general, project(general), collection),
        `${collection}: the same stored rows`);
      t.strictSame(exactValues(engine, collection), exactValues(general, collection), `${collection}: the same column values`);
      t.same(engine.collections.get(project(engine), collection), general.collections.get(project(general), collection),
        `${collection}: the same schema`);
    }
  }
});
