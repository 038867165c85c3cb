/**
 * Durability through the real process: first-start banner and ready line, SIGTERM exits 0, kill -9
 * loses nothing acknowledged (events and schema), uniqueness tokens survive restarts, and a crash in
 * the middle of concurrent writers leaves every acknowledged event exactly once.
 */
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };

async function count(server: TestServer, collection: string): Promise<number> {
  const response = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/count`, {
    key: server.keys.read, body: { event_collection: collection, timeframe: ALL_TIME },
  });
  return response.status === 200 ? response.body.result : -1;
}

t.test('first start prints the banner and the ready line; restarts print only the ready line', async (t) => {
  const server = await startServer();
  const out = server.stdout();
  t.match(out, server.orgKey);
  t.match(out, server.keys.write);
  t.match(out, server.projectId);
  t.match(out, /curl .*\/3\.0\/projects\//);
  t.match(out, /^tally ready http=http:\/\/127\.0\.0\.1:\d+ kafka_in=off kafka_out=off$/m);
  t.equal(await server.stop(), 0, 'SIGTERM exits 0');
  const again = await server.restart();
  t.notMatch(again.stdout(), again.keys.write, 'keys are printed once only');
  t.notMatch(again.stderr(), again.keys.write, 'keys never reach the log');
  t.match(again.stdout(), /^tally ready http=\S+ kafka_in=off kafka_out=off$/m);
  t.equal(again.projectId, server.projectId);
  await again.stop();
  again.cleanup();
});

t.test('kill -9 then restart: the event and its schema are still there', async (t) => {
  const server = await startServer();
  const api = client(server.url);
  const path = `/3.0/projects/${server.projectId}/events/purchases`;
  t.equal((await api.post(path, { key: server.keys.write, body: { item: 'golden widget', price: 25.5 } })).status, 201);
  await server.kill9();
  const again = await server.restart();
  const schema = await client(again.url).get(path, { key: again.keys.read });
  t.equal(schema.status, 200);
  t.equal(schema.body.properties.item, 'string');
  t.equal(schema.body.properties.price, 'num');
  t.ok(await eventually(async () => (await count(again, 'purchases')) === 1), 'count is 1');
  await again.stop();
  again.cleanup();
});

t.test('a uniqueness token dedupes across a SIGTERM restart and a kill -9 restart', async (t) => {
  let server = await startServer();
  const send = (s: TestServer, n: number) => client(s.url).post(`/3.0/projects/${s.projectId}/events/orders`, {
    key: s.keys.write, body: { n, svc: { uniqueness_token: 'order-42' } },
  });
  t.equal((await send(server, 1)).status, 201);
  t.equal((await send(server, 2)).status, 201, 'a duplicate answers like a stored event');
  await server.stop();
  server = await server.restart();
  t.equal((await send(server, 3)).status, 201);
  await server.kill9();
  server = await server.restart();
  t.equal((await send(server, 4)).status, 201);
  const batch = await client(server.url).post(`/3.0/projects/${server.projectId}/events`, {
    key: server.keys.write, body: { orders: [{ n: 5, svc: { uniqueness_token: 'order-42' } }] },
  });
  t.same(batch.body, { orders: [{ success: true }] });
  t.ok(await eventually(async () => (await count(server, 'orders')) === 1), 'stored once');
  const other = await client(server.url).post(`/3.0/projects/${server.projectId}/events/other`, {
    key: server.keys.write, body: { svc: { uniqueness_token: 'order-42' } },
  });
  t.equal(other.status, 201);
  t.ok(await eventually(async () => (await count(server, 'other')) === 1), 'tokens are per collection');
  await server.stop();
  server.cleanup();
});

/** Sends events until the server dies; returns the ids that were acknowledged. */
async function writer(server: TestServer, name: string, batchSize: number): Promise<string[]> {
  const api = client(server.url);
  const acked: string[] = [];
  for (let seq = 0; ; seq += batchSize) {
    const ids = Array.from({ length: batchSize }, (_, index) => `${name}-${seq + index}`);
    try {
      if (batchSize === 1) {
        const response = await api.post(`/3.0/projects/${server.projectId}/events/crash`, {
          key: server.keys.write, body: { id: ids[0], writer: name },
        });
        if (response.status === 201) acked.push(ids[0]!);
      } else {
        const response = await api.post(`/3.0/projects/${server.projectId}/events`, {
          key: server.keys.write, body: { crash: ids.map((id) => ({ id, writer: name })) },
        });
        if (response.status === 200) {
          response.body.crash.forEach((r: { success: boolean }, index: number) => { if (r.success) acked.push(ids[index]!); });
        }
      }
    } catch {
      return acked; // the server is gone: whatever was not answered is not acknowledged
    }
  }
}

t.test('crash: concurrent writers, kill -9 mid-stream, every acknowledged event exactly once', async (t) => {
  const server = await startServer();
  const writers = [
    ...Array.from({ length: 4 }, (_, index) => writer(server, `single${index}`, 1)),
    ...Array.from({ length: 2 }, (_, index) => writer(server, `batch${index}`, 250)),
  ];
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await server.kill9();
  const acked = (await Promise.all(writers)).flat();
  t.ok(acked.length > 100, `${acked.length} events acknowledged before the crash`);
  const again = await server.restart();
  const response = await client(again.url).post(`/3.0/projects/${again.projectId}/queries/extraction`, {
    key: again.keys.read, body: { event_collection: 'crash', timeframe: ALL_TIME, property_names: ['id'] },
  });
  t.equal(response.status, 200, response.text.slice(0, 200));
  const seen = new Map<string, number>();
  for (const event of response.body.result as { id: string }[]) seen.set(event.id, (seen.get(event.id) ?? 0) + 1);
  const missing = acked.filter((id) => !seen.has(id));
  const doubled = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  t.same(missing, [], 'no acknowledged event is lost');
  t.same(doubled, [], 'no event is stored twice');
  t.ok(seen.size >= acked.length, `${seen.size} stored ≥ ${acked.length} acknowledged`);
  await again.stop();
  again.cleanup();
});

t.test('SIGTERM mid-stream: exit 0 and every acknowledged event is there after restart', async (t) => {
  const server = await startServer();
  const writers = Array.from({ length: 3 }, (_, index) => writer(server, `term${index}`, index === 0 ? 100 : 1));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  t.equal(await server.stop(), 0, 'exit code 0');
  const acked = (await Promise.all(writers)).flat();
  t.ok(acked.length > 10, `${acked.length} acknowledged`);
  const again = await server.restart();
  const response = await client(again.url).post(`/3.0/projects/${again.projectId}/queries/extraction`, {
    key: again.keys.read, body: { event_collection: 'crash', timeframe: ALL_TIME, property_names: ['id'] },
  });
  const seen = new Set((response.body.result as { id: string }[]).map((event) => event.id));
  t.same(acked.filter((id) => !seen.has(id)), [], 'no acknowledged event is lost');
  t.equal(response.body.result.length, seen.size, 'none twice');
  await again.stop();
  again.cleanup();
});
