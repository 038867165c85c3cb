/**
 * What an operator sees of a cluster node (`/metrics`, `/health`): how far behind the events topic
 * each partition it stores is, and which nodes of --cluster-nodes answer.
 *
 * Every CLUSTER_PROBE_INTERVAL_MS (and once at start) one tick asks Kafka the end offset of every
 * partition this node stores (one ListOffsets request) and asks each other node's `/ready`, all at
 * once, each within CLUSTER_PROBE_TIMEOUT_MS. A partition's lag is its end offset minus the
 * offset after the last record the store holds (ConsumedOffsets). A scrape of /metrics reads the
 * ends again (lagsNow), so its lag is 0 only once the node stored everything Kafka held when
 * scraped: with the last tick's ends, up to CLUSTER_PROBE_INTERVAL_MS old, a scrape right after a
 * write read 0 for records not yet stored, and a test that waited for lag 0 queried too early.
 * A node is up when it answered its last probe at all, ready
 * when it answered 200 (caught up with the topic). A probe never overlaps the one before, and the
 * timer keeps no process alive. Queries try nodes last seen down after the others (queries.ts).
 */
import type { Admin, Kafka } from 'kafkajs';
import type { Member } from './assignment.js';
import type { ConsumedOffsets } from './offsets.js';
import { CLUSTER_PROBE_INTERVAL_MS, CLUSTER_PROBE_TIMEOUT_MS } from '../common/limits.js';

export interface PartitionLag {
  readonly partition: number;
  /** Records of the partition in Kafka (when its end was read) that the store does not hold. */
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
  private readingEnds: Promise<unknown> | null = null;
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

  /**
   * The lags against the partitions' ends read now (what /metrics reports), or against the last
   * ends read when Kafka does not answer within CLUSTER_PROBE_TIMEOUT_MS.
   */
  async lagsNow(): Promise<PartitionLag[]> {
    const ends = this.closed ? null : await this.readEnds();
    return this.lags(ends ?? this.ends);
  }

  private lags(ends: ReadonlyMap<number, number>): PartitionLag[] {
    const { offsets, topic, owned } = this.options;
    const lags: PartitionLag[] = [];
    for (const partition of owned) {
      const end = ends.get(partition);
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

  /** Reads every partition's end into `ends` and returns what it read (null when Kafka did not answer). */
  private async readEnds(): Promise<Map<number, number> | null> {
    try {
      // The connect too is within the bound: a scrape of /metrics waits for this when Kafka is down.
      const signal = AbortSignal.timeout(CLUSTER_PROBE_TIMEOUT_MS);
      const aborted = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      aborted.catch(() => {});
      this.admin ??= this.options.kafka.admin({ retry: { retries: 0 } });
      await Promise.race([this.admin.connect(), aborted]);
      const read = new Map<number, number>();
      for (const { partition, high } of await Promise.race([this.admin.fetchTopicOffsets(this.options.topic), aborted])) {
        read.set(partition, Number(high));
        this.ends.set(partition, Math.max(this.ends.get(partition) ?? 0, Number(high)));
      }
      return read;
    } catch {
      // Kafka did not answer: the lags stay those of the last tick that got the ends.
      const admin = this.admin;
      this.admin = null;
      await admin?.disconnect().catch(() => {});
      return null;
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
