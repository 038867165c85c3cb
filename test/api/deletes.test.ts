/**
 * Deletes (docs/api.md §7) through the real server: by filters and timeframe, a whole collection,
 * a property; the error shapes; rate-limit categories; the deleted events gone from queries and
 * extractions, after a restart and after kill -9; disk space back once the background rewrite
 * has run. The outbound Kafka view is checked through the embedded engine and kafkajs.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { startTestBroker } from '../helpers/kafka/broker.js';

const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };

function api(server: TestServer) {
  const c = client(server.url);
  const base = `/3.0/projects/${server.projectId}`;
  return {
    write: (collection: string, events: unknown[]) =>
      c.post(`${base}/events`, { key: server.keys.write, body: { [collection]: events } }),
    count: async (collection: string, filters: unknown[] = []) => {
      const r = await c.post(`${base}/queries/count`, {
        key: server.keys.read,
        body: { event_collection: collection, timeframe: ALL_TIME, filters },
      });
      return r.status === 200 ? (r.body.result as number) : -r.status;
    },
    extract: async (collection: string) => {
      const r = await c.post(`${base}/queries/extraction`, {
        key: server.keys.read,
        body: { event_collection: collection, timeframe: ALL_TIME },
      });
      return r.body.result as Record<string, unknown>[];
    },
    del: (pathTail: string, options: { key?: string; body?: unknown } = {}) =>
      c.send('DELETE', `${base}/events/${pathTail}`, {
        key: options.key ?? server.keys.master,
        body: options.body,
      }),
    schema: (collection: string) =>
      c.get(`${base}/events/${collection}`, { key: server.keys.read }),
  };
}

const rows = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    n: i,
    a: i % 2,
    secret: `s${i}`,
    user: { id: i, pw: 'x' },
  }));

t.test(
  'a filtered delete removes exactly the matching events, durably, and the rewrite frees disk',
  async (t) => {
    let server = await startServer();
    t.teardown(() => server.cleanup());
    let a = api(server);
    t.equal((await a.write('pv', rows(2000))).status, 200);
    t.ok(await eventually(async () => (await a.count('pv')) === 2000));
    await server.stop();
    server = await server.restart();
    a = api(server);
    const segmentBytes = () => dirBytes(path.join(server.dataDir, 'projects'));
    const before = segmentBytes();
    const r = await a.del('pv', {
      body: {
        filters: [{ property_name: 'a', operator: 'eq', property_value: 1 }],
        timeframe: ALL_TIME,
      },
    });
    t.equal(r.status, 204, r.text);
    t.equal(r.text, '');
    t.equal(await a.count('pv'), 1000, 'queries no longer see deleted events at once');
    t.equal(await a.count('pv', [{ property_name: 'a', operator: 'eq', property_value: 1 }]), 0);
    const extracted = await a.extract('pv');
    t.equal(extracted.length, 1000);
    t.ok(
      extracted.every((e) => e.a === 0),
      'extractions no longer return them',
    );
    t.equal((await a.schema('pv')).status, 200, 'the collection stays');
    t.equal(
      (await a.write('pv', [{ n: -1, a: 1 }])).status,
      200,
      'an event written after the delete',
    );
    t.ok(
      await eventually(async () => (await a.count('pv')) === 1001),
      'events written later are not deleted',
    );
    t.ok(
      await eventually(async () => segmentBytes() < before * 0.8, 20_000),
      'the background rewrite gives disk space back',
    );
    await server.kill9();
    server = await server.restart();
    a = api(server);
    t.equal(await a.count('pv'), 1001, 'after kill -9 the deleted events stay deleted');
    await server.stop();
  },
);

t.test(
  'a delete acknowledged just before kill -9 survives the crash (WAL replay included)',
  async (t) => {
    let server = await startServer();
    t.teardown(() => server.cleanup());
    let a = api(server);
    t.equal((await a.write('crash', rows(100))).status, 200);
    t.equal(
      (
        await a.del(
          'crash?timeframe=%7B%22start%22%3A%222000-01-01T00%3A00%3A00Z%22%2C%22end%22%3A%222100-01-01T00%3A00%3A00Z%22%7D&filters=%5B%7B%22property_name%22%3A%22n%22%2C%22operator%22%3A%22lt%22%2C%22property_value%22%3A10%7D%5D',
        )
      ).status,
      204,
    );
    t.equal((await a.del('crash/properties/secret')).status, 204);
    await server.kill9();
    server = await server.restart();
    a = api(server);
    t.equal(await a.count('crash'), 90);
    const events = await a.extract('crash');
    t.equal(events.length, 90);
    t.ok(events.every((e) => !('secret' in e) && (e.n as number) >= 10));
    t.notOk(
      'secret' in (await a.schema('crash')).body.properties,
      'the property is gone from the schema',
    );
    await server.stop();
  },
);

t.test('whole collection delete, property delete, errors and rate limits', async (t) => {
  const server = await startServer();
  t.teardown(() => server.cleanup());
  const a = api(server);
  t.equal((await a.write('gone', rows(10))).status, 200);
  t.equal((await a.write('keep', rows(10))).status, 200);
  t.equal((await a.del('gone')).status, 204);
  t.equal((await a.schema('gone')).status, 404, 'the collection and its schema are gone');
  t.equal(await a.count('gone'), 0);
  t.equal(await a.count('keep'), 10);
  t.equal((await a.del('gone')).body.error_code, 'ResourceNotFoundError');
  t.equal((await a.write('gone', [{ back: true }])).status, 200);
  t.ok(
    await eventually(async () => (await a.count('gone')) === 1),
    'a collection can be written again',
  );
  t.same(
    Object.keys((await a.schema('gone')).body.properties).filter((p) => !p.startsWith('svc.')),
    ['back'],
  );

  t.equal((await a.del('keep/properties/user')).status, 204, 'a nested property');
  const events = await a.extract('keep');
  t.ok(events.every((e) => !('user' in e) && e.secret !== undefined));
  t.notOk(Object.keys((await a.schema('keep')).body.properties).some((p) => p.startsWith('user')));
  const missing = await a.del('keep/properties/nope');
  t.equal(missing.status, 404);
  t.equal(missing.body.error_code, 'ResourceNotFoundError');

  const read = await a.del('keep', { key: server.keys.read });
  t.equal(read.status, 403);
  t.equal(read.body.error_code, 'KeyNotPermittedError');
  t.equal((await a.del('keep', { key: 'nope' })).status, 401);
  const badFilter = await a.del('keep?filters=notjson');
  t.equal(badFilter.status, 400);
  t.equal(badFilter.body.error_code, 'InvalidFilterError');
  const badTimeframe = await a.del('keep', { body: { timeframe: 'this_7_fortnights' } });
  t.equal(badTimeframe.status, 400);
  t.equal(badTimeframe.body.error_code, 'TimeframeDefinitionError');
  t.equal((await a.del('keep', { body: '{nope' })).status, 400);
  t.equal(await a.count('keep'), 10, 'failed deletes deleted nothing');

  // Deletes: 10 per minute (the property delete above was one; bad requests count nothing).
  const f = (i: number) => ({
    filters: [{ property_name: 'n', operator: 'eq', property_value: 100 + i }],
    timeframe: 'this_1_days',
  });
  for (let i = 0; i < 9; i++) t.equal((await a.del('keep', { body: f(i) })).status, 204);
  const limited = await a.del('keep', { body: f(99) });
  t.equal(limited.status, 429);
  t.equal(limited.body.error_code, 'RateLimitExceededError');
  t.match(limited.body.message, /10 deletes per minute/);
  t.equal((await a.write('other', rows(1))).status, 200);
  t.equal((await a.del('other')).status, 204, 'collection deletes have their own category');
  await server.stop();
});

t.test(
  'deleted events are gone from a fresh read of the outbound Kafka view (embedded engine)',
  async (t) => {
    const broker = await startTestBroker();
    t.teardown(() => broker.stop());
    const { engine, project } = broker.te;
    const ctx = { ip: '10.0.0.1', userAgent: 'test' };
    await engine.events.append(
      project.id,
      Array.from({ length: 20 }, (_, i) => ({ collection: 'k', event: { n: i } })),
      ctx,
    );
    await engine.collections.deleteEvents(project.id, 'k', {
      filters: [{ property_name: 'n', operator: 'gte', property_value: 5 }],
    });
    const consumer = broker.kafka('out').consumer({ groupId: 'd1', maxWaitTimeInMs: 300 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'k', fromBeginning: true });
    const got: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => resolve(), 3000);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            got.push((JSON.parse(message.value!.toString()) as { n: number }).n);
            if (got.length > 5) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    t.same(got, [0, 1, 2, 3, 4]);
    await engine.flush();
    const log = engine.log.read(project.id, 'k', 0, 100, 1 << 20);
    t.same(
      log.map((r) => JSON.parse(r.json).n),
      [0, 1, 2, 3, 4],
      'also once flushed to a segment',
    );
    await engine.collections.deleteProperty(project.id, 'k', 'n');
    const stripped = engine
      .log.read(project.id, 'k', 0, 100, 1 << 20)
      .map((r) => JSON.parse(r.json));
    t.equal(stripped.length, 5);
    t.ok(
      stripped.every((e) => !('n' in e) && typeof e.svc.id === 'string'),
      'a deleted property is gone from the log view',
    );
  },
);

/** The segment files under `dir`. */
function arrowPaths(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.arrow'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/**
 * Bytes of the segment files under `dir`, read while the server merges and rewrites them: a file
 * removed after the listing counts 0, and a listing that met a vanishing folder is taken again.
 */
function dirBytes(dir: string): number {
  for (let attempt = 1; ; attempt++) {
    try {
      return arrowPaths(dir).reduce((total, file) => total + (fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0), 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 10) throw error;
    }
  }
}

t.test('a delete is answered while queries keep coming and a merge waits for them to pause', async (t) => {
  // A merge waits until no query ran for 2 s; it used to keep the flush running while it
  // waited, and a delete (which waits for the flush) hung as long as queries kept coming.
  const server = await startServer({ args: ['--flush-interval', '200'] });
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill9();
    server.cleanup();
  });
  const a = api(server);
  for (const from of [0, 100]) {
    const batch = rows(100).map((row) => ({ ...row, n: row.n + from }));
    t.equal((await a.write('pv', batch)).status, 200);
    t.ok(await eventually(async () => (await a.count('pv')) === from + 100));
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // flushed: a segment of its own
  }
  // Each day's segments are in a folder of their own: two in one folder make a merge due.
  const perDay = new Map<string, number>();
  for (const file of arrowPaths(server.dataDir)) perDay.set(path.dirname(file), (perDay.get(path.dirname(file)) ?? 0) + 1);
  t.ok(Math.max(0, ...perDay.values()) >= 2, 'two small segments of one day: a merge is due once the day is quiet');
  let answered = false;
  let queries = 0;
  const polling = (async () => {
    // A dashboard's polling: a query every 100 ms until the delete is answered (or 20 s).
    for (const deadline = Date.now() + 20_000; !answered && Date.now() < deadline; queries++) {
      await a.count('pv');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 6_000)); // the day is quiet: the merge waits for the queries
  const deleted = a.del('pv', { body: { filters: [{ property_name: 'a', operator: 'eq', property_value: 1 }] } })
    .then((r) => { answered = true; return r; });
  await polling;
  t.ok(answered, `the delete was answered while the queries went on (${queries} queries)`);
  t.equal((await deleted).status, 204);
  t.equal(await a.count('pv'), 100, 'the odd events are gone');
  t.equal(await server.stop(), 0, 'the server stops cleanly');
});
