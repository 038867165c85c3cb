import t from 'tap';
import { DateTime } from 'luxon';
import { createDateTimeParser, parseDateTime } from '../../../../../engine/enrich/addons/date-time-parser.js';

t.test('splits an offset timestamp into wall-clock fields, hour in UTC', async (t) => {
  t.same(parseDateTime('2024-03-05T14:30:15.123+05:30'), {
    millisecond: 123, day_of_week_string: 'Tuesday', hour: 9, timezone_offset: 330,
    day_of_month: 5, day_of_week: 2, month: 3, second: 15, week: 10, year: 2024, minute: 30,
  });
});

t.test('reads the svc timestamp format and other zone spellings', async (t) => {
  const utc = parseDateTime('2026-11-22T12:24:05.000Z');
  t.match(utc, { year: 2026, month: 11, day_of_month: 22, hour: 12, timezone_offset: 0 });
  t.match(utc, { day_of_week: 7, day_of_week_string: 'Sunday', week: 47 });
  t.match(parseDateTime('2024-01-01T00:00:00-0800'), { hour: 8, timezone_offset: -480 });
  t.match(parseDateTime('2024-01-01 23:00'), { hour: 23, second: 0, millisecond: 0 });
});

t.test('uses ISO weeks, which may belong to the neighbouring year', async (t) => {
  t.match(parseDateTime('2021-01-01T12:00:00Z'), { week: 53, year: 2021, day_of_week: 5 });
  t.match(parseDateTime('2024-12-30T12:00:00Z'), { week: 1, year: 2024, day_of_week: 1 });
  t.match(parseDateTime('2020-12-31T12:00:00Z'), { week: 53 });
  t.match(parseDateTime('2024-02-29T23:59:59.999-01:00'), { hour: 0, day_of_month: 29, week: 9 });
  t.match(parseDateTime('0050-03-01T00:00:00Z'), { year: 50, day_of_week: 2, week: 9 });
});

t.test('malformed values give every field null', async (t) => {
  const parser = createDateTimeParser();
  for (const value of ['yesterday', '2024-02-30T00:00:00Z', '2024-13-01T00:00:00Z',
    '2024-01-01T24:00:00Z', '2024-01-01T00:00:00+25:00', '', 1709629815123, null]) {
    const output = parser.compute([value]);
    t.equal(Object.keys(output).length, 11, `${value}: all fields present`);
    t.ok(Object.values(output).every((field) => field === null), `${value}: all null`);
  }
});

t.test('agrees with luxon on random timestamps and offsets', async (t) => {
  let seed = 12345;
  const next = (limit: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % limit;
  };
  const pad = (value: number, width = 2): string => String(value).padStart(width, '0');
  let mismatches = 0;
  for (let index = 0; index < 2000; index++) {
    const ms = Date.UTC(1890, 0, 1) + next(250 * 365) * 86_400_000 + next(86_400_000);
    const offset = (next(27 * 4) - 12 * 4) * 15;
    const wall = new Date(ms + offset * 60_000);
    const sign = offset < 0 ? '-' : '+';
    const text = `${wall.toISOString().slice(0, 23)}${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
    const ours = parseDateTime(text);
    const theirs = DateTime.fromISO(text, { setZone: true });
    const expected = {
      year: theirs.year, month: theirs.month, day_of_month: theirs.day, minute: theirs.minute,
      second: theirs.second, millisecond: theirs.millisecond, day_of_week: theirs.weekday,
      week: theirs.weekNumber, timezone_offset: theirs.offset, hour: theirs.toUTC().hour,
    };
    for (const [key, value] of Object.entries(expected)) {
      if (ours[key] !== value) {
        mismatches++;
        t.fail(`${text} ${key}: ${String(ours[key])} !== ${value}`);
      }
    }
  }
  t.equal(mismatches, 0);
});

t.test('the svc timestamp fast path agrees with the general grammar', async (t) => {
  const differing: string[] = [];
  for (let ms = Date.UTC(1899, 11, 25); ms < Date.UTC(2101, 0, 10); ms += 86_400_000 * 13 + 3_723_456) {
    const text = new Date(ms).toISOString();
    const general = parseDateTime(text.replace('Z', '+00:00'));
    if (JSON.stringify(parseDateTime(text)) !== JSON.stringify(general)) differing.push(text);
  }
  t.same(differing, [], 'no timestamp parses differently');
  for (const bad of ['2024-02-30T00:00:00.000Z', '2024-0a-01T00:00:00.000Z', '2024-01-01T24:00:00.000Z',
    '2023-02-29T00:00:00.000Z', '2024-01-01T00:00:60.000Z']) {
    t.equal(parseDateTime(bad).year, null, bad);
  }
});
