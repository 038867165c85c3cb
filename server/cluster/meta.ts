/**
 * Shared metadata: the organization and its catalog (projects and their keys, access keys, saved
 * queries, dataset definitions) kept in a compacted, single-partition Kafka topic (default
 * `tally.meta`) that every node reads from its beginning and then follows.
 *
 * A record is one object: key `<kind>/<id>` (engine/catalog/records.ts; `cluster/<id>`: the
 * cluster's own records, kept here and not applied to the catalog), value its full state as
 * JSON, or null (a tombstone) for a delete, so compaction keeps each object's latest state. A
 * change asked of any node is produced (idempotent producer, acks = all) before it is applied
 * and answered (engine.catalog.beforeChange); Kafka's refusal within CLUSTER_WRITE_TIMEOUT_MS is
 * the change's 503 and nothing is applied. Every node applies every record in topic order, its
 * own included (applying is idempotent), so the last record of an object wins everywhere.
 *
 * The organization: a node that finds no organization record in the topic publishes its whole
 * catalog as a *seed*: the organization record (key `org/<seed>`) and then every object, each
 * with the header `tally-seed: <seed>`. The first organization record in the partition wins on
 * every node; objects of any other seed are ignored. So two nodes starting on an empty topic at
 * once both publish, and both adopt the same one (whichever Kafka appended first). At start a
 * node reads the topic to its end and then makes its catalog exactly the topic's (what it holds
 * and the topic lacks is removed; an organization id or key that differs is replaced, logged);
 * only then does start resolve (so /ready, the HTTP routes, and the events consumer come after).
 */
import type { Admin, Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { ApiError, type CatalogKind, type CatalogRecord, type OrgState, type TallyEngine } from '../../engine/index.js';
import { staticAssigner } from './consumer.js';
import { EventLogProducer, type LogMessage } from './producer.js';
import { untilServed } from './served.js';
import { CLUSTER_META_SYNC_TIMEOUT_MS, CLUSTER_META_WAIT_MS, CLUSTER_WRITE_TIMEOUT_MS } from '../common/limits.js';

const SEED_HEADER = 'tally-seed';
const KINDS: ReadonlySet<string> = new Set<CatalogKind>(['org', 'project', 'access_key', 'saved_query', 'dataset']);

type Log = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export interface SharedCatalogOptions {
  readonly kafka: Kafka;
  readonly engine: TallyEngine;
  readonly topic: string;
  readonly nodeId: number;
  readonly log: Log;
}

/** The record of a message, with the seed it was published under (if any); null when it is none of ours. */
function decode(message: KafkaMessage): { record: CatalogRecord; seed: string | null } | null {
  const key = message.key?.toString('utf8') ?? '';
  const at = key.indexOf('/');
  const kind = key.slice(0, at);
  if (at <= 0 || !KINDS.has(kind)) return null;
  let state: unknown = null;
  if (message.value !== null && message.value.length > 0) {
    try {
      state = JSON.parse(message.value.toString('utf8'));
    } catch {
      return null;
    }
  }
  const seed = message.headers?.[SEED_HEADER];
  return { record: { kind: kind as CatalogKind, id: key.slice(at + 1), state }, seed: seed === undefined ? null : String(seed) };
}

function encode(record: CatalogRecord, seed?: string): LogMessage {
  return {
    key: `${record.kind}/${record.id}`,
    value: record.state === null ? null : JSON.stringify(record.state),
    ...(seed !== undefined && { headers: { [SEED_HEADER]: seed } }),
  };
}

function unavailable(reason: string): ApiError {
  return new ApiError('ServiceUnavailableError',
    `Kafka did not acknowledge the change (${reason}); nothing was changed. Retry later.`);
}

export class SharedCatalog {
  private readonly producer: EventLogProducer;
  private readonly consumer: Consumer;
  private admin: Admin | null = null;
  /** The offset after the last record read. */
  private next = 0;
  /** The seed of the first organization record read: the cluster's. */
  private seed: string | null = null;
  private org: OrgState | null = null;
  /** Until start() adopted the topic's catalog: the latest record of each object, in first-seen order. */
  private latest: Map<string, CatalogRecord> | null = new Map();
  private unhook: (() => void) | null = null;
  private closed = false;
  /** The latest value of each record of the cluster itself (key `cluster/<id>`, not the engine's catalog). */
  private readonly clusterRecords = new Map<string, unknown>();

  constructor(private readonly options: SharedCatalogOptions) {
    this.producer = new EventLogProducer({
      kafka: options.kafka, topic: options.topic, partitions: 1, timeoutMs: CLUSTER_WRITE_TIMEOUT_MS, log: options.log, unavailable,
    });
    this.consumer = options.kafka.consumer({
      groupId: `tally-meta-${options.nodeId}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`,
      partitionAssigners: [staticAssigner(options.topic, [0])],
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: CLUSTER_META_WAIT_MS,
      sessionTimeout: 30_000,
      retry: { initialRetryTime: 300, maxRetryTime: 5_000, retries: 10, restartOnFailure: async () => true },
    });
  }

  /** The metadata topic's name. */
  get topic(): string {
    return this.options.topic;
  }

  /** True once the node adopted the topic's catalog (start resolved). */
  get caughtUp(): boolean {
    return this.latest === null;
  }

  /**
   * Reads the topic to its end, publishes this node's catalog as a seed if the topic has no
   * organization, adopts the topic's catalog, then follows the topic and routes every change
   * through it.
   */
  async start(): Promise<void> {
    const { engine, log } = this.options;
    await this.producer.ready();
    const end = await this.endOffset();
    await this.consumer.connect();
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      log('error', 'cluster: the metadata consumer failed; it restarts', { error: payload.error });
    });
    // A fresh group with nothing committed: the partition is read from its earliest record. A
    // restarted consumer reads it again from there; applying is idempotent.
    await untilServed(() => this.consumer.subscribe({ topic: this.options.topic, fromBeginning: true }), () => this.closed);
    await this.consumer.run({ autoCommit: false, eachBatch: async (payload) => this.eachBatch(payload) });
    await this.readTo(end);
    if (this.seed === null) {
      const seed = `${this.options.nodeId}-${randomBytes(6).toString('hex')}`;
      const records = engine.catalog.records();
      await this.producer.send(records.map((record) => encode(record.kind === 'org' ? { ...record, id: seed } : record, seed)));
      await this.readTo(await this.endOffset());
      log('info', this.seed === seed ? 'cluster: published this node\'s organization and catalog to the metadata topic'
        : 'cluster: another node published its organization first', { topic: this.options.topic, records: records.length });
    }
    if (this.seed === null || this.org === null) throw new Error(`no organization in the metadata topic ${this.options.topic}`);
    this.adopt(this.org);
    this.unhook = engine.catalog.beforeChange((records) => this.producer.send(records.map((record) => encode(record))));
  }

  /** The value of the cluster's record `cluster/<id>` read so far (undefined: none). */
  clusterRecord(id: string): unknown {
    return this.clusterRecords.get(id);
  }

  /** Publishes the cluster's record `cluster/<id>` (acks = all) and reads the topic past it. */
  async publishClusterRecord(id: string, value: unknown): Promise<void> {
    await this.producer.send([{ key: `cluster/${id}`, value: JSON.stringify(value) }]);
    await this.readTo(await this.endOffset());
  }

  /** Resolves once the records in the topic now are read and applied (bounded; logs if not). */
  async sync(): Promise<void> {
    const deadline = Date.now() + CLUSTER_META_SYNC_TIMEOUT_MS;
    try {
      await this.readTo(await this.endOffset(), deadline);
    } catch (error) {
      this.options.log('warn', 'cluster: could not read the metadata topic to its end', { error: (error as Error).message });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unhook?.();
    await this.producer.close();
    await this.consumer.disconnect().catch(() => {});
    await this.admin?.disconnect().catch(() => {});
  }

  /** Makes the engine's catalog the topic's, organization included. */
  private adopt(org: OrgState): void {
    const { engine, log } = this.options;
    const before = { id: engine.organization.id, key: engine.organization.key };
    const records = [...this.latest!.values()].filter((record) => record.state !== null);
    engine.catalog.replace([{ kind: 'org', id: this.seed!, state: org }, ...records]);
    this.latest = null;
    if (before.id !== org.id || before.key !== org.key) {
      log('warn', 'cluster: this node\'s organization differed from the metadata topic\'s; adopted the topic\'s', {
        organization: org.id, previous: before.id, key_changed: before.key !== org.key,
      });
    }
    log('info', 'cluster: caught up with the metadata topic', {
      topic: this.options.topic, organization: org.id, projects: engine.projects.list().length, records: records.length,
    });
  }

  private async eachBatch({ batch, resolveOffset }: EachBatchPayload): Promise<void> {
    for (const message of batch.messages) {
      const offset = Number(message.offset);
      if (offset < this.next) continue; // read again after a consumer restart
      this.read(message);
      this.next = offset + 1;
      resolveOffset(message.offset);
    }
    // A batch can end on records compaction removed: the next fetch starts after them.
    this.next = Math.max(this.next, Number(batch.lastOffset()) + 1);
  }

  private read(message: KafkaMessage): void {
    const key = message.key?.toString('utf8') ?? '';
    if (key.startsWith('cluster/')) {
      this.readClusterRecord(key.slice('cluster/'.length), message);
      return;
    }
    const decoded = decode(message);
    if (decoded === null) {
      this.options.log('warn', 'cluster: a record of the metadata topic is none of Tally\'s; skipped', { offset: message.offset });
      return;
    }
    const { record, seed } = decoded;
    if (record.kind === 'org') {
      if (this.seed === null && record.state !== null) {
        this.seed = record.id;
        this.org = record.state as OrgState;
      }
      return;
    }
    // Objects published with an organization that did not win are not the cluster's.
    if (seed !== null && seed !== this.seed) return;
    if (this.latest !== null) this.latest.set(`${record.kind}/${record.id}`, record);
    else this.options.engine.catalog.apply([record]);
  }

  private readClusterRecord(id: string, message: KafkaMessage): void {
    if (message.value === null || message.value.length === 0) {
      this.clusterRecords.delete(id);
      return;
    }
    try {
      this.clusterRecords.set(id, JSON.parse(message.value.toString('utf8')));
    } catch {
      this.options.log('warn', 'cluster: a cluster record of the metadata topic is no JSON; skipped', { offset: message.offset, id });
    }
  }

  /** The offset after the partition's last record now. */
  private async endOffset(): Promise<number> {
    if (this.admin === null) {
      const admin = this.options.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    // A topic another node has just created may not be served by its leader yet ("does not host
    // this topic-partition"): asked again until the caller's own bound gives up.
    for (;;) {
      try {
        const offsets = await this.admin.fetchTopicOffsets(this.options.topic);
        return Number(offsets.find((o) => o.partition === 0)?.high ?? 0);
      } catch (error) {
        if (this.closed) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  private async readTo(end: number, deadline = Infinity): Promise<void> {
    // Bound: the caller's deadline (start-up's own bound, or sync's).
    while (this.next < end) {
      if (this.closed) throw new Error('closed');
      if (Date.now() > deadline) throw new Error(`the metadata topic was not read to offset ${end} in time`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
