/**
 * Metadata: one broker (us) and, for each topic, one partition that we lead. Topics are the
 * project's collections and are auto-created on reference: any legal name answers at once.
 * A null list (or an empty one in v0) lists the project's existing collections.
 */
import { KafkaError } from '../../protocol/errors.js';
import type { Struct } from '../../protocol/schema.js';
import type { BrokerContext } from '../context.js';
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
  return [{ node_id: ctx.nodeId, host: ctx.advertisedHost, port: ctx.advertisedPort, rack: null }];
}

export const handleMetadata: Handler = async (ctx, session, request) => {
  const requested = request.body.topics as { name: string }[] | null;
  const all = requested === null || (request.header.api_version === 0 && requested.length === 0);
  const names = all
    ? ctx.engine.collections.list(session.projectId!).map((c) => c.name)
    : requested.map((t) => t.name);
  const topics = names.map((name) => {
    const error_code = topicNameError(name);
    return {
      error_code, name, is_internal: false, topic_authorized_operations: -2147483648,
      partitions: error_code !== KafkaError.NONE ? [] : [{
        error_code: KafkaError.NONE, partition_index: 0, leader_id: ctx.nodeId, leader_epoch: 0,
        replica_nodes: [ctx.nodeId], isr_nodes: [ctx.nodeId], offline_replicas: [],
      }],
    };
  });
  return {
    throttle_time_ms: 0, brokers: brokersOf(ctx), cluster_id: 'tally', controller_id: ctx.nodeId,
    topics, cluster_authorized_operations: -2147483648,
  };
};
