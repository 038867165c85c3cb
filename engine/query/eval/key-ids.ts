/**
 * Dense ids for the 64-bit distinct keys of stored dictionaries (value-key.ts), one table per
 * query worker: a key gets the same id in every segment, so a distinct count over many segments
 * sets one bit per dictionary entry in a bitmap of ids (count-unique.ts) instead of inserting
 * every segment's keys into a hash set. A user id in 18 of 90 daily segments was hashed and
 * probed 18 times a query; with ids it is hashed once, when its segment is warmed, and each
 * query only sets bits. (Druid and ClickHouse get the same from dictionaries shared across
 * parts; here segments keep their own dictionaries and the worker maps them.)
 *
 * Ids are interleaved across 256 partitions by the key's hash (id = local << 8 | partition), so
 * assigning a dictionary's ids fills one small table at a time, in cache, and ids stay dense.
 * The table only grows. Past `maxBytes` it refuses new dictionaries (they take the hash path),
 * until it has refused as many keys as it holds: then it is cleared and its generation moves on
 * (ids of an older generation are never read again; ColumnViews drops them).
 */
import { PARTITION_BITS, pairHash } from './hash-table.js';

const PARTITIONS = 1 << PARTITION_BITS;
const SLOTS_MIN = 16;

/** One partition: open addressing (linear probing, at most half full), and its keys by local id. */
interface Part {
  /** The local id in each slot, -1 when empty. */
  slots: Int32Array;
  his: Int32Array;
  los: Int32Array;
  /** The key of each local id: (keyHi[l], keyLo[l]). */
  keyHi: Int32Array;
  keyLo: Int32Array;
  count: number;
}

function newPart(): Part {
  return {
    slots: new Int32Array(SLOTS_MIN).fill(-1), his: new Int32Array(SLOTS_MIN), los: new Int32Array(SLOTS_MIN),
    keyHi: new Int32Array(SLOTS_MIN / 2), keyLo: new Int32Array(SLOTS_MIN / 2), count: 0,
  };
}

function partBytes(part: Part): number {
  return 12 * part.slots.length + 8 * part.keyHi.length;
}

export class KeyIds {
  private parts: Part[] = [];
  private bytes = 0;
  /** Keys refused since the last clear (assign). */
  private refused = 0;
  /** Moves on each time the table is cleared; ids are only comparable within one generation. */
  generation = 0;

  /**
   * @param maxBytes what the table may take; past it, it is cleared.
   * @param grew told of each change of the table's bytes (the worker counts them in its cache).
   */
  constructor(private readonly maxBytes: number, private readonly grew: (bytes: number) => void = () => {}) {
    this.clear();
  }

  /** Ids are below this (the bitmap's size in bits). */
  get idLimit(): number {
    let most = 0;
    for (const part of this.parts) if (part.count > most) most = part.count;
    return most << PARTITION_BITS;
  }

  /** Distinct keys with an id. */
  get size(): number {
    let size = 0;
    for (const part of this.parts) size += part.count;
    return size;
  }

  /**
   * The id of each key (hi[k], lo[k]), k < count, assigning new ones; null when the new keys do
   * not fit in the table (see the class comment).
   */
  assign(hi: Int32Array, lo: Int32Array, count: number): Int32Array | null {
    const ids = new Int32Array(count).fill(-1);
    const hashes = new Int32Array(count);
    const starts = new Int32Array(PARTITIONS + 1);
    const shift = 32 - PARTITION_BITS;
    for (let k = 0; k < count; k++) {
      const hash = pairHash(hi[k], lo[k]);
      hashes[k] = hash;
      starts[(hash >>> shift) + 1]++;
    }
    for (let p = 0; p < PARTITIONS; p++) starts[p + 1] += starts[p];
    // The keys by partition, so each partition's table is probed while it is in cache.
    const order = new Int32Array(count);
    const next = starts.slice(0, PARTITIONS);
    for (let k = 0; k < count; k++) order[next[hashes[k] >>> shift]++] = k;
    let added = count;
    if (this.parts.length > 0) {
      added = 0;
      for (let p = 0; p < PARTITIONS; p++) added += this.find(p, order, starts[p], starts[p + 1], hi, lo, hashes, ids);
    }
    if (added === 0) return ids;
    // A partition's slots grow to at most four a key (12 bytes each), its keys by local id to at
    // most two (8 bytes each): 64 bytes a new key at most.
    if (64 * added > this.maxBytes) return null;
    if (this.bytes + 64 * added > this.maxBytes) {
      // Full: refused, until as many keys were refused as it holds (then what it holds is
      // likely of segments since merged or evicted, and it starts again), so a store with more
      // ids than fit does not clear it over and over, invalidating every dictionary's ids.
      this.refused += added;
      if (this.refused < this.size) return null;
      this.clear();
      ids.fill(-1);
    }
    const before = this.bytes;
    if (this.parts.length === 0) {
      this.parts = Array.from({ length: PARTITIONS }, newPart);
      this.bytes = this.parts.reduce((sum, part) => sum + partBytes(part), 0);
    }
    for (let p = 0; p < PARTITIONS; p++) {
      if (starts[p] === starts[p + 1]) continue;
      const part = this.parts[p];
      this.bytes -= partBytes(part);
      this.fill(part, p, order, starts[p], starts[p + 1], hi, lo, hashes, ids);
      this.bytes += partBytes(part);
    }
    if (this.bytes !== before) this.grew(this.bytes - before);
    return ids;
  }

  /** Sets the ids of the keys of partition p the table holds; returns how many it does not. */
  private find(p: number, order: Int32Array, from: number, to: number,
    hi: Int32Array, lo: Int32Array, hashes: Int32Array, ids: Int32Array): number {
    const { slots, his, los } = this.parts[p];
    const mask = slots.length - 1;
    let missing = 0;
    for (let at = from; at < to; at++) {
      const k = order[at];
      for (let s = hashes[k] & mask; ; s = (s + 1) & mask) {
        const local = slots[s];
        if (local === -1) {
          missing++;
          break;
        }
        if (his[s] === hi[k] && los[s] === lo[k]) {
          ids[k] = (local << PARTITION_BITS) | p;
          break;
        }
      }
    }
    return missing;
  }

  /**
   * The keys of the ids set in `bitmap` (a bit per id), into (hi, lo) grouped by partition:
   * those of partition p at starts[p] .. starts[p + 1]. A key's partition is the top bits of its
   * pairHash, as in a PartitionedPairSet, so it can take each group as it is (addPartitioned).
   */
  keysOf(bitmap: Int32Array, hi: Int32Array, lo: Int32Array, starts: Int32Array): void {
    let at = 0;
    for (let p = 0; p < PARTITIONS && this.parts.length > 0; p++) {
      starts[p] = at;
      const { keyHi, keyLo, count } = this.parts[p];
      for (let local = 0; local < count; local++) {
        const id = (local << PARTITION_BITS) | p;
        if ((bitmap[id >>> 5] & (1 << (id & 31))) === 0) continue;
        hi[at] = keyHi[local];
        lo[at] = keyLo[local];
        at++;
      }
    }
    starts.fill(at, this.parts.length > 0 ? PARTITIONS : 0);
  }

  private fill(part: Part, p: number, order: Int32Array, from: number, to: number,
    hi: Int32Array, lo: Int32Array, hashes: Int32Array, ids: Int32Array): void {
    for (let at = from; at < to; at++) {
      const k = order[at];
      if (ids[k] !== -1) continue;
      if (2 * (part.count + 1) > part.slots.length) growSlots(part);
      const mask = part.slots.length - 1;
      const h = hi[k];
      const l = lo[k];
      let s = hashes[k] & mask;
      for (; ; s = (s + 1) & mask) {
        const local = part.slots[s];
        if (local === -1) break;
        if (part.his[s] === h && part.los[s] === l) {
          ids[k] = (local << PARTITION_BITS) | p;
          break;
        }
      }
      if (part.slots[s] !== -1) continue;
      const local = part.count++;
      if (local === part.keyHi.length) growKeys(part);
      part.slots[s] = local;
      part.his[s] = h;
      part.los[s] = l;
      part.keyHi[local] = h;
      part.keyLo[local] = l;
      ids[k] = (local << PARTITION_BITS) | p;
    }
  }

  /** Empties the table (its partitions are made by the next assign, so an unused table takes nothing). */
  private clear(): void {
    const released = this.bytes;
    this.parts = [];
    this.bytes = 0;
    this.refused = 0;
    this.generation++;
    if (released !== 0) this.grew(-released);
  }
}

function growSlots(part: Part): void {
  const { slots, his, los } = part;
  const capacity = 2 * slots.length;
  part.slots = new Int32Array(capacity).fill(-1);
  part.his = new Int32Array(capacity);
  part.los = new Int32Array(capacity);
  const mask = capacity - 1;
  for (let s = 0; s < slots.length; s++) {
    if (slots[s] === -1) continue;
    let t = pairHash(his[s], los[s]) & mask;
    while (part.slots[t] !== -1) t = (t + 1) & mask;
    part.slots[t] = slots[s];
    part.his[t] = his[s];
    part.los[t] = los[s];
  }
}

function growKeys(part: Part): void {
  const keyHi = new Int32Array(2 * part.keyHi.length);
  const keyLo = new Int32Array(2 * part.keyLo.length);
  keyHi.set(part.keyHi);
  keyLo.set(part.keyLo);
  part.keyHi = keyHi;
  part.keyLo = keyLo;
}
