/**
 * Metadata: one broker (us) and, for each topic, one partition that we lead. Topics are the
 * project's collections and are auto-created on reference: any legal name answers at once.
 * A null list (or an empty one in v0) lists the project's existing collections (this node's).
 * In cluster mode every node is a broker (id = node id) and a topic's partition is led by the
 * first node that stores the collection, its other owners the replicas.
 */
import { KafkaError } from '../../protocol/errors.js';
import type { Struct } from '../../protocol/schema.js';
import type { BrokerContext, Session } from '../context.js';
import { TOPIC_NAME_CHARS_MAX } from '../../../common/limits.js';
import type { Handler } from './handler.js';

const TOPIC_NAME = /^[A-Za-z0-9._-]+$/;

export function topicNameError(name: string): number {
  if (name.length === 0 || name.length > TOPIC_NAME_CHARS_MAX || !TOPIC_NAME.test(name)) {
    return KafkaError.INVALID_TOPIC_EXCEPTION;
  }
  if (name === '.' || name === '..') return KafkaError.INVALID_TOPIC_EXCEPTION;
  return KafkaError.NONE;
}

function brokersOf(ctx: BrokerContext): Struct[] {
  if (ctx.cluster === undefined) return [{ node_id: ctx.nodeId, host: ctx.advertisedHost, port: ctx.advertisedPort, rack: null }];
  return ctx.cluster.brokers.map((b) => ({ node_id: b.nodeId, host: b.host, port: b.port ?? ctx.advertisedPort, rack: null }));
}

/** The host and port clients reach node `nodeId`'s outbound listener at. */
export function brokerAddress(ctx: BrokerContext, nodeId: number): { host: string; port: number } {
  const broker = ctx.cluster?.brokers.find((b) => b.nodeId === nodeId);
  return broker === undefined
    ? { host: ctx.advertisedHost, port: ctx.advertisedPort }
    : { host: broker.host, port: broker.port ?? ctx.advertisedPort };
}

/** The nodes that store a collection's log, the leader first: this node alone outside a cluster. */
function ownersOf(ctx: BrokerContext, session: Session, topic: string): readonly number[] {
  return ctx.cluster?.ownersOf(session.projectId!, topic) ?? [ctx.nodeId];
}

/** In a cluster, true when this node does not store the collection (Fetch and ListOffsets answer 6). */
export function storedElsewhere(ctx: BrokerContext, session: Session, topic: string): boolean {
  return ctx.cluster !== undefined && !ownersOf(ctx, session, topic).includes(ctx.nodeId);
}

export const handleMetadata: Handler = async (ctx, session, request) => {
  const requested = request.body.topics as { name: string }[] | null;
  const all = requested === null || (request.header.api_version === 0 && requested.length === 0);
  const names = all
    ? ctx.engine.collections.list(session.projectId!).map((c) => c.name)
    : requested.map((t) => t.name);
  const topics = names.map((name) => {
    const error_code = topicNameError(name);
    const owners = error_code !== KafkaError.NONE ? [] : ownersOf(ctx, session, name);
    return {
      error_code, name, is_internal: false, topic_authorized_operations: -2147483648,
      partitions: error_code !== KafkaError.NONE ? [] : [{
        error_code: KafkaError.NONE, partition_index: 0, leader_id: owners[0], leader_epoch: 0,
        replica_nodes: owners, isr_nodes: owners, offline_replicas: [],
      }],
    };
  });
  return {
    throttle_time_ms: 0, brokers: brokersOf(ctx), cluster_id: 'tally', controller_id: ctx.cluster?.brokers[0]?.nodeId ?? ctx.nodeId,
    topics, cluster_authorized_operations: -2147483648,
  };
};
