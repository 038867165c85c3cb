/** Relative and absolute timeframes and interval buckets across DST and half-hour offsets. */
import t, { type Test } from 'tap';
import { mulberry32 } from '../../../../helpers/random.js';
import { ApiError } from '../../../../../engine/base/errors.js';
import { cutBuckets, parseInterval } from '../../../../../engine/query/plan/interval.js';
import { computeRelative, parseTimezone, resolveTimeframe } from '../../../../../engine/query/plan/timeframe.js';

function throwsCode(t: Test, fn: () => unknown, code: string, name: string): void {
  try {
    fn();
    t.fail(`${name}: no error`);
  } catch (error) {
    t.equal(error instanceof ApiError ? error.error_code : String(error), code, name);
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
function range(name: unknown, zone: unknown, now: string): [string, string] {
  const r = resolveTimeframe(name, parseTimezone(zone), Date.parse(now));
  return [iso(r.startMs), iso(r.endMs)];
}

t.test('this_day across the spring-forward day in New York is 23 hours', async (t) => {
  t.same(range('this_day', 'America/New_York', '2024-03-10T12:00:00Z'),
    ['2024-03-10T05:00:00.000Z', '2024-03-11T04:00:00.000Z']);
  t.same(range('today', 'America/New_York', '2024-03-10T12:00:00Z'),
    ['2024-03-10T05:00:00.000Z', '2024-03-11T04:00:00.000Z']);
});

t.test('this_day across the fall-back day in Berlin is 25 hours', async (t) => {
  t.same(range('this_1_days', 'Europe/Berlin', '2024-10-27T12:00:00Z'),
    ['2024-10-26T22:00:00.000Z', '2024-10-27T23:00:00.000Z']);
  t.same(range('yesterday', 'Europe/Berlin', '2024-10-28T12:00:00Z'),
    ['2024-10-26T22:00:00.000Z', '2024-10-27T23:00:00.000Z']);
});

t.test('weeks start on Sunday', async (t) => {
  // Wednesday 2024-03-13; the week began Sunday 2024-03-10 (EST midnight, before the switch).
  t.same(range('previous_week', 'America/New_York', '2024-03-13T12:00:00Z'),
    ['2024-03-03T05:00:00.000Z', '2024-03-10T05:00:00.000Z']);
  t.same(range('this_week', 'UTC', '2024-03-10T00:00:00Z'),
    ['2024-03-10T00:00:00.000Z', '2024-03-17T00:00:00.000Z']);
  t.same(range('last_2_weeks', 'UTC', '2024-03-16T23:59:59Z'),
    ['2024-02-25T00:00:00.000Z', '2024-03-10T00:00:00.000Z']);
});

t.test('half-hour offsets: Asia/Kolkata hours start at :30 UTC', async (t) => {
  t.same(range('previous_hour', 'Asia/Kolkata', '2024-03-01T10:10:00Z'),
    ['2024-03-01T08:30:00.000Z', '2024-03-01T09:30:00.000Z']);
  t.same(range('this_day', 19800, '2024-03-01T20:00:00Z'),
    ['2024-03-01T18:30:00.000Z', '2024-03-02T18:30:00.000Z']);
  t.same(range('this_day', '-28800', '2024-03-01T02:00:00Z'),
    ['2024-02-29T08:00:00.000Z', '2024-03-01T08:00:00.000Z']);
});

t.test('months, years, minutes', async (t) => {
  t.same(range('this_2_months', undefined, '2024-03-15T00:00:00Z'),
    ['2024-02-01T00:00:00.000Z', '2024-04-01T00:00:00.000Z']);
  t.same(range('previous_year', 'UTC', '2024-03-15T00:00:00Z'),
    ['2023-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z']);
  t.same(range('this_14_days', 'UTC', '2024-03-15T10:00:00Z'),
    ['2024-03-02T00:00:00.000Z', '2024-03-16T00:00:00.000Z']);
  t.same(range('previous_5_minutes', 'UTC', '2024-03-15T10:07:30Z'),
    ['2024-03-15T10:02:00.000Z', '2024-03-15T10:07:00.000Z']);
  t.same(range({ start: '2024-03-01T00:00:00+01:00', end: '2024-03-02' }, 'Europe/Berlin', '2030-01-01T00:00:00Z'),
    ['2024-02-29T23:00:00.000Z', '2024-03-02T00:00:00.000Z'], 'absolute ignores the timezone');
});

t.test('bad timeframes and timezones → TimeframeDefinitionError', async (t) => {
  const bad: [unknown, unknown][] = [
    ['this_7_fortnights', 'UTC'], ['next_week', 'UTC'], ['this_0_days', 'UTC'], [42, 'UTC'],
    [{ start: '2024-03-02T00:00:00Z', end: '2024-03-01T00:00:00Z' }, 'UTC'],
    [{ start: 'yesterday', end: '2024-03-01T00:00:00Z' }, 'UTC'],
    ['this_day', 'Mars/Olympus'], ['this_day', 99999999],
  ];
  for (const [name, zone] of bad) {
    throwsCode(t, () => range(name, zone, '2024-03-01T00:00:00Z'), 'TimeframeDefinitionError',
      JSON.stringify([name, zone]));
  }
});

t.test('daily buckets across DST have calendar edges', async (t) => {
  const zone = parseTimezone('America/New_York');
  const r = resolveTimeframe('previous_3_days', zone, Date.parse('2024-03-12T12:00:00Z'));
  const b = cutBuckets(r, parseInterval('daily'), zone, 9000);
  t.same(b.edges.map(iso), ['2024-03-09T05:00:00.000Z', '2024-03-10T05:00:00.000Z',
    '2024-03-11T04:00:00.000Z', '2024-03-12T04:00:00.000Z']);
  t.same(b.labels, ['2024-03-09T00:00:00.000-05:00', '2024-03-10T00:00:00.000-05:00',
    '2024-03-11T00:00:00.000-04:00', '2024-03-12T00:00:00.000-04:00']);
});

t.test('hourly buckets on the Berlin fall-back day: 25 buckets', async (t) => {
  const zone = parseTimezone('Europe/Berlin');
  const r = resolveTimeframe('this_day', zone, Date.parse('2024-10-27T12:00:00Z'));
  t.equal(cutBuckets(r, parseInterval('hourly'), zone, 9000).edges.length - 1, 25);
});

t.test('weekly from Sunday, monthly and yearly buckets; clipped ends', async (t) => {
  const zone = parseTimezone('UTC');
  const weekly = cutBuckets({ startMs: Date.parse('2024-03-06T00:00:00Z'), endMs: Date.parse('2024-03-20T00:00:00Z') },
    parseInterval('weekly'), zone, 9000);
  t.same(weekly.edges.map(iso), ['2024-03-06T00:00:00.000Z', '2024-03-10T00:00:00.000Z',
    '2024-03-17T00:00:00.000Z', '2024-03-20T00:00:00.000Z']);
  const monthly = cutBuckets({ startMs: Date.parse('2024-01-01T00:00:00Z'), endMs: Date.parse('2024-04-01T00:00:00Z') },
    parseInterval('monthly'), zone, 9000);
  t.same(monthly.edges.map(iso), ['2024-01-01T00:00:00.000Z', '2024-02-01T00:00:00.000Z',
    '2024-03-01T00:00:00.000Z', '2024-04-01T00:00:00.000Z']);
  const yearly = cutBuckets({ startMs: Date.parse('2022-06-01T00:00:00Z'), endMs: Date.parse('2024-01-01T00:00:00Z') },
    parseInterval('yearly'), zone, 9000);
  t.same(yearly.edges.map(iso), ['2022-06-01T00:00:00.000Z', '2023-01-01T00:00:00.000Z',
    '2024-01-01T00:00:00.000Z']);
  const kolkata = parseTimezone('Asia/Kolkata');
  const sixHours = cutBuckets({ startMs: Date.parse('2024-03-01T00:00:00Z'), endMs: Date.parse('2024-03-01T12:00:00Z') },
    parseInterval('every_6_hours'), kolkata, 9000);
  t.same(sixHours.edges.map(iso), ['2024-03-01T00:00:00.000Z', '2024-03-01T00:30:00.000Z',
    '2024-03-01T06:30:00.000Z', '2024-03-01T12:00:00.000Z']);
});

t.test('too many buckets and bad intervals', async (t) => {
  const zone = parseTimezone('UTC');
  const week = { startMs: 0, endMs: 7 * 86_400_000 };
  throwsCode(t, () => cutBuckets(week, parseInterval('minutely'), zone, 9000), 'TooManyIntervalsError', 'minutely week');
  t.equal(cutBuckets(week, parseInterval('every_2_minutes'), zone, 9000).edges.length - 1, 5040);
  for (const bad of ['fortnightly', 'every_0_days', 'every_x_days', 3]) {
    throwsCode(t, () => parseInterval(bad), 'InvalidQueryError', String(bad));
  }
});

t.test('a remembered relative timeframe equals the one computed afresh, at instants back and forth', async (t) => {
  // Around DST switches (Santiago's are at midnight, Lord Howe's are 30 minutes), month and year
  // ends, and fixed offsets; instants step by a few ms to a few weeks, forward and backward, so
  // each name is asked just before, at and just after the edges of its remembered unit.
  const zones = ['UTC', 'America/New_York', 'Europe/Berlin', 'America/Santiago', 'Australia/Lord_Howe', 'Asia/Kolkata', -28800, 19800];
  const names = ['this_day', 'today', 'yesterday', 'previous_2_hours', 'this_90_minutes', 'last_3_weeks', 'this_1_months',
    'previous_month', 'this_100_years', 'previous_7_days'];
  const edges = ['2024-03-10T07:00:00Z', '2024-04-07T03:00:00Z', '2024-09-08T04:00:00Z', '2024-10-06T15:00:00Z',
    '2024-10-27T01:00:00Z', '2024-12-31T23:59:59.999Z', '2025-01-01T00:00:00Z'].map(Date.parse);
  const steps = [1, 997, 60_000, 1_799_999, 3_600_000, 86_400_000, 604_800_000];
  const random = mulberry32(2026_11_25);
  let compared = 0, mismatches = 0;
  for (const zoneValue of zones) {
    const zone = parseTimezone(zoneValue);
    for (const edge of edges) {
      let now = edge;
      for (let i = 0; i < 60; i++) {
        const step = steps[Math.floor(random() * steps.length)]!;
        now += (random() < 0.5 ? -1 : 1) * Math.floor(step * (0.5 + random()));
        const name = names[Math.floor(random() * names.length)]!;
        const fresh = computeRelative(name, zone, now);
        const got = resolveTimeframe(name, zone, now);
        compared++;
        if (got.startMs !== fresh.startMs || got.endMs !== fresh.endMs) {
          mismatches++;
          if (mismatches <= 5) t.fail(`${name} in ${zoneValue} at ${new Date(now).toISOString()}: ${JSON.stringify(got)} != ${JSON.stringify(fresh)}`);
        }
      }
    }
  }
  t.equal(mismatches, 0, `${compared} resolutions equal their fresh computation`);
  t.ok(compared >= 3000);
});

t.test('a timeframe is remembered only for its own unit of instants', async (t) => {
  const zone = parseTimezone('America/New_York');
  const before = Date.parse('2024-03-10T04:59:59.999Z'); // 23:59:59.999 on the 9th in New York
  const at = before + 1;
  t.same(range('this_day', 'America/New_York', new Date(before).toISOString()), ['2024-03-09T05:00:00.000Z', '2024-03-10T05:00:00.000Z']);
  t.same(range('this_day', 'America/New_York', new Date(at).toISOString()), ['2024-03-10T05:00:00.000Z', '2024-03-11T04:00:00.000Z']);
  t.same(range('this_day', 'America/New_York', new Date(before).toISOString()), ['2024-03-09T05:00:00.000Z', '2024-03-10T05:00:00.000Z']);
  const unit = computeRelative('this_day', zone, at);
  t.equal(unit.fromMs, at, 'the day starts at midnight');
  t.equal(unit.untilMs, Date.parse('2024-03-11T04:00:00Z'), 'and lasts 23 hours');
  throwsCode(t, () => resolveTimeframe('this_day', zone, Number.NaN), 'TimeframeDefinitionError', 'an invalid instant is refused, not remembered');
});
