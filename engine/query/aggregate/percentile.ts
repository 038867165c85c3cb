/** percentile: the requested percentile (0..100) of the numeric values per cell (quantile.ts). */
import type { StateReader } from '../eval/state-io.js';
import { QuantileAggregator } from './quantile.js';

export class PercentileAggregator extends QuantileAggregator {
  static decode(reader: StateReader): PercentileAggregator {
    const { target, percentile, exactMax } = QuantileAggregator.decodeParameters(reader);
    return new PercentileAggregator(target, percentile, exactMax).decodeInto(reader);
  }
}
