/**
 * ISO-8601 timestamps as the seed defines them: `YYYY-MM-DDTHH:mm:ss.SSS` + `Z`, `±hhmm` or
 * `±hh:mm`. Seconds' fraction may have 0-9 digits (kept to the millisecond); a missing zone is UTC.
 * Stored and emitted in UTC as `YYYY-MM-DDTHH:mm:ss.SSSZ`.
 */
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Milliseconds since the epoch, or NaN when `text` is not a valid timestamp. */
export function parseTimestamp(text: string): number {
  const m = ISO.exec(text);
  if (m === null) return NaN;
  const year = +m[1], month = +m[2], day = +m[3];
  const hour = +m[4], minute = +m[5], second = m[6] === undefined ? 0 : +m[6];
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return NaN;
  if (month === 2 && day === 29 && !isLeap(year)) return NaN;
  if (hour > 23 || minute > 59 || second > 59) return NaN;
  const millis = m[7] === undefined ? 0 : Math.floor(+(m[7] + '00').slice(0, 3));
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  return utc - zoneOffsetMinutes(m[8]) * 60_000;
}

function zoneOffsetMinutes(zone: string | undefined): number {
  if (zone === undefined || zone === 'Z' || zone === 'z') return 0;
  const sign = zone[0] === '-' ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const hours = +digits.slice(0, 2);
  const minutes = digits.length > 2 ? +digits.slice(2, 4) : 0;
  return sign * (hours * 60 + minutes);
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function formatTimestamp(ms: number): string {
  return new Date(ms).toISOString();
}
