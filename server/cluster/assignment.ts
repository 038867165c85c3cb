/**
 * Static assignment of the events topic's partitions to the nodes of `--cluster-nodes` (no
 * consumer-group rebalances): with the nodes sorted by id at positions 0 .. N-1 and R replicas,
 * partition p is stored by the nodes at positions (p + k) mod N for k < R. Every node computes
 * the same map from the same flags; the partition of an event is Kafka's default partitioner's
 * (murmur2 of the key, the producer's), so any node knows which nodes store a collection.
 */
import { Partitioners } from 'kafkajs';

export interface Member {
  readonly id: number;
  readonly url: string;
}

export class Assignment {
  private readonly partitioner = Partitioners.DefaultPartitioner();
  private readonly metadata: { partitionId: number; leader: number }[];

  constructor(
    /** Sorted by id. */
    readonly members: readonly Member[],
    readonly replicas: number,
    readonly partitions: number,
    readonly topic: string,
  ) {
    this.metadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 0 }));
  }

  /** The nodes that store partition p, in order of preference. */
  ownersOf(partition: number): Member[] {
    const n = this.members.length;
    return Array.from({ length: Math.min(this.replicas, n) }, (_, k) => this.members[(partition + k) % n]!);
  }

  /** The partitions node `id` stores. */
  ownedBy(id: number): number[] {
    return Array.from({ length: this.partitions }, (_, p) => p).filter((p) => this.ownersOf(p).some((m) => m.id === id));
  }

  /** The partition a message key goes to (the producer's partitioner). */
  partitionOf(key: string): number {
    return this.partitioner({
      topic: this.topic, partitionMetadata: this.metadata as never, message: { key: Buffer.from(key), value: null },
    });
  }
}
