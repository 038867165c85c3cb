/**
 * standard_deviation: population standard deviation of the numeric values per cell, null over
 * none. Welford's running mean and M2 per cell; merged with Chan's parallel formula.
 */
import { NumericGather } from './numeric.js';
import { PartialStateError, type StateReader, type StateWriter } from '../eval/state-io.js';
import { AggregateTag, growF64, remapF64, type Aggregator, type UpdateInput } from './types.js';

export class StandardDeviationAggregator implements Aggregator {
  counts = new Float64Array(1);
  means = new Float64Array(1);
  m2s = new Float64Array(1);
  readonly gather = new NumericGather();

  readonly codecTag = AggregateTag.standard_deviation;

  constructor(private readonly target: string) {}

  /** target: string, gather, counts: f64[], means: f64[], m2s: f64[] */
  encode(writer: StateWriter): void {
    writer.string(this.target);
    this.gather.encode(writer);
    writer.f64Array(this.counts);
    writer.f64Array(this.means);
    writer.f64Array(this.m2s);
  }

  static decode(reader: StateReader): StandardDeviationAggregator {
    const state = new StandardDeviationAggregator(reader.string('target property'));
    state.gather.decodeInto(reader);
    state.counts = reader.f64Array('count per cell');
    state.means = reader.f64Array('mean per cell');
    state.m2s = reader.f64Array('M2 per cell');
    if (state.means.length !== state.counts.length || state.m2s.length !== state.counts.length) {
      throw new PartialStateError('standard_deviation: counts, means and M2s differ in length');
    }
    return state;
  }

  update(input: UpdateInput): void {
    this.gather.gather(input);
    this.counts = growF64(this.counts, input.cellCount);
    this.means = growF64(this.means, input.cellCount);
    this.m2s = growF64(this.m2s, input.cellCount);
    const { values, cells, count } = this.gather;
    const { counts, means, m2s } = this;
    const single = input.cells === null;
    for (let k = 0; k < count; k++) {
      const c = single ? 0 : cells[k];
      const x = values[k];
      const seen = ++counts[c];
      const delta = x - means[c];
      means[c] += delta / seen;
      m2s[c] += delta * (x - means[c]);
    }
  }

  merge(other: Aggregator): void {
    const source = other as StandardDeviationAggregator;
    this.gather.merge(source.gather);
    const size = source.counts.length;
    this.counts = growF64(this.counts, size);
    this.means = growF64(this.means, size);
    this.m2s = growF64(this.m2s, size);
    for (let c = 0; c < size; c++) {
      const nb = source.counts[c];
      if (nb === 0) continue;
      const na = this.counts[c];
      const total = na + nb;
      const delta = source.means[c] - this.means[c];
      this.means[c] += (delta * nb) / total;
      this.m2s[c] += source.m2s[c] + (delta * delta * na * nb) / total;
      this.counts[c] = total;
    }
  }

  finalize(cell: number): number | null {
    if (cell >= this.counts.length || this.counts[cell] === 0) return null;
    return Math.sqrt(this.m2s[cell] / this.counts[cell]);
  }

  check(): void {
    this.gather.check(this.target);
  }

  remap(map: Int32Array): void {
    this.counts = remapF64(this.counts, map);
    this.means = remapF64(this.means, map);
    this.m2s = remapF64(this.m2s, map);
  }
}
