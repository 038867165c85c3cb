/**
 * ListOffsets on the outbound listener: -2 = the log start, -1 = the end (the high watermark, which
 * is also the last stable offset), else the first offset with svc.created_at ≥ the timestamp
 * (offset -1 when there is none, as Kafka answers). In a cluster, a collection this node does not
 * store answers NOT_LEADER_OR_FOLLOWER.
 */
import { KafkaError } from '../../protocol/errors.js';
import type { Struct } from '../../protocol/schema.js';
import type { BrokerContext, Session } from '../context.js';
import { storedElsewhere, topicNameError } from './metadata.js';
import { logBoundsOf } from './produce.js';
import type { Handler } from './handler.js';

interface ListPartition { partition_index: number; timestamp: number }

export const handleListOffsets: Handler = async (ctx, session, request) => {
  const topics = request.body.topics as { name: string; partitions: ListPartition[] }[];
  return {
    throttle_time_ms: 0,
    topics: topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => listOffset(ctx, session, t.name, p)),
    })),
  };
};

function listOffset(ctx: BrokerContext, session: Session, topic: string, p: ListPartition): Struct {
  const answer = (error_code: number, offset = -1, timestamp = -1) => ({
    partition_index: p.partition_index, error_code, timestamp, offset,
    old_style_offsets: offset >= 0 ? [offset] : [], leader_epoch: 0,
  });
  if (ctx.role !== 'out') return answer(KafkaError.TOPIC_AUTHORIZATION_FAILED);
  if (topicNameError(topic) !== KafkaError.NONE) return answer(KafkaError.INVALID_TOPIC_EXCEPTION);
  if (p.partition_index !== 0) return answer(KafkaError.UNKNOWN_TOPIC_OR_PARTITION);
  if (storedElsewhere(ctx, session, topic)) return answer(KafkaError.NOT_LEADER_OR_FOLLOWER);
  const projectId = session.projectId!;
  const { start, end } = logBoundsOf(ctx, projectId, topic);
  if (p.timestamp === -2) return answer(KafkaError.NONE, start);
  if (p.timestamp === -1) return answer(KafkaError.NONE, end);
  const offset = end === start ? end : ctx.engine.log.offsetForTime(projectId, topic, p.timestamp);
  if (offset >= end) return answer(KafkaError.NONE, -1, -1);
  const [record] = ctx.engine.log.read(projectId, topic, offset, 1, 1);
  return answer(KafkaError.NONE, record?.offset ?? offset, record?.createdAtMs ?? -1);
}
