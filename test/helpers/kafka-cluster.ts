/**
 * A real Apache Kafka for tests: scripts/kafka.mjs's startKafka in a fresh temp dir, its nodes
 * watched so they stop should the test process die first. Needs Java 17+ and Maven (the jars come
 * from Maven Central on first use and stay in .cache/kafka/); without them it throws a message
 * saying what to install, so the test fails rather than skips.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin, ITopicConfig } from 'kafkajs';
import { notServedYet, untilServed } from '../../server/cluster/served.js';

/** dist/test/helpers/kafka-cluster.js → scripts/kafka.mjs (not compiled; plain ESM). */
const SCRIPT = new URL('../../../scripts/kafka.mjs', import.meta.url).href;

interface KafkaScript {
  KAFKA_VERSION: string;
  startKafka(options: {
    nodes: number; dir: string; exitWithParent?: boolean; log?: (msg: string) => void;
  }): Promise<{ bootstrap: string[]; stop(): Promise<number[]> }>;
  stopKafka(options: { dir: string; graceMs?: number }): Promise<number[]>;
  stopKafkaNode(options: { dir: string; node: number; graceMs?: number; kill?: boolean }): Promise<void>;
  startKafkaNode(options: { dir: string; node: number; exitWithParent?: boolean }): Promise<void>;
}

export interface RealKafka {
  /** host:port of every broker. */
  readonly bootstrap: string[];
  readonly version: string;
  /** Stops the nodes (SIGTERM, then SIGKILL) and removes their dir. */
  stop(): Promise<void>;
  /** Stops node `node` (1-based; a controlled shutdown); its data stays. */
  stopNode(node: number): Promise<void>;
  /** kill -9 of node `node` (1-based): a crash, no controlled shutdown; its data stays. */
  killNode(node: number): Promise<void>;
  /** Starts a stopped node again; resolves once the cluster lists it. */
  startNode(node: number): Promise<void>;
}

export async function startKafka(options: { nodes?: 1 | 3; log?: (msg: string) => void } = {}): Promise<RealKafka> {
  const script = (await import(SCRIPT)) as KafkaScript;
  const dir = mkdtempSync(join(tmpdir(), 'tally-kafka-'));
  try {
    const cluster = await script.startKafka({
      nodes: options.nodes ?? 1, dir, exitWithParent: true, ...(options.log && { log: options.log }),
    });
    let stopped: Promise<void> | undefined;
    return {
      bootstrap: cluster.bootstrap,
      version: script.KAFKA_VERSION,
      stopNode: (node) => script.stopKafkaNode({ dir, node, graceMs: 20_000 }),
      killNode: (node) => script.stopKafkaNode({ dir, node, kill: true }),
      startNode: (node) => script.startKafkaNode({ dir, node, exitWithParent: true }),
      stop: () => stopped ??= (async () => {
        await script.stopKafka({ dir, graceMs: 10_000 });
        rmSync(dir, { recursive: true, force: true });
      })(),
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Creates `topic` and resolves once a metadata request lists it with a leader for every partition:
 * kafkajs's waitForLeaders asks only the broker it created the topic through and gives up on
 * "does not host this topic-partition" (a numeric-coded error tap reports as "unhandled error"),
 * and the next call may reach a broker that has not heard of the topic yet. True when created here.
 */
export async function createServedTopic(admin: Admin, topic: ITopicConfig): Promise<boolean> {
  const created = await admin.createTopics({ topics: [topic], waitForLeaders: true }).catch((error: unknown) => {
    if (notServedYet(error)) return true;
    throw error;
  });
  for (;;) {
    const [meta] = (await untilServed(() => admin.fetchTopicMetadata({ topics: [topic.topic] }))).topics;
    if (meta !== undefined && meta.partitions.length > 0 && meta.partitions.every((p) => p.leader >= 0)) return created;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
