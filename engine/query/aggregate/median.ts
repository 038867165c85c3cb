/** median: the 50th percentile of the numeric values per cell (quantile.ts). */
import { QuantileAggregator } from './quantile.js';

export class MedianAggregator extends QuantileAggregator {
  constructor(target: string, exactMax: number) {
    super(target, 50, exactMax);
  }
}
