/**
 * What an operator sees of a cluster node (`/metrics`, `/health`): how far behind the events topic
 * each partition it stores is, and which nodes of --cluster-nodes answer.
 *
 * Every CLUSTER_PROBE_INTERVAL_MS (and once at start) one tick asks Kafka the end offset of every
 * partition this node stores (one ListOffsets request) and asks each other node's `/ready`, all at
 * once, each within CLUSTER_PROBE_TIMEOUT_MS. A partition's lag is its end offset minus the
 * offset after the last record the store holds (ConsumedOffsets), so 0 once the node stored
 * everything Kafka had at the last tick. A node is up when it answered its last probe at all, ready
 * when it answered 200 (caught up with the topic). A probe never overlaps the one before, and the
 * timer keeps no process alive. Queries try nodes last seen down after the others (queries.ts).
 */
import type { Admin, Kafka } from 'kafkajs';
import type { Member } from './assignment.js';
import type { ConsumedOffsets } from './offsets.js';
import { CLUSTER_PROBE_INTERVAL_MS, CLUSTER_PROBE_TIMEOUT_MS } from '../common/limits.js';

export interface PartitionLag {
  readonly partition: number;
  /** Records of the partition in Kafka (at the last tick) that the store does not hold. */
  readonly lag: number;
}

export interface MemberState {
  readonly id: number;
  /** Answered its last probe (any status). */
  readonly up: boolean;
  /** Answered it 200: caught up with the topic. */
  readonly ready: boolean;
}

/** The `cluster` section of /health. */
export interface ClusterHealth {
  readonly node_id: number;
  readonly owned_partitions: readonly number[];
  readonly caught_up: boolean;
  readonly peers_up: readonly number[];
  readonly peers_down: readonly number[];
}

export interface ClusterStatusOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  readonly self: number;
  /** Every node of the cluster (this one included); empty: this node alone. */
  readonly members: readonly Member[];
  readonly owned: readonly number[];
  readonly offsets: ConsumedOffsets;
  readonly caughtUp: () => boolean;
}

export class ClusterStatus {
  /** Per partition this node stores: its end offset at the last tick that got it. */
  private readonly ends = new Map<number, number>();
  /** Per other node: its answer to the last probe (absent before the first). */
  private readonly peers = new Map<number, { up: boolean; ready: boolean }>();
  private admin: Admin | null = null;
  private timer: NodeJS.Timeout | undefined;
  private readingEnds: Promise<void> | null = null;
  private probing: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: ClusterStatusOptions) {}

  /** Starts the periodic probe (a first tick at once). */
  start(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), CLUSTER_PROBE_INTERVAL_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.all([this.readingEnds, this.probing]);
    await this.admin?.disconnect().catch(() => {});
  }

  lags(): PartitionLag[] {
    const { offsets, topic, owned } = this.options;
    const lags: PartitionLag[] = [];
    for (const partition of owned) {
      const end = this.ends.get(partition);
      if (end !== undefined) lags.push({ partition, lag: Math.max(0, end - (offsets.last(topic, partition) + 1)) });
    }
    return lags;
  }

  /** Every node of --cluster-nodes (this one: up, and ready once caught up); not yet probed counts as down. */
  members(): MemberState[] {
    const { members, self, caughtUp } = this.options;
    const list = members.length > 0 ? members : [{ id: self, url: '' }];
    return list.map(({ id }) => (id === self
      ? { id, up: true, ready: caughtUp() }
      : { id, up: false, ready: false, ...this.peers.get(id) }));
  }

  /** True when node `id` did not answer its last probe (false before the first). */
  seenDown(id: number): boolean {
    return this.peers.get(id)?.up === false;
  }

  health(): ClusterHealth {
    const { self, owned, caughtUp } = this.options;
    const peers = this.members().filter((m) => m.id !== self);
    return {
      node_id: self, owned_partitions: owned, caught_up: caughtUp(),
      peers_up: peers.filter((m) => m.up).map((m) => m.id), peers_down: peers.filter((m) => !m.up).map((m) => m.id),
    };
  }

  private tick(): void {
    if (this.closed) return;
    // Kafka and the peers apart: brokers that do not answer must not hold the peers' probes back.
    this.readingEnds ??= this.readEnds().finally(() => { this.readingEnds = null; });
    this.probing ??= Promise.all(this.options.members.filter((m) => m.id !== this.options.self).map((m) => this.probe(m)))
      .then(() => {}).finally(() => { this.probing = null; });
  }

  private async readEnds(): Promise<void> {
    try {
      this.admin ??= this.options.kafka.admin({ retry: { retries: 0 } });
      await this.admin.connect();
      const signal = AbortSignal.timeout(CLUSTER_PROBE_TIMEOUT_MS);
      const aborted = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      const ends = await Promise.race([this.admin.fetchTopicOffsets(this.options.topic), aborted]);
      for (const { partition, high } of ends) this.ends.set(partition, Number(high));
    } catch {
      // Kafka did not answer: the lags stay those of the last tick that got the ends.
      const admin = this.admin;
      this.admin = null;
      await admin?.disconnect().catch(() => {});
    }
  }

  private async probe(member: Member): Promise<void> {
    try {
      const response = await fetch(`${member.url}/ready`, { signal: AbortSignal.timeout(CLUSTER_PROBE_TIMEOUT_MS) });
      await response.body?.cancel();
      this.peers.set(member.id, { up: true, ready: response.status === 200 });
    } catch {
      this.peers.set(member.id, { up: false, ready: false });
    }
  }
}
