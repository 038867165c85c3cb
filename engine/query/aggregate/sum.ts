/** sum: total of the numeric values per cell; 0 over none (docs/api.md §6). */
import { NumericGather } from './numeric.js';
import type { StateReader, StateWriter } from '../eval/state-io.js';
import { AggregateTag, growF64, remapF64, type Aggregator, type UpdateInput } from './types.js';

export class SumAggregator implements Aggregator {
  sums = new Float64Array(1);
  readonly gather = new NumericGather();

  readonly codecTag = AggregateTag.sum;

  constructor(private readonly target: string) {}

  /** target: string, gather, sums: f64[] */
  encode(writer: StateWriter): void {
    writer.string(this.target);
    this.gather.encode(writer);
    writer.f64Array(this.sums);
  }

  static decode(reader: StateReader): SumAggregator {
    const state = new SumAggregator(reader.string('target property'));
    state.gather.decodeInto(reader);
    state.sums = reader.f64Array('sum per cell');
    return state;
  }

  update(input: UpdateInput): void {
    this.sums = growF64(this.sums, input.cellCount);
    if (input.cells === null) {
      this.sums[0] += this.gather.sum(input);
      return;
    }
    this.gather.gather(input);
    const { values, cells, count } = this.gather;
    const sums = this.sums;
    for (let k = 0; k < count; k++) sums[cells[k]] += values[k];
  }

  /** Adds `count` numeric rows summing to `sum` to one cell (counted by the caller). */
  addCell(cell: number, sum: number, count: number): void {
    void count;
    this.sums = growF64(this.sums, cell + 1);
    this.sums[cell] += sum;
  }

  merge(other: Aggregator): void {
    const source = other as SumAggregator;
    this.gather.merge(source.gather);
    this.sums = growF64(this.sums, source.sums.length);
    for (let c = 0; c < source.sums.length; c++) this.sums[c] += source.sums[c];
  }

  finalize(cell: number): number {
    return cell < this.sums.length ? this.sums[cell] : 0;
  }

  check(): void {
    this.gather.check(this.target);
  }

  remap(map: Int32Array): void {
    this.sums = remapF64(this.sums, map);
  }
}
