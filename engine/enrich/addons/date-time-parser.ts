/**
 * svc:date_time_parser: ISO-8601 timestamp → { year, month, day_of_month, hour, minute, second,
 * millisecond, day_of_week, day_of_week_string, week, timezone_offset }, in native code. The input
 * grammar is the seed's (schema/timestamp.ts): `YYYY-MM-DDTHH:mm[:ss[.fraction]]` and `Z`, `±hh`,
 * `±hhmm`, `±hh:mm` or nothing (UTC).
 *
 * Units, decided here: every field is the wall-clock value in the timestamp's own offset, except
 * `hour`, which the seed defines as the UTC hour. `month` is 1-12, `day_of_week` is ISO (Monday 1 …
 * Sunday 7) with an English `day_of_week_string`, `week` is the ISO-8601 week number (1-53, weeks
 * start on Monday, week 1 holds the first Thursday) while `year` stays the calendar year,
 * `timezone_offset` is minutes east of UTC (+05:30 → 330, Z → 0).
 *
 * Null semantics: the output object is always written; a value that is not a string in that
 * grammar, or names an impossible date or time, gives every field null.
 */
import type { Addon } from './addon.js';
import { digits } from '../../schema/timestamp.js';

const ISO = new RegExp(
  '^(\\d{4})-(\\d{2})-(\\d{2})[T ](\\d{2}):(\\d{2})(?::(\\d{2})(?:[.,](\\d{1,9}))?)?' +
    '(Z|z|[+-]\\d{2}(?::?\\d{2})?)?$',
);

const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function createDateTimeParser(): Addon {
  return {
    inputKeys: ['date_time'],
    compute(values) {
      return typeof values[0] === 'string' ? parseDateTime(values[0]) : emptyDateTime();
    },
  };
}

export function parseDateTime(text: string): Record<string, unknown> {
  return isCanonical(text) ? parseCanonical(text) : parseGeneral(text);
}

/** `YYYY-MM-DDTHH:mm:ss.SSSZ`, the form of every svc timestamp: read without a regex. */
function isCanonical(text: string): boolean {
  return (
    text.length === 24 && text.charCodeAt(23) === 90 && text.charCodeAt(4) === 45 &&
    text.charCodeAt(7) === 45 && text.charCodeAt(10) === 84 && text.charCodeAt(13) === 58 &&
    text.charCodeAt(16) === 58 && text.charCodeAt(19) === 46
  );
}

function parseCanonical(text: string): Record<string, unknown> {
  const year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  const hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  const millisecond = digits(text, 20, 3);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) {
    return emptyDateTime();
  }
  return millisecond < 0
    ? emptyDateTime()
    : toFields(year, month, day, hour, minute, second, millisecond, 0);
}

function parseGeneral(text: string): Record<string, unknown> {
  const m = ISO.exec(text);
  if (m === null) return emptyDateTime();
  const year = +m[1], month = +m[2], day = +m[3], hour = +m[4], minute = +m[5];
  const second = m[6] === undefined ? 0 : +m[6];
  const millisecond = m[7] === undefined ? 0 : +(m[7] + '00').slice(0, 3);
  const offset = offsetMinutes(m[8]);
  if (offset === null) return emptyDateTime();
  return toFields(year, month, day, hour, minute, second, millisecond, offset);
}

function toFields(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millisecond: number,
  offset: number,
): Record<string, unknown> {
  if (hour > 23 || minute > 59 || second > 59) return emptyDateTime();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return emptyDateTime();
  // Day number of the wall-clock date: it gives the weekday and the ISO week without Date objects.
  const days = daysFromCivil(year, month, day);
  const isoDay = ((((days + 3) % 7) + 7) % 7) + 1; // 1970-01-01 was a Thursday (4).
  const utcMinuteOfDay = (((hour * 60 + minute - offset) % 1440) + 1440) % 1440;
  return {
    millisecond,
    day_of_week_string: DAY_NAMES[isoDay - 1],
    hour: Math.floor(utcMinuteOfDay / 60),
    timezone_offset: offset,
    day_of_month: day,
    day_of_week: isoDay,
    month,
    second,
    week: isoWeek(year, days, isoDay),
    year,
    minute,
  };
}

/** Days since 1970-01-01 of a proleptic Gregorian date, any year (Howard Hinnant's algorithm). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const leapDays = Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100);
  const dayOfEra = yearOfEra * 365 + leapDays + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** ISO-8601 week of day number `days` in calendar `year`: the week of its Thursday's year. */
function isoWeek(year: number, days: number, isoDay: number): number {
  const thursday = days + 4 - isoDay;
  let weekYearStart = daysFromCivil(year, 1, 1);
  if (thursday < weekYearStart) weekYearStart = daysFromCivil(year - 1, 1, 1);
  else if (thursday >= daysFromCivil(year + 1, 1, 1)) weekYearStart = daysFromCivil(year + 1, 1, 1);
  return Math.floor((thursday - weekYearStart) / 7) + 1;
}

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return MONTH_DAYS[month - 1];
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
}

/** Minutes east of UTC for the zone suffix, or null when it is out of range. */
function offsetMinutes(zone: string | undefined): number | null {
  if (zone === undefined || zone === 'Z' || zone === 'z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const hours = +digits.slice(0, 2);
  const minutes = digits.length > 2 ? +digits.slice(2, 4) : 0;
  if (hours > 23 || minutes > 59) return null;
  const total = hours * 60 + minutes;
  return zone[0] === '-' ? -total : total;
}

function emptyDateTime(): Record<string, unknown> {
  return {
    millisecond: null, day_of_week_string: null, hour: null, timezone_offset: null,
    day_of_month: null, day_of_week: null, month: null, second: null, week: null, year: null,
    minute: null,
  };
}
