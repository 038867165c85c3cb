/** median: the 50th percentile of the numeric values per cell (quantile.ts). */
import { PartialStateError, type StateReader } from '../eval/state-io.js';
import { QuantileAggregator } from './quantile.js';
import { AggregateTag } from './types.js';

export class MedianAggregator extends QuantileAggregator {
  override readonly codecTag: AggregateTag = AggregateTag.median;

  static decode(reader: StateReader): MedianAggregator {
    const { target, percentile, exactMax } = QuantileAggregator.decodeParameters(reader);
    if (percentile !== 50) throw new PartialStateError(`a median state with percentile ${percentile}`);
    return new MedianAggregator(target, exactMax).decodeInto(reader);
  }

  constructor(target: string, exactMax: number) {
    super(target, 50, exactMax);
  }
}
