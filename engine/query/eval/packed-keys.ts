/**
 * A set of 64-bit keys packed for another thread and for work a partition at a time: the keys
 * (hi, lo interleaved) grouped by the top PARTITION_BITS of their pairHash, as PartitionedPairSet
 * groups them, with where each group starts. A funnel's shares post their steps' actors so
 * (funnel.ts), and the coordinator unites and intersects them a partition at a time, each
 * partition's keys few enough to stay in cache.
 */
import { PARTITION_BITS, pairHash, type PartitionedPairSet } from './hash-table.js';

export const PARTITIONS = 1 << PARTITION_BITS;

export interface PackedKeys {
  /** keys[2k], keys[2k + 1]: the hi and lo of key k. */
  readonly keys: Int32Array;
  /** The keys of partition p are k in [starts[p], starts[p + 1]); PARTITIONS + 1 entries. */
  readonly starts: Int32Array;
}

export function packKeys(set: PartitionedPairSet): PackedKeys {
  const parts = set.partitions;
  if (parts !== null) {
    // Partitioned already: each partition's keys as they lie.
    const starts = new Int32Array(PARTITIONS + 1);
    for (let p = 0; p < PARTITIONS; p++) starts[p + 1] = starts[p] + parts[p].size;
    const keys = new Int32Array(2 * starts[PARTITIONS]);
    let at = 0;
    for (const { his, los, used } of parts) {
      for (let s = 0; s < used.length; s++) {
        if (used[s] === 0) continue;
        keys[at++] = his[s];
        keys[at++] = los[s];
      }
    }
    return { keys, starts };
  }
  // A few keys in one set: sorted by partition.
  const size = set.size;
  const partition = new Uint8Array(size);
  const flat = new Int32Array(2 * size);
  const starts = new Int32Array(PARTITIONS + 1);
  let k = 0;
  set.forEach((hi, lo) => {
    const p = pairHash(hi, lo) >>> (32 - PARTITION_BITS);
    partition[k] = p;
    flat[2 * k] = hi;
    flat[2 * k + 1] = lo;
    starts[p + 1]++;
    k++;
  });
  for (let p = 0; p < PARTITIONS; p++) starts[p + 1] += starts[p];
  const next = starts.slice(0, PARTITIONS);
  const keys = new Int32Array(2 * size);
  for (let at = 0; at < size; at++) {
    const to = 2 * next[partition[at]]++;
    keys[to] = flat[2 * at];
    keys[to + 1] = flat[2 * at + 1];
  }
  return { keys, starts };
}
