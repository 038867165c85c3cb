/**
 * Asynchronous extractions (docs/api.md §11) through the real server: submit (202, Location,
 * {"result": {id, url, status}}), poll the job, stream the NDJSON or CSV result; the error shapes;
 * deleted events left out; and a job over two million events that completes after a kill -9 in
 * the middle of it.
 */
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };

function api(server: TestServer) {
  const c = client(server.url);
  const base = `/3.0/projects/${server.projectId}`;
  return {
    base,
    submit: (body: Record<string, unknown>, key = server.keys.read) =>
      c.post(`${base}/queries/extraction`, {
        key,
        body: { event_collection: 'pv', timeframe: ALL_TIME, ...body },
      }),
    job: (id: string, key = server.keys.read) =>
      c.get(`${base}/queries/extraction/jobs/${id}`, { key }),
    get: (path: string, key = server.keys.read) => c.get(path, { key }),
  };
}

async function waitDone(
  server: TestServer,
  id: string,
  timeoutMs = 60_000,
): Promise<Record<string, any>> {
  let job: Record<string, any> = {};
  await eventually(async () => {
    job = (await api(server).job(id)).body;
    return job.status === 'done' || job.status === 'failed';
  }, timeoutMs);
  return job;
}

t.test('submit, poll and stream NDJSON and CSV; errors; deleted events stay out', async (t) => {
  const server = await startServer();
  t.teardown(() => server.cleanup());
  const a = api(server);
  const c = client(server.url);
  const events = Array.from({ length: 50 }, (_, i) => ({
    n: i,
    name: i === 3 ? 'a "quoted", name' : `u${i}`,
    tags: ['x', 'y'],
  }));
  t.equal(
    (await c.post(`${a.base}/events`, { key: server.keys.write, body: { pv: events } })).status,
    200,
  );
  t.equal(
    (
      await c.send('DELETE', `${a.base}/events/pv`, {
        key: server.keys.master,
        body: { filters: [{ property_name: 'n', operator: 'gte', property_value: 40 }] },
      })
    ).status,
    204,
  );

  const submitted = await a.submit({ async: true });
  t.equal(submitted.status, 202, submitted.text);
  t.match(submitted.body.result, { id: /^[0-9a-f]{24}$/, status: /^(queued|running)$/ });
  t.equal(
    submitted.headers.get('location'),
    `${a.base}/queries/extraction/jobs/${submitted.body.result.id}`,
  );
  const job = await waitDone(server, submitted.body.result.id);
  t.equal(job.status, 'done');
  t.equal(job.events, 40, 'deleted events are not extracted');
  t.equal(job.url, submitted.body.result.url);
  const ndjson = await a.get(job.url);
  t.equal(ndjson.status, 200);
  t.match(ndjson.headers.get('content-type'), /application\/x-ndjson/);
  const lines = ndjson.text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  t.equal(lines.length, 40);
  t.same(
    lines.map((e) => e.n).sort((x, y) => x - y),
    Array.from({ length: 40 }, (_, i) => i),
  );
  t.ok(lines.every((e) => typeof e.svc.id === 'string'));

  const csvJob = await a.submit({
    email: 'ops@example.com',
    content_type: 'text/csv',
    property_names: ['n', 'name', 'tags'],
  });
  t.equal(csvJob.status, 202);
  t.match(csvJob.body.result, /^Processing\. Tally sends no email: extraction job [0-9a-f]{24} /,
    'an email extraction answers a sentence in result, as Keen does (its Explorer draws it)');
  t.match(csvJob.body, { id: /^[0-9a-f]{24}$/, url: /\/result$/, status: /^(queued|running|done)$/ }, 'the job beside it');
  const csvDone = await waitDone(server, csvJob.body.id);
  t.equal(csvDone.email, 'ops@example.com');
  const csv = await a.get(csvDone.url);
  t.match(csv.headers.get('content-type'), /text\/csv/);
  const rows = csv.text.trim().split('\n');
  t.equal(rows[0], 'n,name,tags');
  t.equal(rows.length, 41);
  t.ok(rows.includes('3,"a ""quoted"", name","[""x"",""y""]"'), 'RFC 4180 quoting; lists as JSON');

  const bad = await a.submit({ async: true, content_type: 'text/xml' });
  t.equal(bad.status, 400);
  t.equal(bad.body.error_code, 'InvalidQueryError');
  const tooMany = await a.submit({ async: true, latest: 10_000_001 });
  t.equal(tooMany.body.error_code, 'ExtractionTooLargeError');
  const noTimeframe = await c.post(`${a.base}/queries/extraction`, {
    key: server.keys.read,
    body: { event_collection: 'pv', async: true },
  });
  t.equal(noTimeframe.body.error_code, 'MissingRequiredRequestFieldError');
  t.equal((await a.submit({ async: true }, server.keys.write)).status, 403);
  t.equal((await a.job(job.id, server.keys.write)).status, 403);
  const unknown = await a.job('0'.repeat(24));
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error_code, 'ResourceNotFoundError');
  t.equal((await a.get(`${a.base}/queries/extraction/jobs/${'0'.repeat(24)}/result`)).status, 404);
  const latest = await a.submit({ async: 'true', latest: 5 });
  const latestDone = await waitDone(server, latest.body.result.id);
  t.equal(latestDone.events, 5);
  const newest = (await a.get(latestDone.url)).text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line).n);
  t.same(
    newest.sort((x: number, y: number) => x - y),
    [35, 36, 37, 38, 39],
  );
  await server.stop();
});

t.test('a job over several day segments writes its events in time order, as the synchronous answer', async (t) => {
  const server = await startServer({ args: ['--flush-interval', '200'] });
  t.teardown(() => server.cleanup());
  const a = api(server);
  const c = client(server.url);
  const day = Date.UTC(2026, 0, 1);
  // Sent newest day first: each day's events go to that day's segment.
  const events = [2, 1, 0].flatMap((d) => Array.from({ length: 10 }, (_, i) => ({
    n: d * 10 + i, svc: { timestamp: new Date(day + d * 86_400_000 + i * 1000).toISOString() },
  })));
  t.equal((await c.post(`${a.base}/events`, { key: server.keys.write, body: { pv: events } })).status, 200);
  const segments = async () => {
    const text = (await c.get('/metrics', { key: server.orgKey })).text;
    return Number(/^tally_segments (\d+)$/m.exec(text)?.[1] ?? 0);
  };
  t.ok(await eventually(async () => (await segments()) >= 3), 'one segment a day');
  for (const body of [{ latest: 25 }, {}]) {
    const sync = await c.post(`${a.base}/queries/extraction`, {
      key: server.keys.read, body: { event_collection: 'pv', timeframe: ALL_TIME, property_names: ['n'], ...body },
    });
    t.equal(sync.status, 200);
    const submitted = await a.submit({ async: true, property_names: ['n'], ...body });
    const job = await waitDone(server, submitted.body.result.id);
    t.equal(job.status, 'done');
    const lines = (await a.get(job.url)).text.trim().split('\n').map((line) => JSON.parse(line).n);
    const expected = Array.from({ length: body.latest ?? 30 }, (_, i) => 30 - (body.latest ?? 30) + i);
    t.same(sync.body.result.map((event: { n: number }) => event.n), expected, 'the synchronous answer, oldest first');
    t.same(lines, expected, `the job's file in the same order (${JSON.stringify(body)})`);
  }
  await server.stop();
});

t.test('an extraction of two million events completes after a kill -9 in the middle', async (t) => {
  let server = await startServer();
  t.teardown(() => server.cleanup());
  const total = 2_000_000;
  const batch = 20_000; // BATCH_EVENTS_MAX
  const send = (from: number) =>
    client(server.url).post(`${api(server).base}/events`, {
      key: server.keys.write,
      body: { big: Array.from({ length: batch }, (_, i) => ({ n: from + i })) },
    });
  for (let from = 0; from < total; from += 4 * batch) {
    const sent = await Promise.all([0, 1, 2, 3].map((k) => send(from + k * batch)));
    t.ok(sent.every((r) => r.status === 200 && !r.text.includes('"success":false')));
  }
  await server.stop(); // flushed into segments
  server = await server.restart();
  const submitted = await client(server.url).post(`${api(server).base}/queries/extraction`, {
    key: server.keys.read,
    body: { event_collection: 'big', timeframe: ALL_TIME, async: true },
  });
  t.equal(submitted.status, 202);
  const id = submitted.body.result.id;
  t.ok(
    await eventually(async () => (await api(server).job(id)).body.status === 'running', 30_000),
    'the job runs',
  );
  const early = await api(server).get(`${api(server).base}/queries/extraction/jobs/${id}/result`);
  t.equal(early.status, 409);
  t.equal(early.body.error_code, 'ExtractionNotReadyError');
  await server.kill9();
  const killedMs = Date.now();
  server = await server.restart();
  const job = await waitDone(server, id, 120_000);
  t.equal(job.status, 'done', JSON.stringify(job));
  t.ok(
    Date.parse(job.finished_at) > killedMs,
    'the job finished after the restart, not before the kill',
  );
  t.equal(job.events, total);
  const response = await fetch(`${server.url}${job.url}`, {
    headers: { Authorization: server.keys.read },
  });
  t.equal(response.status, 200);
  let newlines = 0;
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) newlines++;
  }
  t.equal(newlines, total, `streamed ${bytes} bytes, one line per event`);
  t.equal(Number(response.headers.get('content-length')), bytes);
  await server.stop();
});
