/** minimum: smallest numeric value per cell; null over none. */
import type { StateReader } from '../eval/state-io.js';
import { ExtremumAggregator } from './extremum.js';

export class MinAggregator extends ExtremumAggregator {
  constructor(target: string) {
    super(target, false);
  }

  static decode(reader: StateReader): MinAggregator {
    return new MinAggregator(reader.string('target property')).decodeInto(reader);
  }
}
