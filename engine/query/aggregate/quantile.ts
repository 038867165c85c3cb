/**
 * The shared state of median and percentile: every numeric value with its cell, exact while the
 * query holds at most `exactMax` values (linear interpolation between closest ranks), then one
 * QuantileSketch per cell. Null over no values.
 */
import { NumericGather } from './numeric.js';
import { QuantileSketch } from './quantile-sketch.js';
import { PartialStateError, type StateReader, type StateWriter } from '../eval/state-io.js';
import { AggregateTag, remapSparse, type Aggregator, type UpdateInput } from './types.js';

export class QuantileAggregator implements Aggregator {
  readonly codecTag: AggregateTag = AggregateTag.percentile;
  values = new Float64Array(1024);
  cells = new Int32Array(1024);
  count = 0;
  sketches: (QuantileSketch | undefined)[] | null = null;
  readonly gather = new NumericGather();
  private sorted: { starts: Int32Array; values: Float64Array } | null = null;

  constructor(
    private readonly target: string,
    private readonly percentile: number,
    private readonly exactMax: number,
  ) {}

  /**
   * target: string, percentile: f64, exactMax: f64, gather, values: f64[count], cells: i32[count],
   * sketched: u8, then when sketched: cells with a sketch: u32, (cell: u32, QuantileSketch)*.
   */
  encode(writer: StateWriter): void {
    writer.string(this.target);
    writer.f64(this.percentile);
    writer.f64(this.exactMax);
    this.gather.encode(writer);
    writer.f64Array(this.values.subarray(0, this.count));
    writer.i32Array(this.cells.subarray(0, this.count));
    writer.bool(this.sketches !== null);
    if (this.sketches === null) return;
    writer.sparse(this.sketches, (sketch) => sketch.encode(writer));
  }

  /** The parameters encode wrote first (the subclass's decode constructs with them). */
  protected static decodeParameters(reader: StateReader): { target: string; percentile: number; exactMax: number } {
    const target = reader.string('target property');
    const percentile = reader.f64('percentile');
    const exactMax = reader.f64('exact value budget');
    if (!(percentile >= 0 && percentile <= 100)) throw new PartialStateError(`percentile ${percentile} is not within 0..100`);
    return { target, percentile, exactMax };
  }

  /** Fills a fresh state from what encode wrote after the parameters. */
  protected decodeInto(reader: StateReader): this {
    this.gather.decodeInto(reader);
    this.values = reader.f64Array('values');
    this.cells = reader.i32Array('cells of the values');
    if (this.cells.length !== this.values.length) {
      throw new PartialStateError(`quantile: ${this.values.length} values but ${this.cells.length} cells`);
    }
    this.count = this.values.length;
    for (let k = 0; k < this.count; k++) {
      if (this.cells[k] < 0) throw new PartialStateError(`quantile: negative cell ${this.cells[k]}`);
    }
    if (!reader.bool('whether the values are sketched')) return this;
    this.sketches = reader.sparse('sketch', () => QuantileSketch.decode(reader));
    return this;
  }

  update(input: UpdateInput): void {
    this.gather.gather(input);
    const { values, cells, count } = this.gather;
    const single = input.cells === null;
    if (this.sketches === null && this.count + count > this.exactMax) this.toSketches();
    if (this.sketches !== null) {
      for (let k = 0; k < count; k++) this.sketch(single ? 0 : cells[k]).add(values[k]);
      return;
    }
    this.reserve(this.count + count);
    this.values.set(values.subarray(0, count), this.count);
    if (single) this.cells.fill(0, this.count, this.count + count);
    else this.cells.set(cells.subarray(0, count), this.count);
    this.count += count;
  }

  private reserve(size: number): void {
    if (this.values.length >= size) return;
    const capacity = Math.max(size, this.values.length * 2);
    const values = new Float64Array(capacity);
    const cells = new Int32Array(capacity);
    values.set(this.values.subarray(0, this.count));
    cells.set(this.cells.subarray(0, this.count));
    this.values = values;
    this.cells = cells;
  }

  private sketch(cell: number): QuantileSketch {
    const sketches = this.sketches!;
    return sketches[cell] ?? (sketches[cell] = new QuantileSketch());
  }

  private toSketches(): void {
    this.sketches = [];
    for (let k = 0; k < this.count; k++) this.sketch(this.cells[k]).add(this.values[k]);
    this.values = new Float64Array(0);
    this.cells = new Int32Array(0);
    this.count = 0;
  }

  merge(other: Aggregator): void {
    const source = other as QuantileAggregator;
    this.gather.merge(source.gather);
    this.sorted = null;
    if (this.sketches === null && source.sketches === null && this.count + source.count <= this.exactMax) {
      this.reserve(this.count + source.count);
      this.values.set(source.values.subarray(0, source.count), this.count);
      this.cells.set(source.cells.subarray(0, source.count), this.count);
      this.count += source.count;
      return;
    }
    if (this.sketches === null) this.toSketches();
    for (let k = 0; k < source.count; k++) this.sketch(source.cells[k]).add(source.values[k]);
    source.sketches?.forEach((sketch, cell) => {
      if (sketch) this.sketch(cell).merge(sketch);
    });
  }

  finalize(cell: number): number | null {
    const q = this.percentile / 100;
    if (this.sketches !== null) return this.sketches[cell]?.quantile(q) ?? null;
    if (this.singleCell()) return cell === 0 ? quantileOf(this.values.subarray(0, this.count), q) : null;
    const sorted = this.sorted ?? (this.sorted = this.sortByCell());
    if (cell + 1 >= sorted.starts.length) return null;
    const start = sorted.starts[cell];
    const length = sorted.starts[cell + 1] - start;
    if (length === 0) return null;
    const position = q * (length - 1);
    const low = Math.floor(position);
    const lowValue = sorted.values[start + low];
    if (low + 1 >= length) return lowValue;
    return lowValue + (sorted.values[start + low + 1] - lowValue) * (position - low);
  }

  private singleCell(): boolean {
    for (let k = 0; k < this.count; k++) if (this.cells[k] !== 0) return false;
    return true;
  }

  /** Counting sort by cell, then a native sort of each cell's values. */
  private sortByCell(): { starts: Int32Array; values: Float64Array } {
    let cellCount = 0;
    for (let k = 0; k < this.count; k++) if (this.cells[k] >= cellCount) cellCount = this.cells[k] + 1;
    const starts = new Int32Array(cellCount + 1);
    for (let k = 0; k < this.count; k++) starts[this.cells[k] + 1]++;
    for (let c = 0; c < cellCount; c++) starts[c + 1] += starts[c];
    const next = starts.slice(0, cellCount);
    const values = new Float64Array(this.count);
    for (let k = 0; k < this.count; k++) values[next[this.cells[k]]++] = this.values[k];
    for (let c = 0; c < cellCount; c++) values.subarray(starts[c], starts[c + 1]).sort();
    return { starts, values };
  }

  check(): void {
    this.gather.check(this.target);
  }

  remap(map: Int32Array): void {
    for (let k = 0; k < this.count; k++) this.cells[k] = map[this.cells[k]];
    if (this.sketches !== null) this.sketches = remapSparse(this.sketches, map);
    this.sorted = null;
  }
}

/** The q-quantile of `values` (reordered in place) by selection, interpolating between ranks. */
function quantileOf(values: Float64Array, q: number): number | null {
  const length = values.length;
  if (length === 0) return null;
  const position = q * (length - 1);
  const low = Math.floor(position);
  selectKth(values, low);
  const lowValue = values[low];
  if (low + 1 >= length || position === low) return lowValue;
  let next = Infinity;
  for (let k = low + 1; k < length; k++) if (values[k] < next) next = values[k];
  return lowValue + (next - lowValue) * (position - low);
}

/** Reorders `a` so a[k] is the k-th smallest, smaller ones before it and larger after (Hoare). */
function selectKth(a: Float64Array, k: number): void {
  let left = 0;
  let right = a.length - 1;
  while (right > left) {
    const pivot = median3(a[left], a[(left + right) >>> 1], a[right]);
    let i = left;
    let j = right;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const swap = a[i];
        a[i] = a[j];
        a[j] = swap;
        i++;
        j--;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else return;
  }
}

function median3(a: number, b: number, c: number): number {
  return a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
}
