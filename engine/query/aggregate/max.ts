/** maximum: largest numeric value per cell; null over none. */
import type { StateReader } from '../eval/state-io.js';
import { ExtremumAggregator } from './extremum.js';

export class MaxAggregator extends ExtremumAggregator {
  constructor(target: string) {
    super(target, true);
  }

  static decode(reader: StateReader): MaxAggregator {
    return new MaxAggregator(reader.string('target property')).decodeInto(reader);
  }
}
