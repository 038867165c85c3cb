/**
 * A Kafka listener: a TCP (or TLS) server whose connections share one BrokerContext: engine, role,
 * advertised address, group coordinator and the Fetch long-poll waiters fed by engine.onAppend.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { TallyEngine } from '../../../engine/index.js';
import { Connection } from './connection.js';
import type { BrokerContext, ClusterView, ClusterWrite, ListenerRole } from './context.js';
import { FetchWaiters } from './fetch-waiters.js';
import { GroupCoordinator } from './group-coordinator.js';
import { ProducerSequences } from './producer-sequences.js';

export interface KafkaListenerOptions {
  engine: TallyEngine;
  host: string;
  port: number;
  role: ListenerRole;
  /** Host put in Metadata and FindCoordinator; must match the TLS certificate. */
  advertisedHost?: string;
  /** Port put in Metadata and FindCoordinator when it differs from the bound one (NAT, proxy). */
  advertisedPort?: number;
  tls?: { cert: Buffer; key: Buffer };
  log?: (msg: string) => void;
  /** Delay before an empty group's first generation (tests shorten it). */
  groupInitialDelayMs?: number;
  /**
   * The data dir: the inbound listener keeps idempotent producers' state there, so their retries
   * are recognised across a restart. Without it that state is in memory only.
   */
  stateDir?: string;
  /** Cluster mode with --cluster-nodes (outbound): every node is a broker, each serving what it stores. */
  cluster?: ClusterView;
  /** Cluster mode (inbound): produces go through the cluster's write path to the events topic. */
  clusterWrite?: ClusterWrite;
}

export interface KafkaListener {
  readonly port: number;
  close(): Promise<void>;
}

export async function startKafkaListener(opts: KafkaListenerOptions): Promise<KafkaListener> {
  const log = opts.log ?? (() => {});
  // Only the inbound listener takes produce: it alone keeps the producer state in the data dir,
  // recovering from the engine's WAL the batches a crash kept out of its file.
  const durable = opts.role === 'in' && opts.stateDir !== undefined;
  const sequences = durable
    ? new ProducerSequences(opts.stateDir, { replayed: opts.engine.events.replayedTags() ?? [] })
    : new ProducerSequences();
  // Each idempotent batch is recorded as its WAL record is applied, and the state is fsynced
  // before a flush deletes the WAL files: the batch is always in one of them.
  const unhook = durable
    ? [
      opts.engine.events.onTagged((projectId, tag, firstOffset) => sequences.recordTag(projectId, tag, firstOffset)),
      opts.engine.events.beforeWalRemove(() => sequences.persist()),
    ]
    : [];
  const ctx: BrokerContext = {
    engine: opts.engine,
    role: opts.role,
    nodeId: opts.cluster?.self ?? 1,
    advertisedHost: opts.advertisedHost ?? defaultAdvertisedHost(opts.host),
    advertisedPort: opts.port,
    groups: new GroupCoordinator({ initialDelayMs: opts.groupInitialDelayMs, log }),
    waiters: new FetchWaiters(),
    log,
    now: Date.now,
    sequences,
    cluster: opts.cluster,
    clusterWrite: opts.clusterWrite,
  };
  const connections = new Set<Connection>();
  const accept = (socket: net.Socket): void => {
    const connection = new Connection(ctx, socket);
    connections.add(connection);
    socket.on('close', () => connections.delete(connection));
  };
  const server = opts.tls
    ? tls.createServer({ cert: opts.tls.cert, key: opts.tls.key }, accept)
    : net.createServer(accept);
  if (opts.tls) {
    server.on('tlsClientError', (error) => log(`kafka ${opts.role}: TLS: ${error.message}`));
  }
  const unsubscribe = opts.engine.events.onAppend((projectId, collection) => {
    ctx.waiters.notify(projectId, collection);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  ctx.advertisedPort = opts.advertisedPort ?? port;
  log(`kafka ${opts.role}: listening on ${opts.host}:${port}${opts.tls ? ' (TLS)' : ''}`);
  return {
    port,
    async close() {
      unsubscribe();
      ctx.groups.close();
      ctx.waiters.wakeAll();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of connections) connection.destroy();
      await closed;
      for (const undo of unhook) undo?.();
      await ctx.sequences.persist().catch(() => {});
      ctx.sequences.close();
    },
  };
}

function defaultAdvertisedHost(host: string): string {
  return host === '0.0.0.0' || host === '::' || host === '' ? 'localhost' : host;
}
