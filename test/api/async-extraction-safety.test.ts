/**
 * Asynchronous extractions where they went wrong (issue 36, items 1 and 2):
 * - a job over flushed segments and unflushed buffer rows returns each event once, equal to the
 *   synchronous extraction, over many rounds of writes, flushes, counts and jobs;
 * - a job that fails says why in one sentence and its result answers that it failed (410), not
 *   that it is not ready;
 * - an access key with forced filters reads only jobs that carry them.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { client, eventually, type Res } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };
const FLUSH_MS = 300;

function api(server: TestServer) {
  const c = client(server.url);
  const base = `/3.0/projects/${server.projectId}`;
  return {
    base,
    write: (events: readonly Record<string, unknown>[], collection = 'pv') =>
      c.post(`${base}/events`, { key: server.keys.write, body: { [collection]: events } }),
    extract: (body: Record<string, unknown>, key = server.keys.read) =>
      c.post(`${base}/queries/extraction`, { key, body: { event_collection: 'pv', timeframe: ALL_TIME, ...body } }),
    count: () => c.post(`${base}/queries/count`, { key: server.keys.read, body: { event_collection: 'pv', timeframe: ALL_TIME } }),
    job: (id: string, key = server.keys.read) => c.get(`${base}/queries/extraction/jobs/${id}`, { key }),
    result: (id: string, key = server.keys.read) => c.get(`${base}/queries/extraction/jobs/${id}/result`, { key }),
    createKey: (body: unknown) => c.post(`${base}/keys`, { key: server.keys.master, body }),
  };
}

async function waitFinished(server: TestServer, id: string): Promise<Record<string, any>> {
  let job: Record<string, any> = {};
  await eventually(async () => {
    job = (await api(server).job(id)).body;
    return job.status === 'done' || job.status === 'failed';
  }, 60_000);
  return job;
}

function lines(res: Res): Record<string, any>[] {
  const text = res.text.trim();
  return text === '' ? [] : text.split('\n').map((line) => JSON.parse(line));
}

/** Stops the server if a failed assertion left it running, then removes its data. */
async function dispose(server: TestServer): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) await server.kill9();
  server.cleanup();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test('async extraction equals the synchronous one, each event once, over rounds of writes, flushes and jobs', async (t) => {
  const server = await startServer({ args: ['--flush-interval', String(FLUSH_MS)] });
  t.teardown(() => dispose(server));
  const a = api(server);
  let next = 0;
  const writeSome = async (count: number) => {
    const events = Array.from({ length: count }, () => ({ n: next++, tenant: next % 2 === 0 ? 'acme' : 'other' }));
    const res = await a.write(events);
    t.equal(res.status, 200, res.text);
  };
  // The repro first: flushed rows, then unflushed ones, a count (which sends the buffer
  // snapshot to a query worker), then a job; then rounds that vary the order.
  const rounds: readonly { flushed: number; buffered: number; count: boolean; during: number }[] = [
    { flushed: 50, buffered: 7, count: true, during: 0 },
    { flushed: 0, buffered: 9, count: false, during: 0 },
    { flushed: 30, buffered: 11, count: true, during: 5 },
    { flushed: 0, buffered: 3, count: true, during: 0 },
    { flushed: 17, buffered: 0, count: false, during: 4 },
    { flushed: 40, buffered: 13, count: false, during: 0 },
    { flushed: 0, buffered: 21, count: true, during: 6 },
    { flushed: 25, buffered: 2, count: true, during: 0 },
  ];
  for (const [round, { flushed, buffered, count, during }] of rounds.entries()) {
    if (flushed > 0) {
      await writeSome(flushed);
      await sleep(FLUSH_MS * 4); // flushed into a segment
    }
    await writeSome(buffered);
    if (count) t.equal((await a.count()).body.result, next, `round ${round}: count`);
    const before = next;
    const submitted = await a.extract({ async: true });
    t.equal(submitted.status, 202, submitted.text);
    const sync = (await a.extract({})).body.result as Record<string, any>[];
    // Writes while the job is queued or running: they may or may not be in it, but once only.
    if (during > 0) await writeSome(during);
    const job = await waitFinished(server, submitted.body.result.id);
    t.equal(job.status, 'done', `round ${round}: ${JSON.stringify(job.error)}`);
    const rows = lines(await a.result(job.id));
    const ns = rows.map((row) => row.n as number);
    const ids = rows.map((row) => row.svc.id as string);
    t.equal(new Set(ids).size, ids.length, `round ${round}: no event twice (${ids.length} rows)`);
    t.equal(job.events, rows.length, `round ${round}: the job counts what it wrote`);
    const expected = Array.from({ length: before }, (_, i) => i);
    t.same(ns.filter((n) => n < before).sort((x, y) => x - y), expected, `round ${round}: every event written before the job, once`);
    t.ok(ns.every((n) => n < next), `round ${round}: nothing that was not written`);
    if (during === 0) {
      t.same(ns.sort((x, y) => x - y), sync.map((row) => row.n).sort((x: number, y: number) => x - y),
        `round ${round}: the same rows as the synchronous extraction`);
    }
  }
  t.equal(await server.stop(), 0);
});

t.test('a failed job says why in a sentence, and its result says it failed', async (t) => {
  let server = await startServer();
  t.teardown(() => dispose(server));
  t.equal((await api(server).write([{ n: 1 }])).status, 200);
  const submitted = await api(server).extract({ async: true });
  const done = await waitFinished(server, submitted.body.result.id);
  t.equal(done.status, 'done');
  t.equal(await server.stop(), 0);
  // A queued job whose output cannot be written (its .part path is a directory): it fails on
  // every attempt when the server starts again.
  const dir = path.join(server.dataDir, 'extractions');
  const record = JSON.parse(fs.readFileSync(path.join(dir, `${done.id}.json`), 'utf8'));
  const id = 'f'.repeat(24);
  fs.writeFileSync(path.join(dir, `${id}.json`), JSON.stringify({ ...record, id, status: 'queued', events: null, finished_at: null }));
  fs.mkdirSync(path.join(dir, `${id}.ndjson.part`));
  server = await server.restart();
  const job = await waitFinished(server, id);
  t.equal(job.status, 'failed');
  t.equal(job.error.error_code, 'InternalServerError');
  t.match(job.error.message, /failed/);
  t.notMatch(job.error.message, /\n|\bat \S+ \(|\.js\b|\/dist\//, 'one sentence: no stack, no file paths');
  const result = await api(server).result(id);
  t.equal(result.status, 410, result.text);
  t.equal(result.body.error_code, 'ExtractionFailedError');
  t.match(result.body.message, /failed/);
  t.equal((await api(server).count()).status, 200, 'the server still serves');
  t.equal(await server.stop(), 0);
});

t.test("an access key reads only the jobs that carry its forced filters", async (t) => {
  const server = await startServer();
  t.teardown(() => dispose(server));
  const a = api(server);
  const events = Array.from({ length: 20 }, (_, n) => ({ n, tenant: n % 2 === 0 ? 'acme' : 'other' }));
  t.equal((await a.write(events)).status, 200);
  const acmeFilter = { property_name: 'tenant', operator: 'eq', property_value: 'acme' };
  const acme = (await a.createKey({ name: 'acme', permitted: ['queries'], options: { queries: { filters: [acmeFilter] } } })).body.key as string;
  const acme2 = (await a.createKey({ name: 'acme2', permitted: ['queries'], options: { queries: { filters: [acmeFilter] } } })).body.key as string;
  const open = (await a.createKey({ name: 'open', permitted: ['queries'] })).body.key as string;

  const byMaster = (await a.extract({ async: true }, server.keys.master)).body.result.id as string;
  t.equal((await waitFinished(server, byMaster)).events, 20);
  for (const [what, res] of [['status', await a.job(byMaster, acme)], ['result', await a.result(byMaster, acme)]] as const) {
    t.equal(res.status, 403, `a Master Key job's ${what} is refused to a tenant's key`);
    t.equal(res.body.error_code, 'KeyNotPermittedError');
    t.notMatch(res.text, /other/, 'nothing of the other tenant');
  }
  t.equal((await a.result(byMaster, server.keys.master)).status, 200, 'the Master Key reads it');
  t.equal((await a.result(byMaster, open)).status, 200, 'an access key without forced filters reads it');

  const byAcme = (await a.extract({ async: true }, acme)).body.result.id as string;
  t.equal((await waitFinished(server, byAcme)).status, 'done');
  const own = await a.result(byAcme, acme);
  t.equal(own.status, 200);
  t.same(lines(own).map((row) => row.tenant).sort(), Array(10).fill('acme'), 'its own job holds its tenant only');
  t.equal((await a.job(byAcme, acme2)).status, 200, 'a key with the same forced filters reads it');
  t.equal((await a.result(byAcme, server.keys.master)).status, 200);
  t.equal(await server.stop(), 0);
});
