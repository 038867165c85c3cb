/**
 * The cluster as the outbound Kafka listener shows it (docs/cluster.md "The outbound stream"):
 * every node of --cluster-nodes is a broker (broker id = node id) at its outbound address, a
 * collection's topic is led by the first node that stores the collection's partition of the events
 * topic (its other owners are the replicas), and a consumer group is coordinated by the first owner
 * of the partition its key `<project>/<group>` would go to, so every node names the same one.
 */
import type { ClusterBroker, ClusterView } from '../kafka/broker/context.js';
import { Assignment, type Member } from './assignment.js';
import { messageKey } from './consumer.js';

/** A node's outbound port when --cluster-nodes gives none (--kafka-out-port's default). */
const OUTBOUND_PORT = 9093;

export interface OutboundMember extends Member {
  /** HOST:PORT of its outbound listener, when --cluster-nodes gave it (`ID=URL@HOST:PORT`). */
  readonly kafka?: string | undefined;
}

export interface OutboundViewOptions {
  /** Every node, sorted by id. */
  readonly nodes: readonly OutboundMember[];
  readonly self: number;
  readonly replicas: number;
  /** The events topic and its partition count (as read from Kafka). */
  readonly topic: string;
  readonly partitions: number;
}

/** `host:port` or `[v6]:port` split; the brackets dropped from the host. */
function splitHostPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(colon + 1)) };
}

/**
 * A node's outbound address: the one --cluster-nodes gave; else its URL's host and port 9093, but
 * for this node its listener's own port (its entry's `port` left out).
 */
function brokerOf(node: OutboundMember, self: number): ClusterBroker {
  if (node.kafka !== undefined) return { nodeId: node.id, ...splitHostPort(node.kafka) };
  const { hostname } = new URL(node.url);
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  return node.id === self ? { nodeId: node.id, host } : { nodeId: node.id, host, port: OUTBOUND_PORT };
}

export function outboundView(options: OutboundViewOptions): ClusterView {
  const assignment = new Assignment(options.nodes, options.replicas, options.partitions, options.topic);
  const ownersOfKey = (key: string) => assignment.ownersOf(assignment.partitionOf(key)).map((m) => m.id);
  return {
    self: options.self,
    brokers: options.nodes.map((node) => brokerOf(node, options.self)),
    ownersOf: (projectId, collection) => ownersOfKey(messageKey(projectId, collection)),
    coordinatorOf: (projectId, groupId) => ownersOfKey(messageKey(projectId, groupId))[0]!,
  };
}
