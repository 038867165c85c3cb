/** minimum: smallest numeric value per cell; null over none. */
import { ExtremumAggregator } from './extremum.js';

export class MinAggregator extends ExtremumAggregator {
  constructor(target: string) {
    super(target, false);
  }
}
