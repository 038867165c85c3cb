/**
 * The bridge to an external Kafka cluster (the scale-out path): a kafkajs consumer group reads
 * inbound topics (topic = collection) and appends each record's event through the engine, exactly
 * like the inbound listener; a kafkajs producer copies each collection's log of enriched events to
 * an outbound topic. Several Tally nodes may share the consumer group. Output positions are kept
 * as committed offsets of the engine (group OUTPUT_GROUP_ID), so a restart resumes.
 */
import type { ConnectionOptions } from 'node:tls';
import { Kafka, logLevel, type Producer, type SASLOptions } from 'kafkajs';
import type { EventToWrite, TallyEngine } from '../../../engine/index.js';
import { OUTPUT_BATCH_BYTES, OUTPUT_BATCH_RECORDS } from '../../common/limits.js';

export interface BridgeCluster {
  brokers: string[];
  sasl?: SASLOptions;
  ssl?: ConnectionOptions | boolean;
}

export interface KafkaBridgeOptions extends BridgeCluster {
  engine: TallyEngine;
  projectId: string;
  /**
   * Inbound topics (= collections); default: every topic existing when the bridge starts, except
   * those starting with outputPrefix and Kafka's internal "__" topics.
   */
  topics?: (string | RegExp)[];
  /** Outbound topic of a collection = outputPrefix + collection (default "enriched."). */
  outputPrefix?: string;
  /** Another cluster for the enriched events (default: the same one). */
  output?: BridgeCluster;
  /** Consumer group shared by the Tally nodes (default "tally-bridge-<projectId>"). */
  groupId?: string;
  log?: (msg: string) => void;
}

export interface KafkaBridge {
  close(): Promise<void>;
}

/** Engine group id under which the bridge keeps how far each collection was copied out. */
export const OUTPUT_GROUP_ID = 'tally-bridge-output';

export async function startKafkaBridge(opts: KafkaBridgeOptions): Promise<KafkaBridge> {
  const log = opts.log ?? (() => {});
  const prefix = opts.outputPrefix ?? 'enriched.';
  const client = (c: BridgeCluster, id: string) => new Kafka({
    clientId: id, brokers: c.brokers, sasl: c.sasl, ssl: c.ssl, logLevel: logLevel.NOTHING,
  });
  const consumer = client(opts, 'tally-bridge-in').consumer({
    groupId: opts.groupId ?? `tally-bridge-${opts.projectId}`, maxWaitTimeInMs: 500,
  });
  const producer = client(opts.output ?? opts, 'tally-bridge-out')
    .producer({ allowAutoTopicCreation: true });
  await Promise.all([consumer.connect(), producer.connect()]);
  // Not Kafka's internal topics ("__consumer_offsets" and the like): the group's own offset commits
  // land in __consumer_offsets, so consuming it would feed on itself.
  const topics = opts.topics ?? [new RegExp(`^(?!${escapeRegExp(prefix)}|__)[A-Za-z0-9._-]+$`)];
  await consumer.subscribe({ topics, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => ingest(opts, batch.topic, batch.messages, log),
  });
  const output = new OutputCopier(opts.engine, opts.projectId, producer, prefix, log);
  output.start();
  log(`kafka bridge: consuming ${opts.brokers.join(',')}, producing to "${prefix}<collection>"`);
  return {
    async close() {
      await output.stop();
      await consumer.disconnect();
      await producer.disconnect();
    },
  };
}

/**
 * Appends one fetched batch. Records whose value is not a JSON object are skipped and logged; the
 * engine rejects invalid events one by one. An I/O failure rejects, so kafkajs retries the batch.
 */
async function ingest(
  opts: KafkaBridgeOptions, topic: string, messages: { value: Buffer | null; offset: string }[],
  log: (msg: string) => void,
): Promise<void> {
  const events: EventToWrite[] = [];
  for (const m of messages) {
    const event = parseObject(m.value);
    if (event === undefined) log(`kafka bridge: ${topic}@${m.offset} is no JSON object; skipped`);
    else events.push({ collection: topic, event });
  }
  if (events.length === 0) return;
  const ctx = { ip: '', userAgent: 'tally-kafka-bridge' };
  const results = await opts.engine.events.append(opts.projectId, events, ctx);
  const rejected = results.filter((r) => !r.ok).length;
  if (rejected > 0) log(`kafka bridge: ${topic}: ${rejected} of ${events.length} events rejected`);
}

function parseObject(value: Buffer | null): object | undefined {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    const isObject = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
    return isObject ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Copies each collection's log to its outbound topic, woken by onAppend, one pass at a time. */
class OutputCopier {
  private stopped = false;
  private running: Promise<void> = Promise.resolve();
  private dirty = true;
  private unsubscribe: () => void = () => {};

  constructor(
    private readonly engine: TallyEngine, private readonly projectId: string,
    private readonly producer: Producer, private readonly prefix: string,
    private readonly log: (msg: string) => void,
  ) {}

  start(): void {
    this.unsubscribe = this.engine.events.onAppend((projectId) => {
      if (projectId === this.projectId) this.kick();
    });
    this.kick();
  }

  private kick(): void {
    this.dirty = true;
    this.running = this.running.then(async () => {
      // Bounded: each turn copies every new record once; appends during it set dirty again.
      while (this.dirty && !this.stopped) {
        this.dirty = false;
        try {
          await this.copyAll();
        } catch (error) {
          this.log(`kafka bridge: output failed, retrying: ${(error as Error).message}`);
          await new Promise((r) => setTimeout(r, 1000));
          this.dirty = true;
        }
      }
    });
  }

  private async copyAll(): Promise<void> {
    const positions = new Map(this.engine.groups.fetch(this.projectId, OUTPUT_GROUP_ID)
      .map((c) => [c.topic, c.offset]));
    for (const { name } of this.engine.collections.list(this.projectId)) {
      if (name.startsWith(this.prefix)) continue;
      const { start } = this.engine.log.bounds(this.projectId, name);
      let from = Math.max(positions.get(name) ?? 0, start);
      // Bounded by the log's end: each turn advances past the records it sent.
      for (;;) {
        const records = this.engine.log.read(
          this.projectId, name, from, OUTPUT_BATCH_RECORDS, OUTPUT_BATCH_BYTES);
        if (records.length === 0 || this.stopped) break;
        await this.producer.send({
          topic: this.prefix + name,
          messages: records.map((r) => ({
            key: r.id, value: r.json, timestamp: String(r.createdAtMs),
          })),
        });
        from = records[records.length - 1]!.offset + 1;
        await this.engine.groups.commit(this.projectId, OUTPUT_GROUP_ID, [
          { topic: name, partition: 0, offset: from, metadata: null },
        ]);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe();
    await this.running;
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

