/** Shared state of minimum and maximum: the extreme numeric value per cell, null over none. */
import { NumericGather } from './numeric.js';
import type { StateReader, StateWriter } from '../eval/state-io.js';
import { AggregateTag, growF64, remapF64, type Aggregator, type UpdateInput } from './types.js';

export class ExtremumAggregator implements Aggregator {
  best: Float64Array<ArrayBuffer>;
  readonly gather = new NumericGather();
  private readonly empty: number;

  readonly codecTag: AggregateTag;

  constructor(private readonly target: string, private readonly max: boolean) {
    this.empty = max ? -Infinity : Infinity;
    this.best = new Float64Array(1).fill(this.empty);
    this.codecTag = max ? AggregateTag.maximum : AggregateTag.minimum;
  }

  /** target: string, gather, best: f64[] (±Infinity where a cell has no value); min or max by tag. */
  encode(writer: StateWriter): void {
    writer.string(this.target);
    this.gather.encode(writer);
    writer.f64Array(this.best);
  }

  /** Fills a fresh state (of the subclass the tag names) from what encode wrote. */
  protected decodeInto(reader: StateReader): this {
    this.gather.decodeInto(reader);
    this.best = reader.f64Array('extreme value per cell');
    return this;
  }

  update(input: UpdateInput): void {
    this.best = growF64(this.best, input.cellCount, this.empty);
    const best = this.best;
    if (input.cells === null) {
      const b = this.gather.extremum(input, this.max);
      if (this.max ? b > best[0] : b < best[0]) best[0] = b;
      return;
    }
    this.gather.gather(input);
    const { values, cells, count } = this.gather;
    if (this.max) {
      for (let k = 0; k < count; k++) if (values[k] > best[cells[k]]) best[cells[k]] = values[k];
    } else {
      for (let k = 0; k < count; k++) if (values[k] < best[cells[k]]) best[cells[k]] = values[k];
    }
  }

  /**
   * The extreme of rows a caller summarized itself (a segment's footer: query/exec/execute.ts),
   * `present` of them holding a value, at least one a number.
   */
  addSummarized(value: number, present: number): void {
    this.best = growF64(this.best, 1, this.empty);
    if (this.max ? value > this.best[0] : value < this.best[0]) this.best[0] = value;
    this.gather.addSummarized(present);
  }

  merge(other: Aggregator): void {
    const source = other as ExtremumAggregator;
    this.gather.merge(source.gather);
    this.best = growF64(this.best, source.best.length, this.empty);
    for (let c = 0; c < source.best.length; c++) {
      const v = source.best[c];
      if (this.max ? v > this.best[c] : v < this.best[c]) this.best[c] = v;
    }
  }

  finalize(cell: number): number | null {
    if (cell >= this.best.length || this.best[cell] === this.empty) return null;
    return this.best[cell];
  }

  check(): void {
    this.gather.check(this.target);
  }

  remap(map: Int32Array): void {
    this.best = remapF64(this.best, map, this.empty);
  }
}
