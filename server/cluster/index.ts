/**
 * Cluster mode (`--cluster-brokers`): a real Apache Kafka is the write-ahead log.
 *
 * A write is checked and stamped on the node that takes it (EventService.stamp: svc fields,
 * placeholders), produced to the events topic (default `tally.events`) by an idempotent producer
 * with acks = all, and acknowledged once Kafka acknowledged it (producer.ts; 503 when Kafka cannot
 * take it within CLUSTER_WRITE_TIMEOUT_MS). Each node reads its partitions of the topic into its own store
 * (consumer.ts), keeping how far it read with the store (offsets.ts), so each acknowledged event is
 * stored exactly once across crashes, restarts and redeliveries. With `nodes` (--cluster-nodes)
 * each node stores only its partitions (assignment.ts) and queries run on a node that stores what
 * they read (queries.ts). The organization and its catalog are shared through a compacted topic
 * (default `tally.meta`, meta.ts): a change asked of any node is produced there before it is
 * applied, and every node applies every change. Deletes go through the events topic, ordered with
 * the events of their collection (deletes.ts). Each node watches its partitions' lag and the
 * other nodes (status.ts: /metrics, /health). The events topic keeps every record by default: it
 * is the source a node is rebuilt from.
 */
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import {
  ApiError, parseBatchBody, type AppendResult, type DeletePlan, type BatchAppendResult, type EventToWrite, type Logger, type TallyEngine,
  type WriteContext,
} from '../../engine/index.js';
import { Assignment, assignmentRecord, checkAssignment, type Member } from './assignment.js';
import { LogConsumer, messageKey } from './consumer.js';
import { deleteMessage, deleteUnavailable } from './deletes.js';
import { ClusterQueries } from './queries.js';
import { ConsumedOffsets } from './offsets.js';
import { EventLogProducer, type LogMessage } from './producer.js';
import { SharedCatalog } from './meta.js';
import { ClusterStatus } from './status.js';
import { notServedYet, untilServed } from './served.js';
import { CLUSTER_START_TIMEOUT_MS, CLUSTER_TOPIC_MESSAGE_BYTES_MAX, CLUSTER_WRITE_TIMEOUT_MS } from '../common/limits.js';


export interface ClusterOptions {
  readonly engine: TallyEngine;
  readonly brokers: readonly string[];
  readonly nodeId: number;
  readonly topic: string;
  /** The shared metadata topic (compacted, one partition). */
  readonly metaTopic: string;
  /** Partitions of the topic if this node creates it. */
  readonly partitions: number;
  /** The topic's retention.ms if this node creates it; -1 (the default): every record is kept. */
  readonly retentionMs?: number;
  readonly dataDir: string;
  readonly fsync: boolean;
  readonly logger: Logger;
  /** The partitions this node reads into its store; default its partitions of `nodes`, else every partition. */
  readonly owned?: readonly number[];
  /** Every node of the cluster, sorted by id (--cluster-nodes); empty or absent: this node alone. */
  readonly nodes?: readonly Member[];
  /** Nodes that store each partition (with `nodes`). */
  readonly replicas?: number;
  /** The nodes' shared secret for their internal queries (with `nodes`). */
  readonly secret?: string;
  /** With `nodes`: this node's assignment replaces the one in the metadata topic (--cluster-reassign). */
  readonly reassign?: boolean;
}

export interface ClusterNode {
  readonly topic: string;
  /** False until the node read its partitions up to where they ended when it started. */
  readonly caughtUp: boolean;
  readonly partitions: number;
  readonly replicationFactor: number;
  /**
   * Checks, stamps and produces events; resolves with a result per event once Kafka acknowledged.
   * With `atomic` (a Kafka produce batch) one refused event means none is produced.
   */
  write(projectId: string, events: readonly EventToWrite[], ctx: WriteContext, options?: { atomic?: boolean }): Promise<AppendResult[]>;
  /** A batch body (docs/api.md §4) as write() does. */
  writeBatch(projectId: string, body: Uint8Array, ctx: WriteContext): Promise<BatchAppendResult>;
  /** Produces a checked delete (engine.collections.planDelete*) to the collection's partition; resolves once Kafka acknowledged it. */
  delete(projectId: string, collection: string, plan: DeletePlan): Promise<void>;
  /** With --cluster-nodes: queries answered by the nodes that store what they read (queries.ts). */
  readonly queries: ClusterQueries | undefined;
  /** The partitions this node stores. */
  readonly owned: readonly number[];
  /** Lag per partition and the nodes' membership (/metrics, /health). */
  readonly status: ClusterStatus;
  /** Stops producing and consuming and makes the offsets durable. */
  close(): Promise<void>;
}

export class ClusterStartError extends Error {
  override name = 'ClusterStartError';
}

/** Stored after Kafka acknowledged it; the store's own log offset is not known yet. */
const PRODUCED: AppendResult = Object.freeze({ ok: true, offset: -1 });
/** Valid but not produced: another event of its atomic write was refused. */
const NOT_PRODUCED: AppendResult = Object.freeze({ ok: true, offset: -1 });

async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

type Log = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

interface TopicFacts {
  partitions: number;
  replicationFactor: number;
  created: boolean;
  /** Its retention.ms as Kafka has it (-1: forever), or null when it could not be read. */
  retentionMs: number | null;
}

interface TopicSpec {
  readonly topic: string;
  readonly partitions: number;
  /** The metadata topic: compacted, so it keeps each object's latest state. */
  readonly compact?: boolean;
  /** The events topic's retention.ms; default -1. */
  readonly retentionMs?: number;
}

/**
 * Creates a topic when missing (the events topic, or with `compact` the metadata topic); its
 * partition count, replication factor and retention. The events topic is the write-ahead log and
 * the source a node is rebuilt from (a wiped data dir, a node added), so it keeps every record by
 * default (retention.ms=-1, retention.bytes=-1); Kafka's tiered storage, not retention, is the way
 * to bound the brokers' disks.
 */
async function ensureTopic(kafka: Kafka, spec: TopicSpec): Promise<TopicFacts> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const brokers = (await admin.describeCluster()).brokers.length;
    const replicationFactor = Math.min(3, brokers);
    // kafkajs asks a broker for the new topic's leaders right after creating it, and gives up on
    // "does not host this topic-partition" from a broker that has not heard of it yet: created
    // all the same, and served() waits for it.
    const created = await admin.createTopics({
      waitForLeaders: true,
      topics: [{
        topic: spec.topic,
        numPartitions: spec.partitions,
        replicationFactor,
        configEntries: [
          ...(spec.compact ? [{ name: 'cleanup.policy', value: 'compact' }] : []),
          { name: 'max.message.bytes', value: String(CLUSTER_TOPIC_MESSAGE_BYTES_MAX) },
          // With acks = all, a write needs two copies; without it one broker left would do.
          ...(brokers >= 3 ? [{ name: 'min.insync.replicas', value: '2' }] : []),
          { name: 'unclean.leader.election.enable', value: 'false' },
          ...(spec.compact ? [] : [{ name: 'retention.ms', value: String(spec.retentionMs ?? -1) }]),
          ...(!spec.compact && (spec.retentionMs ?? -1) === -1 ? [{ name: 'retention.bytes', value: '-1' }] : []),
        ],
      }],
    }).catch((error: unknown) => {
      if (notServedYet(error)) return true;
      throw error;
    });
    await served(admin, spec.topic);
    const [meta] = (await untilServed(() => admin.fetchTopicMetadata({ topics: [spec.topic] }))).topics;
    if (meta === undefined || meta.partitions.length === 0) throw new Error(`topic ${spec.topic} has no partitions`);
    const config = await admin.describeConfigs({
      includeSynonyms: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: spec.topic, configNames: ['retention.ms'] }],
    }).catch(() => null);
    const retention = config?.resources[0]?.configEntries.find((e) => e.configName === 'retention.ms')?.configValue;
    const retentionMs = retention === undefined || retention === null || !/^-?\d+$/.test(retention) ? null : Number(retention);
    return { partitions: meta.partitions.length, replicationFactor: meta.partitions[0]!.replicas.length, created, retentionMs };
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/**
 * Resolves once the leaders serve `topic`: one just created (here or by another node at once)
 * may answer "does not host this topic-partition" for a while, which kafkajs's subscribe throws.
 * Bounded by start-up's own timeout.
 */
async function served(admin: ReturnType<Kafka['admin']>, topic: string): Promise<void> {
  for (;;) {
    try {
      await admin.fetchTopicOffsets(topic);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

function kafkaClient(options: ClusterOptions): Kafka {
  return new Kafka({
    clientId: `tally-node-${options.nodeId}`,
    brokers: [...options.brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    requestTimeout: CLUSTER_WRITE_TIMEOUT_MS,
    retry: { initialRetryTime: 200, maxRetryTime: 2_000, retries: 5 },
  });
}

/**
 * A cluster write: the events stamped on this node (the engine's checks, the receipt time, the
 * placeholders), the valid ones produced to the event log; each result is the produced marker or
 * the refusal.
 */
function producedWrite(engine: TallyEngine, producer: EventLogProducer) {
  return async (
    projectId: string, events: readonly EventToWrite[], ctx: WriteContext, options: { atomic?: boolean } = {},
  ): Promise<AppendResult[]> => {
    const stamped = engine.events.stamp(projectId, events, ctx);
    const messages: LogMessage[] = [];
    const results: AppendResult[] = new Array(stamped.length);
    for (let i = 0; i < stamped.length; i++) {
      const result = stamped[i]!;
      if (result.ok) {
        messages.push({ key: messageKey(projectId, events[i]!.collection), value: result.json });
        results[i] = PRODUCED;
      } else {
        results[i] = result;
      }
    }
    if (options.atomic && messages.length < stamped.length) {
      return results.map((result) => (result.ok ? NOT_PRODUCED : result));
    }
    if (messages.length > 0) await producer.send(messages);
    return results;
  };
}

/**
 * The metadata topic (created when missing) read and this node's catalog made the topic's:
 * before the events consumer starts, as it appends to projects it must know.
 */
async function startShared(kafka: Kafka, options: ClusterOptions, log: ConstructorParameters<typeof SharedCatalog>[0]['log']): Promise<SharedCatalog> {
  await withTimeout(ensureTopic(kafka, { topic: options.metaTopic, partitions: 1, compact: true }), CLUSTER_START_TIMEOUT_MS, 'the Kafka cluster');
  const shared = new SharedCatalog({ kafka, engine: options.engine, topic: options.metaTopic, nodeId: options.nodeId, log });
  try {
    await withTimeout(shared.start(), CLUSTER_START_TIMEOUT_MS, 'the metadata topic');
  } catch (error) {
    await shared.close().catch(() => {});
    throw error;
  }
  return shared;
}

/**
 * With `nodes`: the assignment, checked against the cluster's in the metadata topic (published
 * there when it has none; a different one stops the start, or is replaced with `reassign`).
 */
async function checkedAssignment(meta: SharedCatalog, options: ClusterOptions, partitions: number, log: Log): Promise<Assignment | null> {
  if (options.nodes === undefined || options.nodes.length === 0) return null;
  const assignment = new Assignment(options.nodes, options.replicas ?? 1, partitions, options.topic);
  const done = await checkAssignment(meta, assignmentRecord(assignment), options.reassign === true);
  if (done !== 'same') {
    log(done === 'replaced' ? 'warn' : 'info', `cluster: ${done} this node's assignment in the metadata topic`, {
      topic: options.metaTopic, nodes: options.nodes.map((m) => m.id), replicas: assignment.replicas,
    });
  }
  return assignment;
}

/** The start's log line on the events topic; a warning when it does not keep every record. */
function logTopic(log: Log, options: ClusterOptions, topic: TopicFacts, assignment: Assignment | null, owned: readonly number[]): void {
  log('info', topic.created ? 'cluster: created the events topic' : 'cluster: using the events topic', {
    topic: options.topic, partitions: topic.partitions, replication_factor: topic.replicationFactor, retention_ms: topic.retentionMs,
    ...(assignment !== null && { nodes: assignment.members.length, replicas: assignment.replicas, owned }),
  });
  if (topic.retentionMs !== null && topic.retentionMs !== -1) {
    log('warn', 'cluster: the events topic does not keep every record: a node down longer than its retention, or '
      + 'rebuilt from an empty data directory, cannot read what Kafka deleted (docs/cluster.md)', {
      topic: options.topic, retention_ms: topic.retentionMs,
    });
  }
}

export async function startCluster(options: ClusterOptions): Promise<ClusterNode> {
  const { engine, logger } = options;
  // Before anything awaits: what the WAL proved is written to the offsets file before any flush
  // can delete those WAL records, and every later flush makes the file durable first.
  const offsets = new ConsumedOffsets(options.dataDir, { fsync: options.fsync, replayed: engine.events.replayedTags() });
  const unTagged = engine.events.onTagged((_project, tag) => offsets.recordTag(tag));
  const unHook = engine.events.beforeWalRemove(() => offsets.persist());
  const log: Log = (level, msg, fields) => logger.write(level, msg, fields);

  const kafka = kafkaClient(options);
  let producer: EventLogProducer | null = null;
  let consumer: LogConsumer | null = null;
  let shared: SharedCatalog | null = null;
  let topic: Awaited<ReturnType<typeof ensureTopic>>;
  let assignment: Assignment | null;
  let owned: readonly number[];
  try {
    topic = await withTimeout(ensureTopic(kafka, { topic: options.topic, partitions: options.partitions, ...(options.retentionMs !== undefined && { retentionMs: options.retentionMs }) }), CLUSTER_START_TIMEOUT_MS, 'the Kafka cluster');
    const meta = await startShared(kafka, options, log);
    shared = meta;
    assignment = await checkedAssignment(meta, options, topic.partitions, log);
    owned = options.owned ?? assignment?.ownedBy(options.nodeId) ?? Array.from({ length: topic.partitions }, (_, i) => i);
    producer = new EventLogProducer({ kafka, topic: options.topic, partitions: topic.partitions, timeoutMs: CLUSTER_WRITE_TIMEOUT_MS, log });
    await withTimeout(producer.ready(), CLUSTER_START_TIMEOUT_MS, 'an idempotent producer of the Kafka cluster');
    consumer = new LogConsumer({ kafka, engine, topic: options.topic, partitions: owned, offsets, nodeId: options.nodeId, log, metaSync: () => meta.sync() });
    await withTimeout(consumer.start(), CLUSTER_START_TIMEOUT_MS, 'a consumer of the Kafka cluster');
  } catch (error) {
    unTagged();
    unHook();
    await Promise.all([producer?.close(), consumer?.close(), shared?.close()].map((closing) => closing?.catch(() => {})));
    throw new ClusterStartError(`cannot use the Kafka cluster at ${options.brokers.join(',')} `
      + `(topic ${options.topic}): ${(error as Error).message}`, { cause: error });
  }
  logTopic(log, options, topic, assignment, owned);
  const [p, c, m] = [producer, consumer, shared] as const;

  const write = producedWrite(engine, p);
  const status = new ClusterStatus({
    kafka, topic: options.topic, self: options.nodeId, members: assignment?.members ?? [], owned, offsets, caughtUp: () => c.caughtUp,
  });
  status.start();
  const queries = assignment === null ? undefined : new ClusterQueries({
    engine, assignment, self: options.nodeId, secret: options.secret ?? '', caughtUp: () => c.caughtUp,
    seenDown: (id) => status.seenDown(id),
  });

  return {
    topic: options.topic,
    get caughtUp() {
      return m.caughtUp && c.caughtUp;
    },
    partitions: topic.partitions,
    replicationFactor: topic.replicationFactor,
    write,
    delete: (projectId, collection, plan) => p.send([deleteMessage(messageKey(projectId, collection), plan)], deleteUnavailable),
    queries,
    owned,
    status,
    async writeBatch(projectId, body, ctx) {
      // As events.appendBatch: an unknown project before a body that is no batch.
      if (!engine.projects.get(projectId)) throw new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`);
      const { events, collections } = parseBatchBody(body);
      return { collections, results: await write(projectId, events, ctx) };
    },
    async close() {
      await status.close();
      await p.close();
      await c.close();
      await m.close();
      unTagged();
      await offsets.persist();
      unHook();
    },
  };
}
