/** maximum: largest numeric value per cell; null over none. */
import { ExtremumAggregator } from './extremum.js';

export class MaxAggregator extends ExtremumAggregator {
  constructor(target: string) {
    super(target, true);
  }
}
