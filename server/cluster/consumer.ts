/**
 * Reads this node's partitions of the events topic into the engine, exactly once.
 *
 * Assignment is static: the node reads the partitions it is given (`partitions`: its share of
 * --cluster-nodes, assignment.ts, or every partition) however Kafka's group protocol would
 * spread them. kafkajs has no group-less assign(), so the consumer joins a group of its own (a
 * fresh id per start, no other member, nothing ever committed) whose assigner hands it exactly
 * those partitions. Where it reads
 * from is never the group's: on every join each partition is sought to the offset after the last
 * one the store holds (ConsumedOffsets), and records at or below it are skipped should a fetch
 * bring them anyway. A partition the store has nothing of starts at its earliest record.
 *
 * A fetched batch becomes one engine append per run of consecutive records of one project (the
 * engine appends per project), in order and each awaited before the next, so the WAL never holds
 * a later run without the earlier ones. Each append is tagged with its partition and last offset
 * (ConsumedOffsets.tag): the events and how far the partition was read are durable together.
 * The events were stamped by the node that took the write (TallyEngine.events.stamp), so they are
 * appended with `stamped: true` and keep their receipt time. A record that cannot be read (no
 * project/collection key, no JSON object, an unknown project) is logged and skipped; an event the
 * engine refuses is counted and logged, as a refusal here is final. An append that fails (the
 * disk) fails the batch: kafkajs fetches it again and the stored part is skipped. A delete record
 * (deletes.ts) ends the run before it: that run is stored, then the delete applied, then its
 * offset made durable, and only then is the next record read.
 */
import {
  AssignerProtocol, type Consumer, type EachBatchPayload, type Kafka, type KafkaMessage, type PartitionAssigner,
} from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { isApiError, type EventToWrite, type TallyEngine } from '../../engine/index.js';
import { ConsumedOffsets } from './offsets.js';
import { decodeDelete, isDeleteRecord } from './deletes.js';
import { untilServed } from './served.js';
import { CLUSTER_REFUSAL_LOG_MS, CLUSTER_RUN_EVENTS_MAX } from '../common/limits.js';

const CONTEXT = Object.freeze({ ip: '', userAgent: 'tally-cluster' });

export interface LogConsumerOptions {
  readonly kafka: Kafka;
  readonly engine: TallyEngine;
  readonly topic: string;
  /** The partitions this node owns (reads and stores). */
  readonly partitions: readonly number[];
  readonly offsets: ConsumedOffsets;
  readonly nodeId: number;
  readonly log: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
  /**
   * Resolves once the shared metadata topic was read up to its end now: a record of a project
   * this node does not know yet is appended again after it (the project was created elsewhere
   * just before its first events were written), and skipped only if still unknown.
   */
  readonly metaSync?: () => Promise<void>;
}

function unknownProject(error: unknown): boolean {
  return isApiError(error) && error.error_code === 'ResourceNotFoundError';
}

/** The message key of an event: its partition is chosen by it, so one collection's events stay in order. */
export function messageKey(projectId: string, collection: string): string {
  return `${projectId}/${collection}`;
}

/** [projectId, collection] of a message key, or null. Project ids have no "/"; collection names may. */
export function parseMessageKey(key: string): [string, string] | null {
  const at = key.indexOf('/');
  return at <= 0 || at === key.length - 1 ? null : [key.slice(0, at), key.slice(at + 1)];
}

/** An assigner that gives every member exactly `owned` of `topic`. */
export function staticAssigner(topic: string, owned: readonly number[]): PartitionAssigner {
  return () => ({
    name: 'TallyStatic',
    version: 1,
    async assign({ members }) {
      return members.map(({ memberId }) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1, assignment: { [topic]: [...owned] }, userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: 'TallyStatic',
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }),
      };
    },
  });
}

interface Run {
  /** null while the run holds only skipped records. */
  projectId: string | null;
  events: EventToWrite[];
  lastOffset: number;
}

export class LogConsumer {
  private readonly consumer: Consumer;
  private readonly owned: ReadonlySet<number>;
  /** Events appended, refused by the engine, and records skipped since start. */
  stored = 0;
  refused = 0;
  skipped = 0;
  /** Delete records applied since start (whether or not they found anything to delete). */
  deletes = 0;
  /** Records gone from Kafka before this node stored them, since start (logGap). */
  gaps = 0;
  private readonly gapsLogged = new Set<string>();
  private refusalLoggedAt = 0;
  private closed = false;
  /** Per partition, the offset before which it counts as caught up (its end when we started). */
  private readonly catchUp = new Map<number, number>();

  constructor(private readonly options: LogConsumerOptions) {
    this.owned = new Set(options.partitions);
    this.consumer = options.kafka.consumer({
      groupId: `tally-node-${options.nodeId}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`,
      partitionAssigners: [staticAssigner(options.topic, options.partitions)],
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: 250,
      sessionTimeout: 30_000,
      retry: {
        initialRetryTime: 300, maxRetryTime: 5_000, retries: 10,
        // Whatever failed (the disk, Kafka), this node must go on reading its partitions: the
        // consumer starts again, rejoins and is sought back to where the store is.
        restartOnFailure: async () => true,
      },
    });
  }

  async start(): Promise<void> {
    const { consumer, options } = this;
    await this.measureCatchUp();
    await consumer.connect();
    // On every join (the first and any after a restart of the consumer): where the store is.
    consumer.on(consumer.events.GROUP_JOIN, () => {
      for (const partition of options.partitions) {
        const last = options.offsets.last(options.topic, partition);
        if (last >= 0) consumer.seek({ topic: options.topic, partition, offset: String(last + 1) });
      }
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      options.log('error', 'cluster: the events consumer failed; it restarts', { error: payload.error });
    });
    await untilServed(() => consumer.subscribe({ topic: options.topic, fromBeginning: true }), () => this.closed);
    await consumer.run({
      autoCommit: false,
      // kafkajs fetches on from the last offset resolved: only after a run is durable, so a batch
      // left early (a rebalance, a stop) or failed is fetched again from there.
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, Math.min(8, options.partitions.length)),
      eachBatch: (payload) => this.eachBatch(payload),
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.consumer.disconnect();
  }

  /** True once every owned partition was read up to where it ended when this node started. */
  get caughtUp(): boolean {
    return this.catchUp.size === 0;
  }

  private async measureCatchUp(): Promise<void> {
    const admin = this.options.kafka.admin();
    await admin.connect();
    try {
      // A topic just created may not be served by every leader yet ("does not host this
      // topic-partition"): asked again until start-up's own bound gives up.
      let ends: { partition: number; high: string; low: string }[];
      for (;;) {
        try {
          ends = await admin.fetchTopicOffsets(this.options.topic);
          break;
        } catch (error) {
          if (this.closed) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
      for (const { partition, high, low } of ends) {
        if (!this.owned.has(partition)) continue;
        const end = Number(high);
        const earliest = Number(low);
        let last = this.options.offsets.last(this.options.topic, partition);
        if (last + 1 < earliest) {
          // Gone for good: the node reads on from the earliest record (and is caught up without them).
          this.logGap(partition, last + 1, earliest - 1, 'at start');
          this.options.offsets.advance(this.options.topic, partition, earliest - 1);
          last = earliest - 1;
        }
        if (last + 1 < end) this.catchUp.set(partition, end);
      }
    } finally {
      await admin.disconnect();
    }
    const behind = [...this.catchUp].reduce((n, [p, end]) => n + end - 1 - this.options.offsets.last(this.options.topic, p), 0);
    this.options.log('info', 'cluster: reading the events topic', {
      topic: this.options.topic, partitions: this.options.partitions.length, records_behind: behind,
    });
    if (this.catchUp.size === 0) this.options.log('info', 'cluster: caught up with the events topic');
  }

  /**
   * Records `from`..`to` of `partition` are gone from Kafka (retention, deleted records) before this
   * node stored them: its store misses them for good. Logged once per partition and range.
   */
  private logGap(partition: number, from: number, to: number, when: 'at start' | 'reading'): void {
    const key = `${partition}:${from}`;
    if (this.gapsLogged.has(key)) return;
    this.gapsLogged.add(key);
    this.gaps += to - from + 1;
    this.options.log('warn', 'cluster: records of the events topic are gone before this node stored them', {
      topic: this.options.topic, partition, from, to, records: to - from + 1, when,
      hint: 'this node will never store them: the topic\'s retention is shorter than this node was away '
        + '(or its records were deleted); keep retention.ms=-1 on the events topic (docs/cluster.md)',
    });
  }

  private noteProgress(partition: number, lastOffset: number): void {
    const end = this.catchUp.get(partition);
    if (end === undefined || lastOffset + 1 < end) return;
    this.catchUp.delete(partition);
    if (this.catchUp.size === 0) {
      this.options.log('info', 'cluster: caught up with the events topic', { stored: this.stored });
    }
  }

  private async eachBatch({ batch, heartbeat, resolveOffset, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, offsets } = this.options;
    const partition = batch.partition;
    if (batch.topic !== topic || !this.owned.has(partition)) return;
    const last = offsets.last(topic, partition);
    // Records the store has (a fetch that began before a seek): resolved, so the next fetch is past them.
    const had = Math.min(last, Number(batch.lastOffset()));
    if (batch.messages.length > 0 && had >= Number(batch.messages[0]!.offset)) resolveOffset(String(had));
    const first = batch.messages.find((m) => Number(m.offset) > last);
    if (first === undefined) return;
    // Kafka no longer has them (retention) or never will (compaction): nothing to wait for.
    if (Number(first.offset) > last + 1) this.logGap(partition, last + 1, Number(first.offset) - 1, 'reading');
    let run: Run = { projectId: null, events: [], lastOffset: last };
    for (const message of batch.messages) {
      const offset = Number(message.offset);
      if (offset <= last) continue;
      if (!isRunning() || isStale()) return;
      if (isDeleteRecord(message)) {
        // Everything before it in the partition is stored first: the delete binds to exactly those.
        if (run.lastOffset > last) {
          await this.append(partition, run);
          resolveOffset(String(run.lastOffset));
        }
        await this.applyDelete(partition, message);
        resolveOffset(message.offset);
        await heartbeat();
        run = { projectId: null, events: [], lastOffset: offset };
        continue;
      }
      const decoded = this.decode(message, partition);
      if (decoded === null) {
        this.skipped++;
      } else {
        if ((run.projectId !== null && run.projectId !== decoded.projectId) || run.events.length >= CLUSTER_RUN_EVENTS_MAX) {
          await this.append(partition, run);
          resolveOffset(String(run.lastOffset));
          await heartbeat();
          run = { projectId: null, events: [], lastOffset: run.lastOffset };
        }
        run.projectId ??= decoded.projectId;
        run.events.push(decoded.event);
      }
      run.lastOffset = offset;
    }
    if (run.lastOffset > last) {
      await this.append(partition, run);
      resolveOffset(String(run.lastOffset));
    }
  }

  /** Appends a run's events with its tag; advances the partition's offset once they are durable. */
  private async append(partition: number, run: Run): Promise<void> {
    const { engine, topic, offsets } = this.options;
    if (run.projectId !== null && run.events.length > 0) {
      const append = () => engine.events.append(run.projectId!, run.events, CONTEXT, {
        stamped: true, tag: ConsumedOffsets.tag(topic, partition, run.lastOffset),
      });
      let results;
      try {
        results = await append().catch(async (error: unknown) => {
          if (!unknownProject(error) || this.options.metaSync === undefined) throw error;
          await this.options.metaSync();
          return append();
        });
      } catch (error) {
        if (!unknownProject(error)) throw error;
        this.skipped += run.events.length;
        this.options.log('warn', 'cluster: records of an unknown project skipped', {
          partition, project: run.projectId, records: run.events.length, last_offset: run.lastOffset,
        });
        results = null;
      }
      if (results !== null) this.count(partition, run, results);
    }
    offsets.advance(topic, partition, run.lastOffset);
    this.noteProgress(partition, run.lastOffset);
  }

  /**
   * Applies a delete record to this store, then makes its offset durable before anything after it
   * is read (docs/cluster.md, "Deletes": why it is applied exactly once). A delete of a collection
   * or property this store does not have deletes nothing.
   */
  private async applyDelete(partition: number, message: KafkaMessage): Promise<void> {
    const { engine, topic, offsets } = this.options;
    const offset = Number(message.offset);
    const key = message.key === null ? null : parseMessageKey(message.key.toString('utf8'));
    const plan = key === null ? null : decodeDelete(message);
    if (key === null || plan === null) {
      this.skipped++;
      this.options.log('warn', 'cluster: a delete record of the events topic cannot be read; skipped', { partition, offset });
    } else {
      const fields = { partition, offset, project: key[0], collection: key[1], kind: plan.kind };
      try {
        const applied = await engine.collections.applyDelete(key[0], key[1], plan);
        this.deletes++;
        this.options.log('info', 'cluster: delete applied', { ...fields, applied });
      } catch (error) {
        // A plan the taking node checked is never refused; one that is would be refused again.
        if (!isApiError(error)) throw error;
        this.skipped++;
        this.options.log('warn', 'cluster: a delete record refused by the store; skipped', { ...fields, error: error.message });
      }
    }
    offsets.advance(topic, partition, offset);
    await offsets.persist();
    this.noteProgress(partition, offset);
  }

  private count(partition: number, run: Run, results: readonly { ok: boolean; error?: { error_code: string; message: string } }[]): void {
    let refused = 0;
    let first: { error_code: string; message: string } | undefined;
    for (const r of results) {
      if (r.ok) continue;
      refused++;
      first ??= r.error;
    }
    this.stored += results.length - refused;
    if (refused === 0) return;
    this.refused += refused;
    const now = Date.now();
    if (now - this.refusalLoggedAt < CLUSTER_REFUSAL_LOG_MS) return;
    this.refusalLoggedAt = now;
    this.options.log('warn', 'cluster: events of the events topic refused by the store (not stored)', {
      partition, project: run.projectId, refused, refused_since_start: this.refused, error: first,
    });
  }

  /** The project and event of a record, or null (logged) when it is none. */
  private decode(message: KafkaMessage, partition: number): { projectId: string; event: EventToWrite } | null {
    const key = message.key === null ? null : parseMessageKey(message.key.toString('utf8'));
    let value: unknown;
    try {
      value = message.value === null ? undefined : JSON.parse(message.value.toString('utf8'));
    } catch {
      value = undefined;
    }
    if (key === null || value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.options.log('warn', 'cluster: a record of the events topic is no Tally event; skipped', {
        partition, offset: message.offset,
      });
      return null;
    }
    return { projectId: key[0], event: { collection: key[1], event: value } };
  }
}
