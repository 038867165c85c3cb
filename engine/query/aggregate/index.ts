/** The registry: an AggregateSpec → a fresh partial state of its kind. */
import type { ColumnViews } from '../eval/columns.js';
import type { AggregateSpec, ExecLimits } from '../plan/plan.js';
import { AverageAggregator } from './average.js';
import { CountUniqueAggregator } from './count-unique.js';
import { CountAggregator } from './count.js';
import { MaxAggregator } from './max.js';
import { MedianAggregator } from './median.js';
import { MinAggregator } from './min.js';
import { PercentileAggregator } from './percentile.js';
import { SelectUniqueAggregator } from './select-unique.js';
import { StandardDeviationAggregator } from './standard-deviation.js';
import { SumAggregator } from './sum.js';
import type { Aggregator } from './types.js';

export type { Aggregator, UpdateInput } from './types.js';
export { CountAggregator } from './count.js';

export function createAggregator(spec: AggregateSpec, limits: ExecLimits, views: ColumnViews): Aggregator {
  const target = spec.targetProperty ?? '';
  switch (spec.kind) {
    case 'count': return new CountAggregator();
    case 'count_unique':
      return new CountUniqueAggregator(target, limits.countUniqueExactMax, spec.forceExact, views);
    case 'minimum': return new MinAggregator(target);
    case 'maximum': return new MaxAggregator(target);
    case 'sum': return new SumAggregator(target);
    case 'average': return new AverageAggregator(target);
    case 'median': return new MedianAggregator(target, limits.percentileExactMax);
    case 'percentile':
      return new PercentileAggregator(target, spec.percentile ?? 50, limits.percentileExactMax);
    case 'standard_deviation': return new StandardDeviationAggregator(target);
    case 'select_unique': return new SelectUniqueAggregator();
  }
}
