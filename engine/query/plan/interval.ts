/**
 * The `interval` parameter: a named size (daily, ...) or every_N_<unit>, cut into buckets whose
 * inner edges lie on calendar boundaries in the query's timezone (so a DST day is 23 or 25
 * hours). The first and last buckets are clipped to the timeframe. Pure.
 */
import { DateTime, type Zone } from 'luxon';
import { ApiError } from '../../base/errors.js';
import type { Buckets, TimeRange } from './plan.js';
import { addUnits, parseUnit, startOfUnit, type CalendarUnit } from './timeframe.js';

const NAMED: Readonly<Record<string, CalendarUnit>> = {
  minutely: 'minute', hourly: 'hour', daily: 'day', weekly: 'week', monthly: 'month',
  yearly: 'year',
};

export interface IntervalSize {
  readonly unit: CalendarUnit;
  readonly count: number;
}

export function parseInterval(value: unknown): IntervalSize {
  if (typeof value === 'string') {
    if (Object.hasOwn(NAMED, value)) return { unit: NAMED[value], count: 1 };
    const match = /^every_(\d+)_([a-z]+)$/.exec(value);
    const unit = match ? parseUnit(match[2]) : undefined;
    const count = match ? Number(match[1]) : NaN;
    if (unit && Number.isSafeInteger(count) && count >= 1) return { unit, count };
  }
  throw new ApiError('InvalidQueryError',
    `interval ${JSON.stringify(value)} is not understood; use minutely, hourly, daily, weekly, ` +
    'monthly, yearly or every_N_<unit> (e.g. every_15_minutes)');
}

/** The buckets of `range`; more than `maxBuckets` → TooManyIntervalsError. */
export function cutBuckets(
  range: TimeRange, size: IntervalSize, zone: Zone, maxBuckets: number,
): Buckets {
  // every_N_minutes / every_N_hours count from the hour / day, so 6-hour edges fall at 00, 06, ...
  const anchorUnit = size.count === 1 ? size.unit
    : size.unit === 'minute' ? 'hour' : size.unit === 'hour' ? 'day' : size.unit;
  const anchor = startOfUnit(DateTime.fromMillis(range.startMs, { zone }), anchorUnit);
  const edges = [range.startMs];
  for (let step = 1; ; step++) {
    const edge = addUnits(anchor, size.unit, step * size.count).toMillis();
    if (edge >= range.endMs) break;
    if (edge > edges[edges.length - 1]) edges.push(edge);
    if (edges.length > maxBuckets) {
      throw new ApiError('TooManyIntervalsError',
        `the interval cuts the timeframe into more than ${maxBuckets} buckets; ` +
        'use a larger interval or a shorter timeframe');
    }
  }
  edges.push(range.endMs);
  const labels = edges.map((ms) => formatInstant(ms, zone));
  return { edges, labels };
}

/** ISO-8601 with milliseconds and the zone's offset at that instant ("Z" in UTC). */
function formatInstant(ms: number, zone: Zone): string {
  const time = DateTime.fromMillis(ms, { zone });
  if (time.offset === 0) return new Date(ms).toISOString();
  return time.toISO({ suppressMilliseconds: false }) ?? new Date(ms).toISOString();
}

/** Index of the bucket holding `ms` (edges[b] <= ms < edges[b+1]), or -1 outside. */
export function bucketOf(edges: Float64Array, ms: number): number {
  let low = 0;
  let high = edges.length - 1;
  if (!(ms >= edges[0] && ms < edges[high])) return -1;
  while (high - low > 1) {
    const middle = (low + high) >>> 1;
    if (edges[middle] <= ms) low = middle;
    else high = middle;
  }
  return low;
}
