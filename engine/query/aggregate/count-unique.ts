/**
 * count_unique: distinct present, non-null values per cell. Exact with a TripleSet of
 * (cell, 64-bit value key) while the query holds at most `exactMax` distinct entries; above it
 * force_exact → ApproximationRequiredError, else one HyperLogLog per cell. Strings are keyed by
 * two independent 32-bit hashes computed once per dictionary code, numbers by their float64 bits.
 */
import { assert } from '../../base/assert.js';
import { ApiError } from '../../base/errors.js';
import { HyperLogLog } from '../../sketch/hyperloglog.js';
import { TAG_BOOL, TAG_LIST, TAG_NUM, TAG_STR, type Column } from '../../storage/chunk.js';
import { SegmentColumn } from '../../storage/segment/decode-column.js';
import type { ColumnViews, DictKeys } from '../eval/columns.js';
import { PARTITION_BITS, PartitionedPairSet, TripleSet } from '../eval/hash-table.js';
import { PartialStateError, type StateReader, type StateWriter } from '../eval/state-io.js';
import { sketchHash, valueKeys, type KeyPair } from '../eval/value-key.js';
import { AggregateTag, growF64, remapF64, remapSparse, type Aggregator, type UpdateInput } from './types.js';

/** Which parts an encoded count_unique state holds (a bit each). */
const HAS_SINGLE = 1;
const HAS_SET = 2;
const HAS_SKETCHES = 4;

/** Cells × dictionary codes up to which a chunk deduplicates with a bitmap before hashing. */
const SEEN_BITMAP_MAX = 1 << 22;

export class CountUniqueAggregator implements Aggregator {
  /** Exact keys per cell with group_by or interval. */
  set: TripleSet | null = new TripleSet();
  /** Exact keys of the single cell without them (cache-friendly for one big count). */
  single: PartitionedPairSet | null = null;
  counts = new Float64Array(1);
  sketches: (HyperLogLog | undefined)[] | null = null;
  private precision = 14;
  private readonly pair: KeyPair = { hi: 0, lo: 0 };
  /**
   * Of the single cell: a bit per dense id (key-ids.ts) of the keys seen in segments whose
   * dictionaries have ids, added to `single` at once by drainIds; null when none is pending.
   */
  private idsSeen: Int32Array | null = null;
  private idsGeneration = -1;

  readonly codecTag = AggregateTag.count_unique;

  constructor(
    private readonly target: string,
    private readonly exactMax: number,
    private readonly forceExact: boolean,
    private readonly views: ColumnViews,
  ) {}

  /**
   * target: string, exactMax: f64, forceExact: u8, precision: u8, counts: f64[], parts: u8
   * (HAS_* bits), then each part present: single (PartitionedPairSet), set (TripleSet),
   * sketches: cells with a sketch: u32, (cell: u32, registers: u8[2^precision])*.
   */
  encode(writer: StateWriter): void {
    this.drainIds();
    writer.string(this.target);
    writer.f64(this.exactMax);
    writer.bool(this.forceExact);
    writer.u8(this.precision);
    writer.f64Array(this.counts);
    writer.u8((this.single !== null ? HAS_SINGLE : 0) | (this.set !== null ? HAS_SET : 0) |
      (this.sketches !== null ? HAS_SKETCHES : 0));
    this.single?.encode(writer);
    this.set?.encode(writer);
    if (this.sketches === null) return;
    writer.sparse(this.sketches, (sketch) => writer.u8Array(sketch.registers));
  }

  static decode(reader: StateReader, context: { readonly views: ColumnViews }): CountUniqueAggregator {
    const state = new CountUniqueAggregator(reader.string('target property'), reader.f64('exact distinct budget'),
      reader.bool('force_exact'), context.views);
    const precision = reader.u8('sketch precision');
    if (precision < 4 || precision > 16) throw new PartialStateError(`count_unique sketch precision ${precision}`);
    state.precision = precision;
    state.counts = reader.f64Array('distinct count per cell');
    const parts = reader.u8('count_unique parts');
    if ((parts & ~(HAS_SINGLE | HAS_SET | HAS_SKETCHES)) !== 0) throw new PartialStateError(`count_unique parts ${parts}`);
    state.single = (parts & HAS_SINGLE) !== 0 ? PartitionedPairSet.decode(reader) : null;
    state.set = (parts & HAS_SET) !== 0 ? TripleSet.decode(reader) : null;
    if ((parts & HAS_SKETCHES) === 0) return state;
    state.sketches = reader.sparse('sketch', () => {
      const registers = reader.u8Array('sketch registers');
      if (registers.length !== 1 << precision) {
        throw new PartialStateError(`a precision-${precision} sketch with ${registers.length} registers`);
      }
      return new HyperLogLog(precision, registers);
    });
    return state;
  }

  update(input: UpdateInput): void {
    const column = input.column;
    if (input.cells === null && this.set !== null && this.set.size === 0 && this.single === null) {
      this.single = new PartitionedPairSet();
    }
    if (column === undefined) return;
    this.counts = growF64(this.counts, input.cellCount);
    if (column.str !== null) this.updateStrings(column, input);
    const otherKinds = (1 << TAG_NUM) | (1 << TAG_BOOL) | (1 << TAG_LIST);
    if ((input.tagMask & otherKinds) !== 0) this.updateOthers(column, input);
    // Flushing in big batches is what makes the partitioned set fast: check the limit as of the
    // last flush here (the buffer bounds the overshoot), and exactly in check().
    if (this.single !== null && this.single.storedSize > this.exactMax) this.toSketches();
  }

  private updateOthers(column: Column, input: UpdateInput): void {
    const { tags, num, lists } = column;
    const { idx, n, cells } = input;
    const pair = this.pair;
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      const t = tags[i];
      if (t === TAG_NUM) valueKeys.number(num![i], pair);
      else if (t === TAG_BOOL) valueKeys.bool(num![i], pair);
      else if (t === TAG_LIST && lists![i] !== null) valueKeys.list(lists![i]!, pair);
      else continue;
      this.add(cells === null ? 0 : cells[k], pair.hi, pair.lo);
    }
  }

  private updateStrings(column: Column, input: UpdateInput): void {
    // A stored dictionary is hashed from its bytes; `dict` is only read for a buffer's strings.
    const { tags, str } = column as Column & { str: Int32Array };
    const stored = column instanceof SegmentColumn;
    const dict = stored ? null : column.dict!;
    const { idx, n, cells, cellCount } = input;
    const allRows = cells === null && input.dense && input.tagMask === 1 << TAG_STR;
    const ids = stored && cells === null && this.single !== null ? this.views.denseIds(column) : null;
    if (ids !== null) {
      this.markIds(ids, column, input, allRows && this.views.allCodesUsed(column));
      return;
    }
    const keys = stored ? this.views.storedKeys(column) : this.views.dictKeys(dict!);
    const width = stored ? column.dictSize : dict!.length;
    const cellsUsed = cells === null ? 1 : cellCount;
    if (allRows && stored && this.single !== null && this.views.allCodesUsed(column)) {
      // Every row, every entry used: the dictionary's keys are the column's distinct values.
      this.single.addKeys(keys.hi, keys.lo, width);
      return;
    }
    if (cellsUsed * width <= SEEN_BITMAP_MAX) {
      const seen = new Uint8Array(cellsUsed * width);
      if (allRows) {
        for (let i = 0; i < n; i++) seen[str[i]] = 1;
        if (stored && seen.indexOf(0) === -1) {
          this.views.markAllUsed(column);
          // As the loop below would add them (every code, in order), in runs.
          if (this.single !== null) {
            this.single.addKeys(keys.hi, keys.lo, width);
            return;
          }
        }
      } else if (cells === null) {
        for (let k = 0; k < n; k++) {
          const i = idx[k];
          if (tags[i] === TAG_STR) seen[str[i]] = 1;
        }
      } else {
        for (let k = 0; k < n; k++) {
          const i = idx[k];
          if (tags[i] === TAG_STR) seen[cells[k] * width + str[i]] = 1;
        }
      }
      for (let at = 0; at < seen.length; at++) {
        if (seen[at] === 0) continue;
        const code = at % width;
        this.ensureKey(keys, dict, code);
        this.add((at - code) / width, keys.hi[code], keys.lo[code]);
      }
      return;
    }
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      if (tags[i] !== TAG_STR) continue;
      const code = str[i];
      this.ensureKey(keys, dict, code);
      this.add(cells === null ? 0 : cells[k], keys.hi[code], keys.lo[code]);
    }
  }

  /** Distinct keys of the single cell as of the set's last flush (a lower bound; ids marked since not counted). */
  get storedSize(): number {
    return this.single?.storedSize ?? 0;
  }

  /**
   * The exact keys of the single cell (no group_by, no interval, never turned into sketches): the
   * distinct values' 64-bit keys, as a funnel step's actors (funnel.ts). An empty set before any update.
   */
  exactKeys(): PartitionedPairSet {
    this.drainIds();
    assert(this.sketches === null && (this.set === null || this.set.size === 0), 'exact keys of the single cell');
    return this.single ??= new PartitionedPairSet();
  }

  /** Sets the bits of the ids of the strings of rows idx[0 .. n) (of every code when `everyCode`). */
  private markIds(ids: Int32Array, column: Column, input: UpdateInput, everyCode: boolean): void {
    const keyIds = this.views.keyIds!;
    if (this.idsSeen !== null && this.idsGeneration !== keyIds.generation) this.drainIds();
    const limit = keyIds.idLimit;
    if (this.idsSeen === null || this.idsSeen.length * 32 < limit) {
      const grown = new Int32Array(Math.ceil(limit / 32));
      if (this.idsSeen !== null) grown.set(this.idsSeen);
      this.idsSeen = grown;
      this.idsGeneration = keyIds.generation;
    }
    const seen = this.idsSeen;
    if (everyCode) {
      for (let code = 0; code < ids.length; code++) seen[ids[code] >>> 5] |= 1 << (ids[code] & 31);
      return;
    }
    const { tags, str } = column as Column & { str: Int32Array };
    const { idx, n } = input;
    for (let k = 0; k < n; k++) {
      const i = idx[k];
      if (tags[i] !== TAG_STR) continue;
      const id = ids[str[i]];
      seen[id >>> 5] |= 1 << (id & 31);
    }
  }

  /** Adds the keys of the ids markIds set to the exact keys (they are distinct among themselves). */
  private drainIds(): void {
    const seen = this.idsSeen;
    if (seen === null) return;
    this.idsSeen = null;
    const keyIds = this.views.keyIds!;
    // The table changes only while a worker warms, never during a task (worker.ts runs one at a time).
    assert(this.idsGeneration === keyIds.generation, 'key ids kept their generation while a count used them');
    const hi = new Int32Array(keyIds.size);
    const lo = new Int32Array(keyIds.size);
    const starts = new Int32Array((1 << PARTITION_BITS) + 1);
    keyIds.keysOf(seen, hi, lo, starts);
    if (this.single !== null) {
      this.single.addPartitioned(hi, lo, starts);
      return;
    }
    for (let k = 0; k < starts[starts.length - 1]; k++) this.add(0, hi[k], lo[k]);
  }

  private ensureKey(keys: DictKeys, dict: readonly string[] | null, code: number): void {
    if (keys.done === null || keys.done[code] === 1) return;
    valueKeys.string(dict![code], this.pair);
    keys.hi[code] = this.pair.hi;
    keys.lo[code] = this.pair.lo;
    keys.done[code] = 1;
  }

  private add(cell: number, hi: number, lo: number): void {
    if (this.single !== null) {
      this.single.add(hi, lo);
      return;
    }
    if (this.set !== null) {
      if (this.set.add(cell, hi, lo)) {
        this.counts[cell]++;
        if (this.set.size > this.exactMax) this.toSketches();
      }
      return;
    }
    this.sketch(cell).add(sketchHash(hi, lo));
  }

  private sketch(cell: number): HyperLogLog {
    const sketches = this.sketches!;
    return sketches[cell] ?? (sketches[cell] = new HyperLogLog(this.precision));
  }

  private toSketches(): void {
    this.drainIds();
    if (this.single !== null) {
      const single = this.single;
      this.single = null;
      this.set = new TripleSet();
      single.forEach((hi, lo) => this.set!.add(0, hi, lo));
    }
    if (this.forceExact) {
      throw new ApiError('ApproximationRequiredError',
        `"${this.target}" has more than ${this.exactMax} distinct values, so count_unique can ` +
        'only estimate; drop force_exact or narrow the timeframe or filters');
    }
    const set = this.set!;
    let cellCount = 0;
    set.forEach((cell) => { if (cell >= cellCount) cellCount = cell + 1; });
    // 16 KiB sketches for up to 16 cells, smaller ones (higher error) for more cells.
    this.precision = Math.max(8, 14 - Math.max(0, Math.ceil(Math.log2(cellCount / 16))));
    this.sketches = [];
    this.set = null;
    set.forEach((cell, hi, lo) => this.sketch(cell).add(sketchHash(hi, lo)));
  }

  merge(other: Aggregator): void {
    const source = other as CountUniqueAggregator;
    this.drainIds();
    source.drainIds();
    if (source.single !== null && this.single === null && this.set !== null && this.set.size === 0) {
      this.single = new PartitionedPairSet();
    }
    if (source.single !== null && this.single !== null) {
      this.single.addAll(source.single);
      if (this.single.size > this.exactMax) this.toSketches();
      return;
    }
    if (source.single !== null) {
      source.single.forEach((hi, lo) => {
        if (this.single === null && this.set !== null && this.set.size === 0) this.single = new PartitionedPairSet();
        this.add(0, hi, lo);
      });
      if (this.single !== null && this.single.size > this.exactMax) this.toSketches();
      return;
    }
    if (source.set !== null) {
      source.set.forEach((cell, hi, lo) => {
        this.counts = growF64(this.counts, cell + 1);
        this.add(cell, hi, lo);
      });
      return;
    }
    if (this.set !== null) this.toSketches();
    // Each side sized its sketches for its own cell count (toSketches): merge at the smaller size.
    if (source.precision < this.precision) {
      this.sketches = this.sketches!.map((sketch) => sketch?.folded(source.precision));
      this.precision = source.precision;
    }
    source.sketches!.forEach((sketch, cell) => {
      if (sketch) this.sketch(cell).merge(sketch.precision > this.precision ? sketch.folded(this.precision) : sketch);
    });
  }

  finalize(cell: number): number {
    this.drainIds();
    if (this.single !== null) return cell === 0 ? this.single.size : 0;
    if (this.sketches !== null) return Math.round(this.sketches[cell]?.estimate() ?? 0);
    return cell < this.counts.length ? this.counts[cell] : 0;
  }

  check(): void {
    this.drainIds();
    if (this.single !== null && this.single.size > this.exactMax) this.toSketches();
  }

  remap(map: Int32Array): void {
    this.drainIds();
    if (this.single !== null) {
      // Only an ungrouped query holds `single`, and its one cell never moves.
      if (map.length > 0 && map[0] === 0) return;
      this.toExactSet();
    }
    this.counts = remapF64(this.counts, map);
    if (this.set !== null) {
      const set = this.set;
      this.set = new TripleSet();
      set.forEach((cell, hi, lo) => this.set!.add(map[cell], hi, lo));
    }
    if (this.sketches !== null) this.sketches = remapSparse(this.sketches, map);
  }

  private toExactSet(): void {
    this.drainIds();
    const single = this.single!;
    this.single = null;
    this.set = new TripleSet();
    this.counts = growF64(this.counts, 1);
    single.forEach((hi, lo) => {
      if (this.set!.add(0, hi, lo)) this.counts[0]++;
    });
  }
}
