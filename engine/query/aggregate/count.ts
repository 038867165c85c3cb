/** count: matching rows per cell. The target column is ignored. */
import { addByCell } from '../../storage/cell-sums.js';
import type { StateReader, StateWriter } from '../eval/state-io.js';
import { AggregateTag, growF64, remapF64, type Aggregator, type UpdateInput } from './types.js';

export class CountAggregator implements Aggregator {
  readonly codecTag = AggregateTag.count;
  counts = new Float64Array(1);

  /** counts: f64[] */
  encode(writer: StateWriter): void {
    writer.f64Array(this.counts);
  }

  static decode(reader: StateReader): CountAggregator {
    const state = new CountAggregator();
    state.counts = reader.f64Array('count per cell');
    return state;
  }

  update({ n, cells, cellCount }: UpdateInput): void {
    this.counts = growF64(this.counts, cellCount);
    const counts = this.counts;
    if (cells === null) {
      counts[0] += n;
      return;
    }
    addByCell(null, cells, n, cellCount, null, counts);
  }

  /** Adds rows counted without reading them (footer row counts). */
  addRows(cell: number, rows: number): void {
    this.counts = growF64(this.counts, cell + 1);
    this.counts[cell] += rows;
  }

  merge(other: Aggregator): void {
    const source = (other as CountAggregator).counts;
    this.counts = growF64(this.counts, source.length);
    for (let c = 0; c < source.length; c++) this.counts[c] += source[c];
  }

  finalize(cell: number): number {
    return cell < this.counts.length ? this.counts[cell] : 0;
  }

  check(): void {}

  remap(map: Int32Array): void {
    this.counts = remapF64(this.counts, map);
  }
}
