/**
 * Fetch on the outbound listener: topic = a collection's log, read through engine.log.read and sent
 * as one uncompressed RecordBatch per partition (key = svc.id, value = the enriched event JSON,
 * timestamp = svc.created_at; offset gaps are fine). With nothing to return the request parks
 * until an append to one of its collections or max_wait_ms, then reads again. In a cluster, a
 * collection this node does not store answers NOT_LEADER_OR_FOLLOWER: the client asks Metadata again
 * and goes to its leader.
 */
import type { LogRecord } from '../../../../engine/index.js';
import { KafkaError } from '../../protocol/errors.js';
import { encodeRecordBatch } from '../../protocol/record-batch.js';
import type { Struct } from '../../protocol/schema.js';
import type { BrokerContext, Session } from '../context.js';
import { FETCH_PARTITION_BYTES_MAX, FETCH_RECORDS_MAX, FETCH_WAIT_MS_MAX } from '../../../common/limits.js';
import { storedElsewhere, topicNameError } from './metadata.js';
import { logBoundsOf } from './produce.js';
import type { Handler } from './handler.js';

interface FetchPartition { partition: number; fetch_offset: number; partition_max_bytes: number }
interface FetchTopic { topic: string; partitions: FetchPartition[] }
interface FetchBody {
  max_wait_ms: number; min_bytes: number; max_bytes?: number; topics: FetchTopic[];
}

const EMPTY = Buffer.alloc(0);

export const handleFetch: Handler = async (ctx, session, request, signal) => {
  const body = request.body as FetchBody;
  const minBytes = Math.max(body.min_bytes, 1);
  const deadline = ctx.now() + Math.min(Math.max(body.max_wait_ms, 0), FETCH_WAIT_MS_MAX);
  const watched = body.topics.map((t) => t.topic);
  // Bounded by the deadline: each turn either returns or waits until an append or the deadline.
  for (;;) {
    const waitMs = deadline - ctx.now();
    const topics = readAll(ctx, session, body.topics, body.max_bytes ?? 0x7fffffff);
    const done = topics.bytes >= minBytes || topics.failed;
    if (done || waitMs <= 0 || signal.aborted) {
      const { responses } = topics;
      return { throttle_time_ms: 0, error_code: KafkaError.NONE, session_id: 0, responses };
    }
    await ctx.waiters.wait(session.projectId!, watched, waitMs, signal);
  }
};

function readAll(ctx: BrokerContext, session: Session, topics: FetchTopic[], maxBytes: number):
  { responses: Struct[]; bytes: number; failed: boolean } {
  let bytes = 0;
  let failed = false;
  const responses = topics.map((t) => ({
    topic: t.topic,
    partitions: t.partitions.map((p) => {
      // KIP-74: the first non-empty partition is served even beyond max_bytes.
      const max = p.partition_max_bytes;
      const budget = bytes === 0 ? max : Math.min(max, maxBytes - bytes);
      const out = readPartition(ctx, session, t.topic, p, budget);
      bytes += out.records.length;
      if (out.error_code !== KafkaError.NONE) failed = true;
      return out;
    }),
  }));
  return { responses, bytes, failed };
}

function readPartition(
  ctx: BrokerContext, session: Session, topic: string, p: FetchPartition, budget: number,
): Struct & { records: Buffer; error_code: number } {
  const answer = (error_code: number, start = -1, end = -1, records: Buffer = EMPTY) => ({
    partition_index: p.partition, error_code, high_watermark: end, last_stable_offset: end,
    log_start_offset: start, aborted_transactions: null, preferred_read_replica: -1, records,
  });
  if (ctx.role !== 'out') return answer(KafkaError.TOPIC_AUTHORIZATION_FAILED);
  if (topicNameError(topic) !== KafkaError.NONE) return answer(KafkaError.INVALID_TOPIC_EXCEPTION);
  if (p.partition !== 0) return answer(KafkaError.UNKNOWN_TOPIC_OR_PARTITION);
  if (storedElsewhere(ctx, session, topic)) return answer(KafkaError.NOT_LEADER_OR_FOLLOWER);
  const { start, end } = logBoundsOf(ctx, session.projectId!, topic);
  if (p.fetch_offset > end || p.fetch_offset < start) {
    return answer(KafkaError.OFFSET_OUT_OF_RANGE, start, end);
  }
  if (p.fetch_offset === end || budget <= 0) return answer(KafkaError.NONE, start, end);
  const maxBytes = Math.max(1, Math.min(budget, FETCH_PARTITION_BYTES_MAX));
  const log = ctx.engine.log.read(
    session.projectId!, topic, p.fetch_offset, FETCH_RECORDS_MAX, maxBytes);
  return answer(KafkaError.NONE, start, end, log.length === 0 ? EMPTY : batchOf(log));
}

/** One RecordBatch of log records; offsets may have gaps (deleted events). */
function batchOf(log: readonly LogRecord[]): Buffer {
  const base = log[0]!;
  let maxTimestamp = base.createdAtMs;
  const records = log.map((r) => {
    if (r.createdAtMs > maxTimestamp) maxTimestamp = r.createdAtMs;
    return {
      offsetDelta: r.offset - base.offset,
      timestampDelta: r.createdAtMs - base.createdAtMs,
      key: Buffer.from(r.id, 'utf8'),
      value: Buffer.from(r.json, 'utf8'),
    };
  });
  return encodeRecordBatch({
    baseOffset: base.offset, baseTimestamp: base.createdAtMs, maxTimestamp, records,
  });
}
