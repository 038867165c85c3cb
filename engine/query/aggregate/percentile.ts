/** percentile: the requested percentile (0..100) of the numeric values per cell (quantile.ts). */
import { QuantileAggregator } from './quantile.js';

export class PercentileAggregator extends QuantileAggregator {}
