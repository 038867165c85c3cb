/** average: mean of the numeric values per cell; null over none. */
import { numbersOf, storedNumbers, TAG_NUM } from '../../storage/chunk.js';
import { addByCell, addNumbersByCell } from '../../storage/cell-sums.js';
import { NumericGather } from './numeric.js';
import { PartialStateError, type StateReader, type StateWriter } from '../eval/state-io.js';
import { AggregateTag, growF64, remapF64, type Aggregator, type UpdateInput } from './types.js';

export class AverageAggregator implements Aggregator {
  sums = new Float64Array(1);
  counts = new Float64Array(1);
  readonly gather = new NumericGather();

  readonly codecTag = AggregateTag.average;

  constructor(private readonly target: string) {}

  /** target: string, gather, sums: f64[], counts: f64[] */
  encode(writer: StateWriter): void {
    writer.string(this.target);
    this.gather.encode(writer);
    writer.f64Array(this.sums);
    writer.f64Array(this.counts);
  }

  static decode(reader: StateReader): AverageAggregator {
    const state = new AverageAggregator(reader.string('target property'));
    state.gather.decodeInto(reader);
    state.sums = reader.f64Array('sum per cell');
    state.counts = reader.f64Array('count per cell');
    if (state.counts.length !== state.sums.length) {
      throw new PartialStateError(`average: ${state.sums.length} sums but ${state.counts.length} counts`);
    }
    return state;
  }

  update(input: UpdateInput): void {
    this.sums = growF64(this.sums, input.cellCount);
    this.counts = growF64(this.counts, input.cellCount);
    if (input.cells === null) {
      this.sums[0] += this.gather.sum(input);
      this.counts[0] += this.gather.count;
      return;
    }
    if (input.dense && input.tagMask === 1 << TAG_NUM) {
      // Every row selected and numeric: no gather, the column and the cells as they are.
      const column = input.column!;
      addNumbersByCell(storedNumbers(column) ?? numbersOf(column), input.cells, input.n, input.cellCount, this.sums, this.counts);
      this.gather.addNumeric(input.n);
      return;
    }
    this.gather.gather(input);
    const { values, cells, count } = this.gather;
    addByCell(values, cells, count, input.cellCount, this.sums, this.counts);
  }

  /** Adds `count` numeric rows summing to `sum` to one cell (counted by the caller). */
  addCell(cell: number, sum: number, count: number): void {
    this.sums = growF64(this.sums, cell + 1);
    this.counts = growF64(this.counts, cell + 1);
    this.sums[cell] += sum;
    this.counts[cell] += count;
  }

  merge(other: Aggregator): void {
    const source = other as AverageAggregator;
    this.gather.merge(source.gather);
    this.sums = growF64(this.sums, source.sums.length);
    this.counts = growF64(this.counts, source.counts.length);
    for (let c = 0; c < source.sums.length; c++) {
      this.sums[c] += source.sums[c];
      this.counts[c] += source.counts[c];
    }
  }

  finalize(cell: number): number | null {
    if (cell >= this.counts.length || this.counts[cell] === 0) return null;
    return this.sums[cell] / this.counts[cell];
  }

  check(): void {
    this.gather.check(this.target);
  }

  remap(map: Int32Array): void {
    this.sums = remapF64(this.sums, map);
    this.counts = remapF64(this.counts, map);
  }
}
