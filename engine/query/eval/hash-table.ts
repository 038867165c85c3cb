/**
 * Open-addressing hash tables over typed arrays, for the scan's hot loops: TripleSet (cell, hi,
 * lo) and the pair sets of 64-bit keys for exact distinct counting (and a funnel's actors), and
 * number-map.ts's NumberMap. Linear probing, power-of-two capacity, grown at half load. No JS
 * Map/Set and no per-entry objects.
 */
import { PartialStateError, type StateReader, type StateWriter } from './state-io.js';

export const INITIAL_CAPACITY = 1024;

export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * A set of (cell, hi, lo) triples: `cell` a non-negative integer below 2^31, (hi, lo) a 64-bit
 * value key (float64 bits of a number, or two independent 32-bit hashes of a string).
 */
export class TripleSet {
  private cells = new Int32Array(INITIAL_CAPACITY).fill(-1);
  private his = new Int32Array(INITIAL_CAPACITY);
  private los = new Int32Array(INITIAL_CAPACITY);
  size = 0;

  /** Adds the triple; true when it was not there yet. */
  add(cell: number, hi: number, lo: number): boolean {
    if ((this.size + 1) * 2 > this.cells.length) this.grow();
    const mask = this.cells.length - 1;
    let s = mix32(Math.imul(cell, 0x27d4eb2d) ^ hi ^ Math.imul(lo, 0x9e3779b1)) & mask;
    for (; ; s = (s + 1) & mask) {
      const c = this.cells[s];
      if (c === -1) {
        this.cells[s] = cell;
        this.his[s] = hi;
        this.los[s] = lo;
        this.size++;
        return true;
      }
      if (c === cell && this.his[s] === hi && this.los[s] === lo) return false;
    }
  }

  /**
   * size: u32, then the slots as they are: cells: i32[capacity] (-1 empty), his, los. The slot
   * layout (mix32 of the triple, linear probing) is part of the wire format: decoding views the
   * arrays without rehashing, so a change to the hash needs a new format version.
   */
  encode(writer: StateWriter): void {
    writer.u32(this.size);
    writer.i32Array(this.cells);
    writer.i32Array(this.his);
    writer.i32Array(this.los);
  }

  static decode(reader: StateReader): TripleSet {
    const size = reader.u32('set size');
    const cells = reader.i32Array('set cells');
    const his = reader.i32Array('set key highs');
    const los = reader.i32Array('set key lows');
    checkSlots(cells.length, [his.length, los.length], 'a triple set');
    let used = 0;
    for (let s = 0; s < cells.length; s++) {
      if (cells[s] >= 0) used++;
      else if (cells[s] !== -1) throw new PartialStateError(`a triple set with cell ${cells[s]}`);
    }
    if (used !== size || (size + 1) * 2 > cells.length + 2) throw new PartialStateError(`a triple set of size ${size} with ${used} of ${cells.length} slots used`);
    const set = new TripleSet();
    set.cells = cells;
    set.his = his;
    set.los = los;
    set.size = size;
    return set;
  }

  /** Calls fn for every triple (used when switching to sketches). */
  forEach(fn: (cell: number, hi: number, lo: number) => void): void {
    for (let s = 0; s < this.cells.length; s++) {
      if (this.cells[s] !== -1) fn(this.cells[s], this.his[s], this.los[s]);
    }
  }

  private grow(): void {
    const { cells, his, los } = this;
    const capacity = cells.length * 2;
    this.cells = new Int32Array(capacity).fill(-1);
    this.his = new Int32Array(capacity);
    this.los = new Int32Array(capacity);
    this.size = 0;
    for (let s = 0; s < cells.length; s++) if (cells[s] !== -1) this.add(cells[s], his[s], los[s]);
  }
}

/** Refuses slot arrays of a hash table that are not one power-of-two capacity. */
function checkSlots(capacity: number, others: number[], what: string): void {
  if (capacity < 1 || (capacity & (capacity - 1)) !== 0 || others.some((length) => length !== capacity)) {
    throw new PartialStateError(`${what} with slot arrays of ${[capacity, ...others].join(', ')} entries`);
  }
}

/** The hash of a 64-bit key (hi, lo): its top bits pick a partition, the rest a slot. */
export function pairHash(hi: number, lo: number): number {
  return mix32(hi ^ Math.imul(lo, 0x9e3779b1));
}

/** A set of 64-bit keys (hi, lo); `used` marks slots because (0, 0) is a valid key. */
export class PairSet {
  his = new Int32Array(64);
  los = new Int32Array(64);
  used = new Uint8Array(64);
  size = 0;

  add(hi: number, lo: number): void {
    this.addHashed(hi, lo, pairHash(hi, lo));
  }

  /** add() with the key's pairHash already computed. */
  addHashed(hi: number, lo: number, hash: number): void {
    if ((this.size + 1) * 2 > this.his.length) this.grow();
    const mask = this.his.length - 1;
    for (let s = hash & mask; ; s = (s + 1) & mask) {
      if (this.used[s] === 0) {
        this.used[s] = 1;
        this.his[s] = hi;
        this.los[s] = lo;
        this.size++;
        return;
      }
      if (this.his[s] === hi && this.los[s] === lo) return;
    }
  }

  /** addHashed of each (hi, lo, hash) of triples[from .. to), with the set's arrays held in locals. */
  addTriples(triples: Int32Array, from: number, to: number): void {
    let { his, los, used, size } = this;
    let mask = his.length - 1;
    for (let at = from; at < to; at += 3) {
      if ((size + 1) * 2 > his.length) {
        this.size = size;
        this.grow();
        ({ his, los, used, size } = this);
        mask = his.length - 1;
      }
      const hi = triples[at];
      const lo = triples[at + 1];
      for (let s = triples[at + 2] & mask; ; s = (s + 1) & mask) {
        if (used[s] === 0) {
          used[s] = 1;
          his[s] = hi;
          los[s] = lo;
          size++;
          break;
        }
        if (his[s] === hi && los[s] === lo) break;
      }
    }
    this.size = size;
  }

  forEach(fn: (hi: number, lo: number) => void): void {
    for (let s = 0; s < this.his.length; s++) if (this.used[s] === 1) fn(this.his[s], this.los[s]);
  }

  has(hi: number, lo: number): boolean {
    return this.hasHashed(hi, lo, pairHash(hi, lo));
  }

  /** Empties the set, keeping its slots (a scratch set reused). */
  clear(): void {
    this.used.fill(0);
    this.size = 0;
  }

  /** Whether the set holds (hi, lo), whose pairHash is `hash`. */
  hasHashed(hi: number, lo: number, hash: number): boolean {
    const mask = this.his.length - 1;
    for (let s = hash & mask; ; s = (s + 1) & mask) {
      if (this.used[s] === 0) return false;
      if (this.his[s] === hi && this.los[s] === lo) return true;
    }
  }

  /** size: u32, then the slots as they are (his, los: i32[capacity], used: u8[capacity]); see TripleSet.encode. */
  encode(writer: StateWriter): void {
    writer.u32(this.size);
    writer.i32Array(this.his);
    writer.i32Array(this.los);
    writer.u8Array(this.used);
  }

  static decode(reader: StateReader): PairSet {
    const size = reader.u32('key set size');
    const his = reader.i32Array('key highs');
    const los = reader.i32Array('key lows');
    const used = reader.u8Array('used slots');
    checkSlots(his.length, [los.length, used.length], 'a key set');
    let count = 0;
    for (let s = 0; s < used.length; s++) {
      if (used[s] > 1) throw new PartialStateError(`a key set with used flag ${used[s]}`);
      count += used[s];
    }
    if (count !== size || (size + 1) * 2 > his.length + 2) throw new PartialStateError(`a key set of size ${size} with ${count} of ${his.length} slots used`);
    const set = new PairSet();
    set.his = his;
    set.los = los;
    set.used = used;
    set.size = size;
    return set;
  }

  /** Grows the slots at once for `more` keys beyond those held, rather than step by step. */
  reserve(more: number): void {
    let capacity = this.his.length;
    while (capacity < 2 * (this.size + more)) capacity *= 2;
    if (capacity > this.his.length) this.rehash(capacity);
  }

  /** Adds every key of `other`. */
  addAll(other: PairSet): void {
    const { his, los, used } = other;
    for (let s = 0; s < his.length; s++) if (used[s] === 1) this.add(his[s], los[s]);
  }

  private grow(): void {
    this.rehash(this.his.length * 2);
  }

  private rehash(capacity: number): void {
    const { his, los, used } = this;
    this.his = new Int32Array(capacity);
    this.los = new Int32Array(capacity);
    this.used = new Uint8Array(capacity);
    this.size = 0;
    for (let s = 0; s < his.length; s++) if (used[s] === 1) this.add(his[s], los[s]);
  }
}

/** A PartitionedPairSet's partitions (and KeyIds', key-ids.ts): the top bits of a key's pairHash. */
export const PARTITION_BITS = 8;
/** Keys buffered before they are sorted into partitions; bounds the buffer at 4 MiB. */
const PENDING_MAX = 1 << 19;
const PENDING_MIN = 1 << 12;
/**
 * Keys a PartitionedPairSet holds in one PairSet before it partitions them. Its 256 partitions
 * are 768 typed arrays, each an allocation (~10 µs) and, in a fanned-out query, an ArrayBuffer to
 * post and rebuild: a count_unique of 50 countries spent ~8 ms a query making them. A set this
 * small fits in cache whole, so partitioning buys it nothing.
 */
const SMALL_KEYS_MAX = 1 << 14;

/**
 * A large set of 64-bit keys built cache-friendly: keys are buffered, then radix-partitioned by
 * hash into 256 small PairSets, each of which fits in cache while it is filled. For one big
 * distinct count (count_unique without group_by) this avoids a cache miss per key. Up to
 * SMALL_KEYS_MAX keys live in one PairSet instead, made partitioned when they outgrow it.
 */
export class PartitionedPairSet {
  /** The keys while there are few of them; null once `parts` holds them. */
  private small: PairSet | null = new PairSet();
  private parts: PairSet[] | null = null;
  // The key buffer grows from small to PENDING_MAX: a count_unique of a few values need not
  // allocate (and the GC then sweep) 4 MiB per query.
  private pendingHi = new Int32Array(PENDING_MIN);
  private pendingLo = new Int32Array(PENDING_MIN);
  private pending = 0;
  private stored = 0;

  add(hi: number, lo: number): void {
    if (this.pending === this.pendingHi.length) this.growPending();
    this.pendingHi[this.pending] = hi;
    this.pendingLo[this.pending] = lo;
    if (++this.pending === PENDING_MAX) this.flush();
  }

  /** add() of (hi[k], lo[k]) for k < count, copied into the key buffer in runs. */
  addKeys(hi: Int32Array, lo: Int32Array, count: number): void {
    let from = 0;
    while (from < count) {
      if (this.pending === this.pendingHi.length) this.growPending();
      const take = Math.min(count - from, this.pendingHi.length - this.pending);
      this.pendingHi.set(hi.subarray(from, from + take), this.pending);
      this.pendingLo.set(lo.subarray(from, from + take), this.pending);
      this.pending += take;
      from += take;
      if (this.pending === PENDING_MAX) this.flush();
    }
  }

  private growPending(): void {
    const size = Math.min(PENDING_MAX, Math.max(PENDING_MIN, 4 * this.pendingHi.length));
    const hi = new Int32Array(size);
    const lo = new Int32Array(size);
    hi.set(this.pendingHi.subarray(0, this.pending));
    lo.set(this.pendingLo.subarray(0, this.pending));
    this.pendingHi = hi;
    this.pendingLo = lo;
  }

  /** Distinct keys as of the last flush (a lower bound), without flushing. */
  get storedSize(): number {
    return this.stored;
  }

  /** Distinct keys so far (flushes the buffer). */
  get size(): number {
    this.flush();
    return this.stored;
  }

  /** The partitions in order, once the keys are in them (flushes the buffer); null while they are in one small set. */
  get partitions(): readonly PairSet[] | null {
    this.flush();
    return this.parts;
  }

  /** Whether the keys are in partitions (else in one small set). */
  get partitioned(): boolean {
    return this.parts !== null;
  }

  forEach(fn: (hi: number, lo: number) => void): void {
    this.flush();
    if (this.small !== null) this.small.forEach(fn);
    else for (const part of this.parts!) part.forEach(fn);
  }

  /** Adds every key of `other`, partition by partition when both are partitioned. */
  addAll(other: PartitionedPairSet): void {
    this.flush();
    other.flush();
    if (other.small !== null) {
      other.small.forEach((hi, lo) => this.add(hi, lo));
      this.flush();
      return;
    }
    this.eachPart((part, p) => part.addAll(other.parts![p]));
  }

  /**
   * Adds keys distinct from each other grouped by partition: (hi, lo)[starts[p] .. starts[p + 1])
   * are those whose pairHash's top PARTITION_BITS are p (key-ids.ts keysOf), each partition's
   * slots grown once for them.
   */
  addPartitioned(hi: Int32Array, lo: Int32Array, starts: Int32Array): void {
    this.flush();
    const total = starts[starts.length - 1];
    if (this.small !== null && this.small.size + total <= SMALL_KEYS_MAX) {
      this.addKeys(hi, lo, total);
      this.flush();
      return;
    }
    this.eachPart((part, p) => {
      part.reserve(starts[p + 1] - starts[p]);
      for (let k = starts[p]; k < starts[p + 1]; k++) part.add(hi[k], lo[k]);
    });
  }

  /** Partitions the keys (for good), calls `fill` with each partition, then counts the keys held. */
  private eachPart(fill: (part: PairSet, p: number) => void): void {
    this.partition();
    const parts = this.parts!;
    let stored = 0;
    for (let p = 0; p < parts.length; p++) {
      fill(parts[p], p);
      stored += parts[p].size;
    }
    this.stored = stored;
  }

  /** partitioned: u8, then the small set, or the partition count: u32 and each partition (PairSet.encode). */
  encode(writer: StateWriter): void {
    this.flush();
    writer.bool(this.parts !== null);
    if (this.small !== null) {
      this.small.encode(writer);
      return;
    }
    writer.u32(this.parts!.length);
    for (const part of this.parts!) part.encode(writer);
  }

  static decode(reader: StateReader): PartitionedPairSet {
    const set = new PartitionedPairSet();
    if (!reader.bool('whether the keys are partitioned')) {
      set.small = PairSet.decode(reader);
      set.stored = set.small.size;
      return set;
    }
    const count = reader.u32('partition count');
    if (count !== 1 << PARTITION_BITS) throw new PartialStateError(`${count} key partitions, not ${1 << PARTITION_BITS}`);
    set.small = null;
    set.parts = [];
    set.stored = 0;
    for (let p = 0; p < count; p++) {
      const part = PairSet.decode(reader);
      set.parts.push(part);
      set.stored += part.size;
    }
    return set;
  }

  /** Moves the keys of the small set into partitions (from now on, for good), with the buffered ones. */
  private partition(): void {
    const small = this.small;
    if (small === null) return;
    this.small = null;
    this.parts = Array.from({ length: 1 << PARTITION_BITS }, () => new PairSet());
    this.stored = 0;
    small.forEach((hi, lo) => this.add(hi, lo));
    this.flush();
  }

  private flush(): void {
    const n = this.pending;
    if (n === 0) return;
    const small = this.small;
    if (small !== null) {
      // Into the small set, until a key past SMALL_KEYS_MAX: then its keys and the buffered
      // keys not yet added go to partitions. Repeated keys (a value in many segments) cost nothing.
      const { pendingHi, pendingLo } = this;
      for (let k = 0; k < n; k++) {
        small.add(pendingHi[k], pendingLo[k]);
        if (small.size > SMALL_KEYS_MAX) {
          pendingHi.copyWithin(0, k + 1, n);
          pendingLo.copyWithin(0, k + 1, n);
          this.pending = n - k - 1;
          this.partition();
          return;
        }
      }
      this.pending = 0;
      this.stored = small.size;
      return;
    }
    // Radix-partition the buffered keys with their hashes (interleaved hi, lo, hash: one write
    // stream per partition), then fill each partition's small set while it is in cache. Each
    // key is hashed once: its top bits pick the partition, the rest its slot.
    const parts = this.parts!;
    const shift = 32 - PARTITION_BITS;
    const { hashes, triples } = flushScratch();
    const pendingHi = this.pendingHi;
    const pendingLo = this.pendingLo;
    const starts = new Int32Array((1 << PARTITION_BITS) + 1);
    for (let k = 0; k < n; k++) {
      const hash = pairHash(pendingHi[k], pendingLo[k]);
      hashes[k] = hash;
      starts[(hash >>> shift) + 1]++;
    }
    for (let p = 0; p < 1 << PARTITION_BITS; p++) starts[p + 1] += starts[p];
    const next = starts.slice(0, 1 << PARTITION_BITS);
    for (let k = 0; k < n; k++) {
      const hash = hashes[k];
      const at = 3 * next[hash >>> shift]++;
      triples[at] = pendingHi[k];
      triples[at + 1] = pendingLo[k];
      triples[at + 2] = hash;
    }
    let stored = 0;
    for (let p = 0; p < 1 << PARTITION_BITS; p++) {
      const part = parts[p];
      part.addTriples(triples, 3 * starts[p], 3 * starts[p + 1]);
      stored += part.size;
    }
    this.stored = stored;
    this.pending = 0;
  }
}

/** flush()'s buffers, shared by every set of the thread (flush is synchronous). */
let scratchBuffers: { hashes: Int32Array; triples: Int32Array } | null = null;

function flushScratch(): { hashes: Int32Array; triples: Int32Array } {
  return scratchBuffers ??= { hashes: new Int32Array(PENDING_MAX), triples: new Int32Array(3 * PENDING_MAX) };
}
