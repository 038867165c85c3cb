/**
 * OffsetCommit and OffsetFetch: committed offsets are validated against the group's state by the
 * coordinator and persisted per project and group through the engine, so they survive a restart.
 * In a cluster they are kept by the group's coordinator only (another node answers NOT_COORDINATOR).
 */
import type { CommittedOffset } from '../../../../engine/index.js';
import { KafkaError } from '../../protocol/errors.js';
import { OFFSET_METADATA_BYTES_MAX } from '../../../common/limits.js';
import { notCoordinator } from './find-coordinator.js';
import type { Handler } from './handler.js';

interface CommitPartition {
  partition_index: number;
  committed_offset: number;
  committed_metadata: string | null;
}
interface TopicPartitions { name: string; partition_indexes: number[] }
interface CommitTopic { name: string; partitions: CommitPartition[] }

export const handleOffsetCommit: Handler = async (ctx, session, request) => {
  const b = request.body as {
    group_id: string; generation_id?: number; member_id?: string; topics: CommitTopic[];
  };
  const answer = (code: (p: CommitPartition) => number) => ({
    throttle_time_ms: 0,
    topics: b.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partition_index: p.partition_index, error_code: code(p),
      })),
    })),
  });
  if (ctx.role !== 'out') return answer(() => KafkaError.GROUP_AUTHORIZATION_FAILED);
  if (b.group_id === '') return answer(() => KafkaError.INVALID_GROUP_ID);
  if (notCoordinator(ctx, session, b.group_id)) return answer(() => KafkaError.NOT_COORDINATOR);
  const projectId = session.projectId!;
  const state = ctx.groups.validateCommit(
    projectId, b.group_id, b.generation_id ?? -1, b.member_id ?? '');
  if (state !== KafkaError.NONE) return answer(() => state);
  const tooLarge = (p: CommitPartition) =>
    Buffer.byteLength(p.committed_metadata ?? '') > OFFSET_METADATA_BYTES_MAX;
  const offsets: CommittedOffset[] = [];
  for (const t of b.topics) {
    for (const p of t.partitions) {
      if (tooLarge(p)) continue;
      offsets.push({
        topic: t.name, partition: p.partition_index, offset: p.committed_offset,
        metadata: p.committed_metadata,
      });
    }
  }
  await ctx.engine.groups.commit(projectId, b.group_id, offsets);
  return answer((p) => (tooLarge(p) ? KafkaError.OFFSET_METADATA_TOO_LARGE : KafkaError.NONE));
};

export const handleOffsetFetch: Handler = async (ctx, session, request) => {
  const b = request.body as { group_id: string; topics: TopicPartitions[] | null };
  if (ctx.role !== 'out') {
    return { throttle_time_ms: 0, topics: [], error_code: KafkaError.GROUP_AUTHORIZATION_FAILED };
  }
  if (notCoordinator(ctx, session, b.group_id)) {
    // v0-1 carry the error per partition only.
    const topics = (b.topics ?? []).map((t) => ({
      name: t.name,
      partitions: t.partition_indexes.map((partition) => ({
        partition_index: partition, committed_offset: -1, committed_leader_epoch: -1, metadata: '',
        error_code: KafkaError.NOT_COORDINATOR,
      })),
    }));
    return { throttle_time_ms: 0, topics, error_code: KafkaError.NOT_COORDINATOR };
  }
  const committed = ctx.engine.groups.fetch(session.projectId!, b.group_id);
  const find = (topic: string, partition: number) =>
    committed.find((c) => c.topic === topic && c.partition === partition);
  const requested = b.topics ?? groupTopics(committed);
  const topics = requested.map((t) => ({
    name: t.name,
    partitions: t.partition_indexes.map((partition) => {
      const c = find(t.name, partition);
      return {
        partition_index: partition, committed_offset: c?.offset ?? -1, committed_leader_epoch: -1,
        metadata: c ? c.metadata ?? '' : '', error_code: KafkaError.NONE,
      };
    }),
  }));
  return { throttle_time_ms: 0, topics, error_code: KafkaError.NONE };
};

function groupTopics(committed: readonly CommittedOffset[]): TopicPartitions[] {
  const byTopic = new Map<string, number[]>();
  for (const c of committed) {
    const list = byTopic.get(c.topic) ?? [];
    list.push(c.partition);
    byTopic.set(c.topic, list);
  }
  return [...byTopic].map(([name, partition_indexes]) => ({ name, partition_indexes }));
}
