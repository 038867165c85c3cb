/**
 * Synchronous extraction with `latest` (docs/api.md §11): it reads the newest segments first and
 * stops once older ones cannot hold one of the N newest events, so it returns the N newest in
 * ascending order without scanning the whole collection (and never trips the scan limit).
 */
import t from 'tap';
import { client } from '../helpers/http.js';
import { startServer } from '../helpers/server.js';

const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };

t.test('latest reads the newest segment only and returns the N newest, ascending', async (t) => {
  let server = await startServer();
  t.teardown(() => server.cleanup());
  const batch = (day: number) =>
    Array.from({ length: 3000 }, (_, i) => ({
      n: day * 10_000 + i,
      svc: { timestamp: new Date(Date.UTC(2024, 0, day, 0, 0, i)).toISOString() },
    }));
  for (const day of [1, 2, 3]) {
    const api = client(server.url);
    const r = await api.post(`/3.0/projects/${server.projectId}/events`, {
      key: server.keys.write,
      body: { pv: batch(day) },
    });
    t.equal(r.status, 200);
    await server.stop(); // flushes: one segment per day
    server = await server.restart();
  }
  const r = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/extraction`, {
    key: server.keys.read,
    body: { event_collection: 'pv', timeframe: ALL_TIME, latest: 5, include_metadata: true },
  });
  t.equal(r.status, 200, r.text);
  t.same(
    r.body.result.map((e: { n: number }) => e.n),
    [32995, 32996, 32997, 32998, 32999],
  );
  t.equal(r.body.execution_metadata.events_scanned, 3000, 'only the newest day was scanned');
  const tooMany = await client(server.url).post(
    `/3.0/projects/${server.projectId}/queries/extraction`,
    {
      key: server.keys.read,
      body: { event_collection: 'pv', timeframe: ALL_TIME, latest: 100_001 },
    },
  );
  t.equal(tooMany.status, 400);
  t.equal(tooMany.body.error_code, 'ExtractionTooLargeError');
  await server.stop();
});
