/**
 * Produce on the inbound listener: each record value is one event as JSON, topic = collection.
 * A partition's records are checked first (framing, CRC, compression, JSON objects); any bad record
 * rejects that partition's whole data with 87 INVALID_RECORD and record_errors, nothing stored.
 * Good partitions go to engine.events.append in one call; the answer waits for it (durable). In
 * cluster mode they go to the events topic instead (produce-cluster.ts), and the answer waits for
 * Kafka's acknowledgement; a Kafka that cannot take them answers REQUEST_TIMED_OUT (7, retriable).
 */
import { ApiError, applyAutofill, isApiError, parseJson } from '../../../../engine/index.js';
import { BATCH_RECORDS_BYTES_MAX } from '../../../common/limits.js';
import type { EventToWrite } from '../../../../engine/index.js';
import { DecompressError, UnsupportedCompressionError } from '../../protocol/compression.js';
import { KafkaError, kafkaErrorFor } from '../../protocol/errors.js';
import { KafkaDecodeError } from '../../protocol/reader.js';
import { CorruptBatchError, decodeRecordBatch, splitBatches } from '../../protocol/record-batch.js';
import type { BrokerContext, Session } from '../context.js';
import { ProducerSequences } from '../producer-sequences.js';
import { limits } from '../../../../engine/index.js';
import { countWrites } from '../../../common/write-counts.js';
import { topicNameError } from './metadata.js';
import type { Handler } from './handler.js';
import { produceToCluster, type BatchIdentity } from './produce-cluster.js';

interface RecordError { batch_index: number; batch_index_error_message: string | null }

interface PartitionResult {
  error_code: number;
  base_offset: number;
  record_errors: RecordError[];
  error_message: string | null;
}

interface TopicData { name: string; partition_data: { index: number; records: Buffer | null }[] }

interface Accepted {
  topic: string; result: PartitionResult; events: EventToWrite[]; producer: BatchIdentity;
}

export const handleProduce: Handler = async (ctx, session, request) => {
  const { acks, topic_data } = request.body as { acks: number; topic_data: TopicData[] };
  const version = request.header.api_version;
  const accepted: Accepted[] = [];
  let idempotent = false;
  const results = topic_data.map((topic) => topic.partition_data.map((partition) => {
    const rejection = checkPartition(ctx, version, acks, topic.name, partition.index);
    if (rejection) return rejection;
    const { result, events, producer } = parsePartition(topic.name, partition.records);
    if (result.error_code !== KafkaError.NONE) return result;
    if (producer.producerId >= 0) idempotent = true;
    const duplicate = ctx.sequences.duplicateOf(session.projectId!, topic.name, producer.producerId,
      producer.epoch, producer.baseSequence, events.length);
    if (duplicate !== undefined) result.base_offset = duplicate;
    else accepted.push({ topic: topic.name, result, events, producer });
    return result;
  }));
  await appendAccepted(ctx, session, accepted);
  if (idempotent) await persistSequences(ctx, results.flat());
  if (acks === 0) return null;
  const responses = topic_data.map((topic, t) => ({
    name: topic.name,
    partition_responses: topic.partition_data.map((partition, p) => ({
      index: partition.index, log_append_time_ms: -1, log_start_offset: 0, ...results[t]![p]!,
    })),
  }));
  return { responses, throttle_time_ms: 0 };
};

/**
 * Idempotent batches: their sequence state is made durable before the answer (a retry after a
 * crash must be recognised, producer-sequences.ts). Also when a batch was answered as a duplicate,
 * since the original's state may still be on its way to disk. If it cannot be written, the
 * batches are stored but the answer is an error: the producer retries and is recognised while the
 * server runs.
 */
async function persistSequences(ctx: BrokerContext, results: PartitionResult[]): Promise<void> {
  try {
    await ctx.sequences.persist();
  } catch (error) {
    ctx.log(`kafka produce: producer state not written: ${(error as Error).stack}`);
    for (const result of results) {
      if (result.error_code !== KafkaError.NONE) continue;
      result.error_code = KafkaError.UNKNOWN_SERVER_ERROR;
      result.error_message = 'Internal error while storing the producer state.';
    }
  }
}

function checkPartition(
  ctx: BrokerContext, version: number, acks: number, topic: string, index: number,
): PartitionResult | null {
  const fail = (error_code: number, message: string): PartitionResult =>
    ({ error_code, base_offset: -1, record_errors: [], error_message: message });
  if (version < 3) {
    return fail(KafkaError.UNSUPPORTED_VERSION, 'Produce v3+ (RecordBatch v2) only.');
  }
  if (ctx.role !== 'in') {
    return fail(KafkaError.TOPIC_AUTHORIZATION_FAILED, 'Produce to the inbound listener.');
  }
  if (acks !== 0 && acks !== 1 && acks !== -1) {
    return fail(KafkaError.INVALID_REQUIRED_ACKS, 'acks must be -1, 0 or 1.');
  }
  if (topicNameError(topic) !== KafkaError.NONE) {
    return fail(KafkaError.INVALID_TOPIC_EXCEPTION, `Illegal topic name "${topic}".`);
  }
  if (index !== 0) return fail(KafkaError.UNKNOWN_TOPIC_OR_PARTITION, 'Topics have one partition.');
  return null;
}

/** Decodes and checks every record of one partition's data, keeping the parsed events. */
function parsePartition(topic: string, records: Buffer | null):
  { result: PartitionResult; events: EventToWrite[]; producer: BatchIdentity } {
  const producer: BatchIdentity = { producerId: -1, epoch: -1, baseSequence: -1 };
  const result: PartitionResult = {
    error_code: KafkaError.NONE, base_offset: -1, record_errors: [], error_message: null,
  };
  const events: EventToWrite[] = [];
  try {
    for (const raw of splitBatches(records ?? Buffer.alloc(0))) {
      const batch = decodeRecordBatch(raw, BATCH_RECORDS_BYTES_MAX);
      if (events.length === 0) {
        producer.producerId = batch.producerId;
        producer.epoch = batch.producerEpoch;
        producer.baseSequence = batch.baseSequence;
      }
      for (const record of batch.records) {
        const parsed = parseValue(record.value);
        if (typeof parsed === 'string') {
          const batch_index = events.length;
          result.record_errors.push({ batch_index, batch_index_error_message: parsed });
        }
        events.push({ collection: topic, event: parsed });
      }
    }
  } catch (error) {
    result.error_code = batchErrorCode(error);
    result.error_message = (error as Error).message;
    return { result, events: [], producer };
  }
  if (result.record_errors.length > 0) {
    result.error_code = KafkaError.INVALID_RECORD;
    result.error_message = `${result.record_errors.length} invalid record(s) in "${topic}"; ` +
      'the batch was rejected and nothing of it stored.';
  }
  return { result, events, producer };
}

function batchErrorCode(error: unknown): number {
  if (error instanceof UnsupportedCompressionError) return KafkaError.UNSUPPORTED_COMPRESSION_TYPE;
  if (error instanceof CorruptBatchError || error instanceof DecompressError ||
      error instanceof KafkaDecodeError) return KafkaError.CORRUPT_MESSAGE;
  throw error;
}

/** The parsed event object, or a string saying why the value is not one. */
function parseValue(value: Buffer | null): object | string {
  if (value === null) return 'The record value is null; it must be one event as a JSON object.';
  let parsed: unknown;
  try {
    parsed = parseJson(value.toString('utf8'), 'The record value');
  } catch (error) {
    return (error as Error).message; // "The record value is not valid JSON: ..."
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return 'The record value must be one event as a JSON object.';
  }
  return parsed;
}

/**
 * Appends each accepted partition's records in one atomic engine call: a record the engine
 * refuses fails its whole batch (87 INVALID_RECORD with record_errors) and nothing of it is stored.
 * The calls of one request run together so their fsyncs share a group commit. A partition's base
 * offset is the log offset the engine gave its first record.
 */
async function appendAccepted(
  ctx: BrokerContext, session: Session, accepted: Accepted[],
): Promise<void> {
  const projectId = session.projectId!;
  const ctxWrite = { ip: session.remoteAddress, userAgent: session.clientId ?? '' };
  // An access key's autofill (docs/api.md §8) goes into every event, as on the HTTP write paths.
  if (session.autofill !== undefined) {
    for (const item of accepted) for (const event of item.events) applyAutofill(event.event, session.autofill);
  }
  await Promise.all(accepted.map((item) => appendPartition(ctx, projectId, ctxWrite, item)));
  for (const item of accepted) {
    if (item.result.error_code !== KafkaError.NONE) continue;
    const { producerId, epoch, baseSequence } = item.producer;
    ctx.sequences.record(projectId, item.topic, producerId, epoch, baseSequence,
      item.events.length, item.result.base_offset);
  }
}

async function appendPartition(
  ctx: BrokerContext, projectId: string, ctxWrite: { ip: string; userAgent: string }, item: Accepted,
): Promise<void> {
  const owner = [{ result: item.result, first: 0 }];
  const { producerId, epoch, baseSequence } = item.producer;
  // An idempotent batch's producer fields go in the engine's WAL record with its events: a crash
  // before the producer state file has them still leaves them to be recovered (producer-sequences.ts).
  const options = producerId >= 0
    ? { atomic: true, tag: ProducerSequences.tag(item.topic, producerId, epoch, baseSequence, item.events.length) }
    : { atomic: true };
  let results;
  try {
    // Cluster mode: to the events topic, answered once Kafka acknowledged (produce-cluster.ts).
    results = ctx.clusterWrite !== undefined
      ? await produceToCluster(ctx.clusterWrite, projectId, ctxWrite, item.producer, item.events)
      : await ctx.engine.events.append(projectId, item.events, ctxWrite, options);
  } catch (error) {
    failOwners(owner, 0, item.events.length, error, ctx);
    return;
  }
  const refused = results.filter((r) => !r.ok).length;
  // Atomic: one refused record refuses its whole batch.
  countWrites('kafka', refused === 0 ? results.length : 0, refused === 0 ? 0 : results.length);
  results.forEach((r, i) => {
    if (r.ok) return;
    item.result.error_code = kafkaErrorFor(r.error);
    item.result.record_errors.push({ batch_index: i, batch_index_error_message: r.error.message });
    item.result.error_message = r.error.message;
  });
  if (item.result.error_code !== KafkaError.NONE) return;
  const stored = results.find((r) => r.ok && r.offset >= 0);
  // In cluster mode the store's offset is not known when Kafka acknowledges: -1, "unknown".
  item.result.base_offset = stored?.ok ? stored.offset : ctx.clusterWrite !== undefined ? -1 : logEnd(ctx, projectId, item.topic);
}

function failOwners(
  owners: { result: PartitionResult; first: number }[], from: number, count: number,
  error: unknown, ctx: BrokerContext,
): void {
  if (!isApiError(error)) ctx.log(`kafka produce: append failed: ${(error as Error).stack}`);
  const code = isApiError(error) ? kafkaErrorFor(error) : KafkaError.UNKNOWN_SERVER_ERROR;
  const message = isApiError(error) ? error.message : 'Internal error while storing events.';
  for (let i = from; i < from + count; i++) {
    const owner = ownerOf(owners, i);
    owner.result.error_code = code;
    owner.result.error_message = message;
  }
}

function ownerOf(owners: { result: PartitionResult; first: number }[], index: number) {
  let found = owners[0]!;
  for (const owner of owners) if (owner.first <= index) found = owner;
  return found;
}

/** The end offset of a collection's log; a collection not yet created starts at 0. */
function logEnd(ctx: BrokerContext, projectId: string, collection: string): number {
  return logBoundsOf(ctx, projectId, collection).end;
}

export function logBoundsOf(
  ctx: BrokerContext, projectId: string, collection: string,
): { start: number; end: number } {
  try {
    return ctx.engine.log.bounds(projectId, collection);
  } catch (error) {
    if (error instanceof ApiError && error.error_code === 'ResourceNotFoundError') {
      return { start: 0, end: 0 };
    }
    throw error;
  }
}

