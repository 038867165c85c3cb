/**
 * Two Tally nodes on one real Kafka broker, each storing only its partitions of tally.events
 * (`--cluster-nodes 0=...,1=... --cluster-replicas 1`): events written to both nodes over HTTP;
 * every analysis asked of either node answers what a single (non-cluster) node holding the same
 * events answers, whichever node stores the collection (the other computes it there, as a partial
 * state, and finishes it). Funnels over collections of both nodes answer what the single node
 * answers (each node scans its steps, the asking node combines their actor sets); with one node
 * stopped, queries of its collections (funnels too) answer 503 naming the partition, the others
 * still 200.
 */
import t from 'tap';
import { Assignment } from '../../server/cluster/assignment.js';
import { startKafka, type RealKafka } from '../helpers/kafka-cluster.js';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';
import { caughtUp, clusterArgs, stopAll } from '../helpers/cluster.js';

const SECRET = 'a-test-cluster-secret-0123456789';
const TIMEFRAME = { start: '2024-05-01T00:00:00Z', end: '2024-05-10T00:00:00Z' };
const PER_COLLECTION = 48;

let kafka: RealKafka;
const servers: TestServer[] = [];
t.before(async () => {
  kafka = await startKafka({ nodes: 1 });
});
t.teardown(() => stopAll(servers, kafka));

function eventsOf(collection: string): Record<string, unknown>[] {
  return Array.from({ length: PER_COLLECTION }, (_, i) => ({
    id: `${collection}-${i}`, n: i, price: Math.round(((i * 37) % 101) * 1.25 * 100) / 100,
    // Users overlap differently from collection to collection (c0 u0-u10, c1 u4-u14, ...): funnels count something.
    user: `u${((i * 7) % 11) + (Number(collection.slice(1)) % 4) * 4}`, city: ['Paris', 'Oslo', 'Lima'][i % 3], ...(i % 5 === 0 ? {} : { plan: i % 2 === 0 ? 'pro' : 'free' }),
    svc: { timestamp: new Date(Date.UTC(2024, 4, 2 + (i % 4), (i * 5) % 24, i % 60)).toISOString() },
  }));
}

/** The analyses asked of every collection: path and body. */
function queriesOf(collection: string): [string, Record<string, unknown>][] {
  const base = { event_collection: collection, timeframe: TIMEFRAME };
  return [
    ['count', base],
    ['count', { ...base, filters: [{ property_name: 'plan', operator: 'eq', property_value: 'pro' }] }],
    ['count_unique', { ...base, target_property: 'user' }],
    ['sum', { ...base, target_property: 'price' }],
    ['average', { ...base, target_property: 'price', group_by: 'city' }],
    ['minimum', { ...base, target_property: 'price' }],
    ['maximum', { ...base, target_property: 'n' }],
    ['median', { ...base, target_property: 'price' }],
    ['percentile', { ...base, target_property: 'n', percentile: 90 }],
    ['select_unique', { ...base, target_property: 'city' }],
    ['count', { ...base, group_by: ['city', 'plan'], interval: 'daily', timezone: 'America/New_York' }],
    ['multi_analysis', { ...base, group_by: 'city', analyses: {
      total: { analysis_type: 'count' }, spent: { analysis_type: 'sum', target_property: 'price' },
      users: { analysis_type: 'count_unique', target_property: 'user' },
    } }],
    ['extraction', { ...base, property_names: ['id', 'n', 'city'] }],
    ['funnel', { steps: [
      { event_collection: collection, actor_property: 'user', timeframe: TIMEFRAME, filters: [{ property_name: 'city', operator: 'eq', property_value: 'Paris' }] },
      { event_collection: collection, actor_property: 'user', timeframe: TIMEFRAME, filters: [{ property_name: 'plan', operator: 'eq', property_value: 'pro' }] },
    ] }],
  ];
}

const lt = (value: number) => [{ property_name: 'n', operator: 'lt', property_value: value }];

/** Funnels whose steps read collections of both nodes (x0, y0 on node 0; x1, y1 on node 1). */
function funnelsAcross(x0: string, y0: string, x1: string, y1: string): [string, Record<string, unknown>][] {
  const step = (collection: string, more: Record<string, unknown> = {}) => ({ event_collection: collection, actor_property: 'user', ...more });
  return [
    ['2 steps', { timeframe: TIMEFRAME, steps: [step(x0), step(x1)] }],
    ['2 steps, filtered', { timeframe: TIMEFRAME, steps: [step(x1, { filters: lt(20) }), step(x0, { filters: lt(9) })] }],
    ['3 steps', { timeframe: TIMEFRAME, steps: [step(x0, { filters: lt(30) }), step(x1), step(y0, { filters: lt(12) })] }],
    ['an optional step', { timeframe: TIMEFRAME, steps: [step(x1, { filters: lt(25) }), step(x0, { optional: true, filters: lt(4) }), step(y1, { filters: lt(15) })] }],
    ['an inverted step', { timeframe: TIMEFRAME, steps: [step(y0), step(x1, { inverted: true, filters: lt(6) }), step(y1)] }],
    ['with_actors', { timeframe: TIMEFRAME, steps: [step(x0, { with_actors: true, filters: lt(40) }), step(x1, { with_actors: true }),
      step(y1, { inverted: true, with_actors: true, filters: [{ property_name: 'city', operator: 'eq', property_value: 'Oslo' }] })] }],
    ['a step with a filter and its own timeframe and timezone', { timeframe: TIMEFRAME, timezone: 'Europe/Paris', steps: [
      step(y1, { filters: [{ property_name: 'plan', operator: 'eq', property_value: 'pro' }] }),
      step(x0, { timeframe: { start: '2024-05-03T00:00:00Z', end: '2024-05-04T12:00:00Z' }, timezone: 'Asia/Tokyo',
        filters: [{ property_name: 'city', operator: 'ne', property_value: 'Lima' }] }),
      step(x1, { timeframe: 'previous_1000_years', with_actors: true }),
    ] }],
  ];
}

/** A funnel's result and its actors as sets (their order is each store's scan order). */
function funnelAnswer(body: any): unknown {
  return { result: body?.result, steps: body?.steps,
    actors: body?.actors?.map((list: unknown[] | null) => (list === null ? null : [...list].map(String).sort())) };
}

/** The result of a query; an extraction's sorted by id (nodes store in the partition's order). */
async function ask(server: TestServer, key: string, analysis: string, body: Record<string, unknown>): Promise<{ status: number; result: unknown; body: any }> {
  const response = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/${analysis}`, { key, body });
  let result = response.body?.result;
  if (analysis === 'extraction' && Array.isArray(result)) result = [...result].sort((a, b) => String(a.id).localeCompare(String(b.id)));
  return { status: response.status, result, body: response.body };
}

t.test('two nodes, each with its partitions, answer as one node', async (t) => {
  const ports = [await freePort(), await freePort()];
  const nodes = ports.map((port, id) => `${id}=http://127.0.0.1:${port}`).join(',');
  const argsOf = (id: number) => [...clusterArgs(kafka.bootstrap, id), '--http-port', String(ports[id]),
    '--cluster-nodes', nodes, '--cluster-replicas', '1', '--cluster-secret', SECRET];
  const a = await startServer({ args: argsOf(0) });
  servers.push(a);
  // Node 1 starts with an empty data dir: the organization and the project come from the metadata topic.
  const b = await startServer({ orgKey: a.orgKey, args: argsOf(1) });
  servers.push(b);
  const reference = await startServer();
  servers.push(reference);
  t.equal(b.projectId, a.projectId);
  t.same(b.keys, a.keys, 'node 1 has node 0\'s project and keys, from the metadata topic');
  t.match(a.stdout(), / nodes=2 replicas=1 owned=0,2,4,6,8,10$/m);
  t.match(b.stdout(), / nodes=2 replicas=1 owned=1,3,5,7,9,11$/m);
  await Promise.all([caughtUp(a), caughtUp(b)]);
  const assignment = new Assignment([{ id: 0, url: '' }, { id: 1, url: '' }], 1, 12, 'tally.events');
  const partitionOf = (collection: string) => assignment.partitionOf(`${a.projectId}/${collection}`);
  const ownerOf = (collection: string) => assignment.ownersOf(partitionOf(collection))[0]!.id;
  // Three collections stored on each node. The funnels' steps are the first two of each, with the
  // users of eventsOf's four sets in the same roles whatever collections the project id (new each
  // run) puts on which node: with two steps' users alike the funnels counted 4 different things.
  const names = Array.from({ length: 64 }, (_, i) => `c${i}`);
  const usersOf = (collection: string) => Number(collection.slice(1)) % 4;
  const pick = (owner: number, sets: readonly number[]): string[] => {
    const stored = names.filter((name) => ownerOf(name) === owner);
    const steps = sets.map((set) => stored.find((name) => usersOf(name) === set)!);
    return [...steps, stored.find((name) => !steps.includes(name))!];
  };
  const COLLECTIONS = [...pick(0, [0, 1]), ...pick(1, [2, 3])];

  // Every collection's events, half written through each node, and all to the reference.
  for (const collection of COLLECTIONS) {
    const events = eventsOf(collection);
    const halves = [events.filter((_, i) => i % 2 === 0), events.filter((_, i) => i % 2 === 1)];
    for (const [i, node] of [a, b].entries()) {
      const r = await client(node.url).post(`/3.0/projects/${node.projectId}/events`, { key: node.keys.write, body: { [collection]: halves[i] } });
      t.equal(r.status, 200);
    }
    const r = await client(reference.url).post(`/3.0/projects/${reference.projectId}/events`, { key: reference.keys.write, body: { [collection]: events } });
    t.equal(r.status, 200);
  }
  const owners = new Set(COLLECTIONS.map(ownerOf));
  t.same([...owners].sort(), [0, 1], 'the collections are spread over both nodes');
  for (const collection of COLLECTIONS) {
    t.ok(await eventually(async () => (await ask(a, a.keys.read, 'count', { event_collection: collection, timeframe: TIMEFRAME })).result === PER_COLLECTION, 20_000),
      `${collection} stored`);
  }

  for (const collection of COLLECTIONS) {
    for (const [analysis, body] of queriesOf(collection)) {
      const expected = await ask(reference, reference.keys.read, analysis, body);
      t.equal(expected.status, 200, `reference ${analysis}`);
      for (const [name, node] of [['node 0', a], ['node 1', b]] as const) {
        const got = await ask(node, node.keys.read, analysis, body);
        t.equal(got.status, 200, `${name} ${analysis} ${collection}: ${JSON.stringify(got.body).slice(0, 200)}`);
        t.same(got.result, expected.result, `${name}: ${analysis} of ${collection} (stored on node ${ownerOf(collection)})`);
      }
    }
  }

  // Funnels over collections of both nodes: each node scans the steps it stores, the asking node combines them.
  const [on0, y0] = COLLECTIONS.filter((c) => ownerOf(c) === 0);
  const [on1, y1] = COLLECTIONS.filter((c) => ownerOf(c) === 1);
  const counts = new Set<string>();
  for (const [shape, body] of funnelsAcross(on0, y0, on1, y1)) {
    const expected = await ask(reference, reference.keys.read, 'funnel', body);
    t.equal(expected.status, 200, `reference funnel, ${shape}`);
    counts.add(JSON.stringify(expected.result));
    for (const [name, node] of [['node 0', a], ['node 1', b]] as const) {
      const got = await ask(node, node.keys.read, 'funnel', body);
      t.equal(got.status, 200, `${name} funnel, ${shape}: ${JSON.stringify(got.body).slice(0, 300)}`);
      t.same(funnelAnswer(got.body), funnelAnswer(expected.body), `${name}: funnel across both nodes, ${shape}`);
    }
  }
  t.ok(counts.size >= 5, `the funnels count different things (${[...counts].join(' ')})`);

  // The internal endpoint wants the secret.
  const internal = await client(a.url).post('/internal/cluster/query', { key: 'wrong-secret-wrong-secret', body: {} });
  t.equal(internal.status, 401);
  // A funnel share naming a step whose collection is not in the partitions asked for is a 400, not an empty set.
  const share = { project: a.projectId, analysis: 'funnel', params: funnelsAcross(on0, y0, on1, y1)[0][1], nowMs: Date.now(), mode: 'funnel' };
  const wrong = await client(a.url).post('/internal/cluster/query', { key: SECRET, body: { ...share, partitions: [partitionOf(on0)], steps: [1] } });
  t.equal(wrong.status, 400, JSON.stringify(wrong.body));
  t.match(wrong.body, { error_code: 'InvalidQueryError', message: /^Funnel steps 1 do not read partitions/ });
  const noSteps = await client(a.url).post('/internal/cluster/query', { key: SECRET, body: { ...share, partitions: [partitionOf(on0)] } });
  t.equal(noSteps.status, 400, 'a funnel share without steps');
  const right = await client(a.url).post('/internal/cluster/query', { key: SECRET, body: { ...share, partitions: [partitionOf(on0)], steps: [0] } });
  t.equal(right.status, 200, 'the steps it stores');
  t.equal(right.headers.get('content-type'), 'application/octet-stream');

  // Node 1 down: its collections are unavailable from node 0 (503 naming the partition), node 0's still answer.
  t.equal(await b.stop(), 0);
  const down = await ask(a, a.keys.read, 'sum', { event_collection: on1, timeframe: TIMEFRAME, target_property: 'price' });
  t.equal(down.status, 503);
  t.equal(down.body.error_code, 'ServiceUnavailableError');
  t.match(down.body.message, new RegExp(`^Partition ${partitionOf(on1)} of tally\\.events is unavailable: .*node 1 \\(http://127\\.0\\.0\\.1:${ports[1]}\\) did not answer`));
  const up = await ask(a, a.keys.read, 'count', { event_collection: on0, timeframe: TIMEFRAME });
  t.equal(up.status, 200);
  t.equal(up.result, PER_COLLECTION);
  const funnelDown = await ask(a, a.keys.read, 'funnel', funnelsAcross(on0, y0, on1, y1)[0][1]);
  t.equal(funnelDown.status, 503, 'a funnel with a step on node 1');
  t.equal(funnelDown.body.error_code, 'ServiceUnavailableError');
  t.match(funnelDown.body.message, new RegExp(`^Partition ${partitionOf(on1)} of tally\\.events is unavailable: .*node 1 .*did not answer`));
});
