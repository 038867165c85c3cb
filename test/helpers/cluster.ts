/**
 * For cluster-mode tests (test/cluster/): a Tally node on a real Kafka, writers that note which
 * events were acknowledged, and the stored ids read back with an extraction.
 */
import { client } from './http.js';
import type { RealKafka } from './kafka-cluster.js';
import { startServer, type TestServer } from './server.js';

export const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };

/** The flags of a cluster node; a short flush interval so flushes (and their offset saves) happen mid-test. */
export function clusterArgs(bootstrap: readonly string[], nodeId = 1, flushIntervalMs = 500): string[] {
  return ['--cluster-brokers', bootstrap.join(','), '--node-id', String(nodeId), '--flush-interval', String(flushIntervalMs)];
}

export function startClusterNode(bootstrap: readonly string[], options: { dataDir?: string; orgKey?: string } = {}): Promise<TestServer> {
  return startServer({ ...options, args: clusterArgs(bootstrap) });
}

export interface WriteOutcome {
  /** Ids the server acknowledged (2xx with success). */
  readonly acked: string[];
  /** Ids answered 503 (not acknowledged; they may or may not be stored). */
  readonly refused: string[];
  /** Ids of requests that got no answer (the server died). */
  readonly unanswered: string[];
  /** ms of each 503 answer. */
  readonly refusalMs: number[];
}

export function emptyOutcome(): WriteOutcome {
  return { acked: [], refused: [], unanswered: [], refusalMs: [] };
}

/** The event a writer sends for `id`; with `tokens`, its svc.uniqueness_token is its id. */
function testEvent(id: string, writer: string, tokens = false): Record<string, unknown> {
  return tokens ? { id, writer, svc: { uniqueness_token: id } } : { id, writer };
}

/**
 * Writes events `${name}-${i}` to `collection` (single POSTs, or batches of `batchSize`) until
 * `until()` is true or the server stops answering; notes each id's outcome in `out`. With
 * `tokens`, each event carries its id as svc.uniqueness_token (a retry is stored once).
 */
export async function writeUntil(
  server: TestServer, collection: string, name: string, batchSize: number, until: () => boolean, out: WriteOutcome,
  options: { tokens?: boolean } = {},
): Promise<void> {
  const api = client(server.url);
  const event = (id: string) => testEvent(id, name, options.tokens);
  for (let seq = 0; !until(); seq += batchSize) {
    const ids = Array.from({ length: batchSize }, (_, index) => `${name}-${seq + index}`);
    const started = Date.now();
    let status: number;
    let body: any;
    try {
      const response = batchSize === 1
        ? await api.post(`/3.0/projects/${server.projectId}/events/${collection}`, {
          key: server.keys.write, body: event(ids[0]!),
        })
        : await api.post(`/3.0/projects/${server.projectId}/events`, {
          key: server.keys.write, body: { [collection]: ids.map(event) },
        });
      status = response.status;
      body = response.body;
    } catch {
      out.unanswered.push(...ids);
      return; // the server is gone
    }
    if (status === 201) out.acked.push(ids[0]!);
    else if (status === 200) {
      (body[collection] as { success: boolean }[]).forEach((r, index) => { if (r.success) out.acked.push(ids[index]!); });
    } else if (status === 503 && body?.error_code === 'ServiceUnavailableError') {
      out.refused.push(...ids);
      out.refusalMs.push(Date.now() - started);
    } else {
      throw new Error(`unexpected answer ${status}: ${JSON.stringify(body)}`);
    }
  }
}

/** Count of `collection` (all time), or -1 when the query fails. */
export async function countOf(server: TestServer, collection: string): Promise<number> {
  const response = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/count`, {
    key: server.keys.read, body: { event_collection: collection, timeframe: ALL_TIME },
  });
  return response.status === 200 ? response.body.result : -1;
}

/** How many times each id of `collection` is stored. */
export async function storedIds(server: TestServer, collection: string): Promise<Map<string, number>> {
  const response = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/extraction`, {
    key: server.keys.read, body: { event_collection: collection, timeframe: ALL_TIME, property_names: ['id'] },
  });
  if (response.status !== 200) {
    const id = /unique_id ([0-9a-f]+)/.exec(response.text)?.[1];
    const line = id === undefined ? '' : server.stderr().split('\n').find((l) => l.includes(id)) ?? '';
    throw new Error(`extraction: ${response.status} ${response.text.slice(0, 300)} ${line}`);
  }
  const seen = new Map<string, number>();
  for (const event of response.body.result as { id: string }[]) seen.set(event.id, (seen.get(event.id) ?? 0) + 1);
  return seen;
}

/** Resolves once the node logged that it read the events topic up to its end at start (or rejects after timeoutMs). */
export async function caughtUp(server: TestServer, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!/cluster: caught up with the events topic/.test(server.stderr())) {
    if (Date.now() > deadline) throw new Error(`not caught up in time; stderr:\n${server.stderr().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A test file's end: every server still running killed (-9) and each one's data dir removed, then the broker stopped. */
export async function stopAll(servers: readonly (TestServer | undefined)[], kafka: RealKafka | undefined): Promise<void> {
  try {
    // A node whose start failed left a hole: the brokers are stopped all the same, or the file hangs.
    for (const server of servers) {
      if (server === undefined) continue;
      if (server.child.exitCode === null && server.child.signalCode === null) await server.kill9();
      server.cleanup();
    }
  } finally {
    await kafka?.stop();
  }
}

/** Writes the events of `ids` (with tokens) through `node` until every one is acknowledged (a 503 is asked again). */
export async function settle(node: TestServer, collection: string, ids: readonly string[]): Promise<void> {
  for (let at = 0; at < ids.length;) {
    const batch = ids.slice(at, at + 100);
    const response = await client(node.url).post(`/3.0/projects/${node.projectId}/events`, {
      key: node.keys.write, body: { [collection]: batch.map((id) => testEvent(id, 'retry', true)) },
    });
    if (response.status === 200 && (response.body[collection] as { success: boolean }[]).every((r) => r.success)) at += batch.length;
    else if (response.status === 503) await new Promise((resolve) => setTimeout(resolve, 300));
    else throw new Error(`retry: ${response.status} ${response.text.slice(0, 300)}`);
  }
}
