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

/** The assignment's inputs, kept in the metadata topic as the record `cluster/assignment`. */
export interface AssignmentRecord {
  readonly nodes: readonly Member[];
  readonly replicas: number;
  readonly topic: string;
  readonly partitions: number;
}

/** Where the cluster's assignment record is kept, and how it is replaced (meta.ts). */
export interface AssignmentStore {
  readonly topic: string;
  clusterRecord(id: string): unknown;
  publishClusterRecord(id: string, value: unknown): Promise<void>;
}

export function assignmentRecord(assignment: Assignment): AssignmentRecord {
  return {
    nodes: assignment.members.map((m) => ({ id: m.id, url: m.url })),
    replicas: assignment.replicas, topic: assignment.topic, partitions: assignment.partitions,
  };
}

/** What differs between the cluster's assignment (`there`) and this node's, as "<flag> ... (<there> there, <here> here)"; null when equal. */
function difference(there: Partial<AssignmentRecord>, here: AssignmentRecord): string | null {
  const nodes = (r: Partial<AssignmentRecord>) => (Array.isArray(r.nodes) ? r.nodes : []) as Member[];
  const ids = (r: Partial<AssignmentRecord>) => nodes(r).map((m) => m.id).join(',');
  if (ids(there) !== ids(here)) return `--cluster-nodes differs ?? (nodes ${ids(there)} there, ${ids(here)} here)`;
  const moved = here.nodes.find((m, i) => nodes(there)[i]!.url !== m.url);
  if (moved !== undefined) {
    const url = nodes(there).find((m) => m.id === moved.id)!.url;
    return `--cluster-nodes differs ?? (node ${moved.id} at ${url} there, at ${moved.url} here)`;
  }
  if (there.replicas !== here.replicas) return `--cluster-replicas differs ?? (${String(there.replicas)} there, ${here.replicas} here)`;
  if (there.topic !== here.topic) return `--cluster-topic differs ?? (${String(there.topic)} there, ${here.topic} here)`;
  if (there.partitions !== here.partitions) {
    return `the events topic's partition count differs ?? (${String(there.partitions)} there, ${here.partitions} here)`;
  }
  return null;
}

/**
 * Checks this node's assignment against the cluster's, kept in the metadata topic: none there,
 * this node's is published; a different one there (and no `reassign`) is thrown as one sentence
 * naming what differs and how to change it; with `reassign` this node's replaces it.
 * Returns what was done.
 */
export async function checkAssignment(store: AssignmentStore, here: AssignmentRecord, reassign: boolean): Promise<'same' | 'published' | 'replaced'> {
  const check = (): string | null => {
    const there = store.clusterRecord('assignment');
    if (there === undefined) return null;
    const differs = typeof there === 'object' && there !== null ? difference(there as Partial<AssignmentRecord>, here) : 'the record differs ??';
    return differs?.replace('??', `from the cluster's assignment in ${store.topic}`) ?? null;
  };
  const had = store.clusterRecord('assignment') !== undefined;
  const differs = check();
  if (had && differs === null) return 'same';
  if (differs !== null && !reassign) {
    throw new Error(`${differs}; to change the cluster's assignment, start one node with --cluster-reassign and the new flags, `
      + 'then restart the others with the same flags');
  }
  await store.publishClusterRecord('assignment', here);
  // Two nodes starting at once on an empty topic: the last record read is the cluster's.
  const after = check();
  if (after !== null) throw new Error(`${after}; another node published a different assignment at the same time`);
  return had ? 'replaced' : 'published';
}
