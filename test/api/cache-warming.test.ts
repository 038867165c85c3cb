/**
 * Cache warming over the real server: segments a flush writes are decoded into the query workers'
 * caches before any query asks (tally_segments_warmed_total counts them), and so are the stored
 * ones when the server starts; answers are the same as from a cold cache, and --no-cache-warming
 * leaves the caches cold.
 */
import os from 'node:os';
import t, { type Test } from 'tap';
import { client, eventually, sample } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const DAY = 86_400_000;
const START = Date.UTC(2026, 0, 1);
const DAYS = 4;
const PER_DAY = 500;

/** Events over DAYS days: a price, a 5-value device, and a user id that is new on every row. */
function events(): Record<string, unknown>[] {
  return Array.from({ length: DAYS * PER_DAY }, (_, i) => ({
    price: (i % 97) / 4,
    device: ['desktop', 'mobile', 'tablet', 'tv', 'console'][i % 5],
    user_id: `u${i}`,
    svc: { timestamp: new Date(START + Math.floor(i / PER_DAY) * DAY + (i % PER_DAY) * 1000).toISOString() },
  }));
}

const timeframe = JSON.stringify({ start: new Date(START).toISOString(), end: new Date(START + DAYS * DAY).toISOString() });

async function loadAndAnswer(t: Test, server: TestServer): Promise<{ warmed: number; answers: unknown[] }> {
  const api = client(server.url);
  const base = `/3.0/projects/${server.projectId}`;
  const posted = await api.post(`${base}/events`, { key: server.keys.write, body: { views: events() } });
  t.equal(posted.status, 200);
  const metrics = async () => (await api.get('/metrics', { key: server.orgKey })).text;
  // One segment a day once the flush has run (every 200 ms here).
  t.ok(await eventually(async () => sample(await metrics(), 'tally_segments') >= DAYS), 'flushed into day segments');
  // Warming runs while the workers are idle; give it the time a flush's segments take.
  await eventually(async () => sample(await metrics(), 'tally_segments_warmed_total') >= DAYS, 5_000);
  const warmed = sample(await metrics(), 'tally_segments_warmed_total');
  const query = (analysis: string, params: Record<string, string>) => api.get(
    `${base}/queries/${analysis}?${new URLSearchParams({ event_collection: 'views', timeframe, ...params })}`,
    { key: server.keys.read });
  const answers: unknown[] = [];
  for (const [analysis, params] of [
    ['sum', { target_property: 'price' }],
    ['count', { filters: JSON.stringify([{ property_name: 'price', operator: 'gte', property_value: 10 }]) }],
    ['average', { target_property: 'price', group_by: 'device' }],
    ['count_unique', { target_property: 'user_id' }],
    ['extraction', { latest: '3', property_names: JSON.stringify(['user_id', 'price']) }],
  ] as const) {
    const response = await query(analysis, params);
    t.equal(response.status, 200, analysis);
    answers.push(response.body);
  }
  return { warmed, answers };
}

t.test('segments are warmed as they are written, and answer as cold ones do', async (t) => {
  const warm = await startServer({ args: ['--flush-interval', '200'] });
  t.teardown(async () => {
    await warm.stop();
    warm.cleanup();
  });
  const cold = await startServer({ args: ['--flush-interval', '200', '--no-cache-warming'] });
  t.teardown(async () => {
    await cold.stop();
    cold.cleanup();
  });
  const a = await loadAndAnswer(t, warm);
  const b = await loadAndAnswer(t, cold);
  t.ok(a.warmed >= DAYS, `every flushed segment warmed (${a.warmed})`);
  t.equal(b.warmed, 0, '--no-cache-warming: none');
  t.same(a.answers, b.answers, 'the same answers, warmed or not');
  const expectedSum = events().reduce((total, event) => total + (event.price as number), 0);
  t.equal((a.answers[0] as { result: number }).result, expectedSum, 'the sum of every price');
  t.equal((a.answers[3] as { result: number }).result, DAYS * PER_DAY, 'every user id counted (ids are read, not warmed)');
  // A funnel listing actors runs whole on one worker: with two or more, it reads the days another worker warmed
  // from that worker's shared memory (tally_segments_read_from_peers_total), answering the same.
  const funnel = async (server: TestServer) => (await client(server.url).post(`/3.0/projects/${server.projectId}/queries/funnel`, {
    key: server.keys.read,
    // Listing its actors, a funnel runs whole on one worker (without, it fans out over them).
    body: { steps: ['desktop', 'tv'].map((device) => ({
      event_collection: 'views', actor_property: 'device', timeframe: JSON.parse(timeframe) as unknown, with_actors: device === 'tv',
      filters: [{ property_name: 'device', operator: 'eq', property_value: device }],
    })) },
  })).body as { result: number[] };
  const metric = async (server: TestServer, name: string) => sample((await client(server.url).get('/metrics', { key: server.orgKey })).text, name);
  const peersBefore = await metric(warm, 'tally_segments_read_from_peers_total');
  const coldFunnel = await funnel(cold);
  t.same(coldFunnel.result, [1, 0], 'desktop, then no tv by the same device');
  t.same((await funnel(warm)).result, coldFunnel.result, 'the funnel answers as from a cold cache');
  const shared = await metric(warm, 'tally_segments_shared_total');
  const fromPeers = await metric(warm, 'tally_segments_read_from_peers_total') - peersBefore;
  if (os.availableParallelism() >= 2) {
    t.ok(shared >= 1, `warmed segments shared between the query workers (${shared})`);
    t.ok(fromPeers >= 1, `the funnel read another worker's days from its memory (${fromPeers})`);
  } else t.same([shared, fromPeers], [0, 0], 'one query worker: nothing shared');
  t.equal(await metric(cold, 'tally_segments_shared_total'), 0, '--no-cache-warming: nothing warmed, nothing shared');
});

t.test('a restarted server warms the stored segments before the first query asks', async (t) => {
  const first = await startServer({ args: ['--flush-interval', '200', '--no-cache-warming'] });
  const { answers } = await loadAndAnswer(t, first);
  t.equal(await first.stop(), 0);
  const again = await first.restart(['--flush-interval', '200']);
  t.teardown(async () => {
    await again.stop();
    again.cleanup();
  });
  const api = client(again.url);
  const warmed = async () => sample((await api.get('/metrics', { key: again.orgKey })).text, 'tally_segments_warmed_total');
  t.ok(await eventually(async () => (await warmed()) >= DAYS), `the ${DAYS} day segments warmed at start (${await warmed()})`);
  const base = `/3.0/projects/${again.projectId}`;
  const sum = await api.get(`${base}/queries/sum?${new URLSearchParams({ event_collection: 'views', timeframe, target_property: 'price' })}`,
    { key: again.keys.read });
  t.same(sum.body, answers[0], 'the same sum as before the restart');
});
