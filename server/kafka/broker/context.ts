/**
 * What the handlers of one listener share (BrokerContext) and what one connection knows about its
 * client (Session). Handlers read both and make engine calls; they keep no state of their own.
 */
import type { KeyKind, TallyEngine } from '../../../engine/index.js';
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
