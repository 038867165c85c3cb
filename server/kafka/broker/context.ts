/**
 * What the handlers of one listener share (BrokerContext) and what one connection knows about its
 * client (Session). Handlers read both and make engine calls; they keep no state of their own.
 */
import type { AppendResult, EventToWrite, KeyKind, TallyEngine, WriteContext } from '../../../engine/index.js';
import type { FetchWaiters } from './fetch-waiters.js';
import type { GroupCoordinator } from './group-coordinator.js';
import type { ProducerSequences } from './producer-sequences.js';

export type ListenerRole = 'in' | 'out';

export interface BrokerContext {
  readonly engine: TallyEngine;
  readonly role: ListenerRole;
  /** Node id, host and port put in Metadata and FindCoordinator. */
  readonly nodeId: number;
  readonly advertisedHost: string;
  advertisedPort: number;
  readonly groups: GroupCoordinator;
  readonly waiters: FetchWaiters;
  readonly log: (msg: string) => void;
  readonly now: () => number;
  /** Idempotent producers' batches and the producer ids handed out (durable on inbound). */
  readonly sequences: ProducerSequences;
  /** In cluster mode with --cluster-nodes (outbound only): the nodes and who stores what. */
  readonly cluster?: ClusterView | undefined;
  /** In cluster mode (inbound only): produces go to the events topic, not to the engine's append. */
  readonly clusterWrite?: ClusterWrite | undefined;
}

/**
 * The cluster write path as the inbound listener uses it (docs/cluster.md "Writes"): a produce's
 * events are checked, stamped and produced to the real events topic; `write` resolves once Kafka
 * acknowledged them (rejects with a 503 ApiError when it cannot within the bound).
 */
export interface ClusterWrite {
  /** This node's id: it goes into the uniqueness tokens of idempotent batches. */
  readonly nodeId: number;
  write(projectId: string, events: readonly EventToWrite[], ctx: WriteContext, options: { atomic: true }): Promise<AppendResult[]>;
}

/** A node of the cluster as a broker: its id and its outbound listener's address. */
export interface ClusterBroker {
  readonly nodeId: number;
  readonly host: string;
  /** Absent for this node when --cluster-nodes gave no port: the listener's own. */
  readonly port?: number | undefined;
}

/**
 * The cluster as the outbound listener shows it to Kafka clients (docs/cluster.md "The outbound
 * stream"): every node is a broker; a collection's topic is led by the first node that stores it.
 */
export interface ClusterView {
  /** This node's id (its broker id). */
  readonly self: number;
  /** Every node, sorted by id. */
  readonly brokers: readonly ClusterBroker[];
  /** The nodes that store a collection's log, the leader first. */
  ownersOf(projectId: string, collection: string): readonly number[];
  /** The node that coordinates a consumer group (and keeps its offsets). */
  coordinatorOf(projectId: string, groupId: string): number;
}

export interface Session {
  readonly remoteAddress: string;
  clientId: string | null;
  /** Set by SaslHandshake: 0 means a bare token frame follows, 1 means SaslAuthenticate. */
  handshakeVersion: number | null;
  projectId: string | null;
  keyKind: KeyKind | null;
  /** Set when an access key logged in: merged into every event this connection produces. */
  autofill?: Readonly<Record<string, unknown>> | undefined;
  /** Set when the connection must be closed after the current response is written. */
  closeAfterResponse: boolean;
  closed: boolean;
}

/** The keys a listener accepts: write or master on inbound, read or master on outbound. */
export function keyAllowed(role: ListenerRole, kind: KeyKind): boolean {
  return kind === 'master' || (role === 'in' ? kind === 'write' : kind === 'read');
}
