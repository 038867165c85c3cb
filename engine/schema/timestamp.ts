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
  if (text.length === 24) {
    const ms = parseCanonical(text);
    if (ms === ms) return ms;
  }
  return parseAny(text);
}

/**
 * The form Tally and most clients write, `YYYY-MM-DDTHH:mm:ss.SSSZ`, read digit by digit: the
 * regex's match array and substrings cost each event ~0.25 µs on the write path. NaN for anything
 * else, which parseAny then reads (and refuses when it is not a timestamp).
 */
function parseCanonical(text: string): number {
  if (text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 84 ||
    text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58 || text.charCodeAt(19) !== 46 ||
    text.charCodeAt(23) !== 90) return NaN;
  return fieldsMs(digits(text, 0, 4), digits(text, 5, 2), digits(text, 8, 2),
    digits(text, 11, 2), digits(text, 14, 2), digits(text, 17, 2), digits(text, 20, 3));
}

/**
 * parseCanonical of the 24 bytes of ASCII text at `bytes[at]`: the batch reader (ingest/fast-batch.ts)
 * reads a timestamp where it lies in the body, without making a string of it. NaN when they are not
 * that form.
 */
export function parseCanonicalBytes(bytes: Uint8Array, at: number): number {
  if (bytes[at + 4] !== 45 || bytes[at + 7] !== 45 || bytes[at + 10] !== 84 || bytes[at + 13] !== 58 ||
    bytes[at + 16] !== 58 || bytes[at + 19] !== 46 || bytes[at + 23] !== 90) return NaN;
  return fieldsMs(digitBytes(bytes, at, 4), digitBytes(bytes, at + 5, 2), digitBytes(bytes, at + 8, 2),
    digitBytes(bytes, at + 11, 2), digitBytes(bytes, at + 14, 2), digitBytes(bytes, at + 17, 2), digitBytes(bytes, at + 20, 3));
}

/** The instant of a canonical timestamp's fields (each -1 when it was not all digits), or NaN. */
function fieldsMs(year: number, month: number, day: number, hour: number, minute: number, second: number, millis: number): number {
  // A non-digit makes its field negative, so one check covers them all.
  if ((year | month | day | hour | minute | second | millis) < 0) return NaN;
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return NaN;
  if (month === 2 && day === 29 && !isLeap(year)) return NaN;
  if (hour > 23 || minute > 59 || second > 59) return NaN;
  return utcMs(year, month, day, hour, minute, second, millis);
}

/** digits() of bytes[at, at + count). */
function digitBytes(bytes: Uint8Array, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = bytes[i] - 48;
    if (!(digit >= 0 && digit <= 9)) return -1;
    value = value * 10 + digit;
  }
  return value;
}

const MS_PER_400_YEARS = 146_097 * 86_400_000;

/** Date.UTC, except that years 0-99 are those years (Date.UTC reads them as 1900-1999). */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, millis: number): number {
  if (year >= 100) return Date.UTC(year, month - 1, day, hour, minute, second, millis);
  return Date.UTC(year + 400, month - 1, day, hour, minute, second, millis) - MS_PER_400_YEARS;
}

/** The decimal number of text[at, at + count), or -1 when one of them is not a digit. */
export function digits(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

function parseAny(text: string): number {
  const m = ISO.exec(text);
  if (m === null) return NaN;
  const year = +m[1], month = +m[2], day = +m[3];
  const hour = +m[4], minute = +m[5], second = m[6] === undefined ? 0 : +m[6];
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return NaN;
  if (month === 2 && day === 29 && !isLeap(year)) return NaN;
  if (hour > 23 || minute > 59 || second > 59) return NaN;
  const millis = m[7] === undefined ? 0 : Math.floor(+(m[7] + '00').slice(0, 3));
  const utc = utcMs(year, month, day, hour, minute, second, millis);
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
