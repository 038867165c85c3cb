/**
 * Timeframes and timezones of docs/api.md §6: relative names (this_N_days, previous_week, today,
 * ...) resolved against `nowMs` in an IANA zone or a fixed offset in seconds, and absolute
 * {start, end} pairs. Weeks start on Sunday. Pure: the clock comes in as an argument.
 */
import { DateTime, FixedOffsetZone, IANAZone, type Zone } from 'luxon';
import { ApiError } from '../../base/errors.js';
import { RELATIVE_TIMEFRAME_CACHE_ENTRIES_MAX } from '../../base/limits.js';
import type { TimeRange } from './plan.js';

export type CalendarUnit = 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';

const UNITS: Readonly<Record<string, CalendarUnit>> = {
  minute: 'minute', minutes: 'minute', hour: 'hour', hours: 'hour', day: 'day', days: 'day',
  week: 'week', weeks: 'week', month: 'month', months: 'month', year: 'year', years: 'year',
};

/** The unit named by a plural or singular word, or undefined. */
export function parseUnit(word: string): CalendarUnit | undefined {
  return Object.hasOwn(UNITS, word) ? UNITS[word] : undefined;
}

/** An IANA name or an offset in seconds (number or numeric string); UTC when absent. */
export function parseTimezone(value: unknown): Zone {
  if (value === undefined || value === null || value === '') return FixedOffsetZone.utcInstance;
  const seconds = typeof value === 'number' ? value
    : typeof value === 'string' && /^[+-]?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (Number.isFinite(seconds)) {
    if (Math.abs(seconds) > 18 * 3600) {
      throw new ApiError('TimeframeDefinitionError', `timezone offset ${seconds} s is out of range`);
    }
    return FixedOffsetZone.instance(Math.round(seconds / 60));
  }
  if (typeof value === 'string' && IANAZone.isValidZone(value)) return IANAZone.create(value);
  throw new ApiError('TimeframeDefinitionError',
    `timezone ${JSON.stringify(value)} is neither an IANA name (e.g. "Europe/Berlin") nor an ` +
    'offset in seconds (e.g. -28800)');
}

/** Start of the calendar unit containing `time`, in its zone; weeks start on Sunday. */
export function startOfUnit(time: DateTime, unit: CalendarUnit): DateTime {
  if (unit !== 'week') return time.startOf(unit);
  const day = time.startOf('day');
  return day.minus({ days: day.weekday % 7 });
}

/** `time` moved by `count` units (calendar arithmetic for days and longer). */
export function addUnits(time: DateTime, unit: CalendarUnit, count: number): DateTime {
  return time.plus({ [`${unit}s`]: count });
}

/** Resolves a timeframe parameter to [startMs, endMs). */
export function resolveTimeframe(value: unknown, zone: Zone, nowMs: number): TimeRange {
  if (typeof value === 'string') return resolveRelative(value, zone, nowMs);
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return resolveAbsolute(value as Record<string, unknown>);
  }
  throw new ApiError('TimeframeDefinitionError',
    'timeframe must be a relative name such as "this_7_days" or an object {"start", "end"}');
}

/** A relative timeframe as resolved, and the instants [fromMs, untilMs) that resolve to it. */
export interface ResolvedRelative extends TimeRange {
  readonly fromMs: number;
  readonly untilMs: number;
}

/**
 * Resolved relative timeframes by zone and name. A name resolves alike for every instant in one
 * calendar unit (this_7_days: all day), and dashboards repeat a few names: luxon's calendar
 * arithmetic was most of a trivial count's time on the server (~0.1 ms of ~0.3).
 */
const resolvedRelative = new Map<string, ResolvedRelative>();

function resolveRelative(name: string, zone: Zone, nowMs: number): TimeRange {
  const key = `${zone.name}\u0000${name}`;
  let resolved = resolvedRelative.get(key);
  if (resolved === undefined || !(nowMs >= resolved.fromMs && nowMs < resolved.untilMs)) {
    resolved = computeRelative(name, zone, nowMs);
    if (resolvedRelative.size >= RELATIVE_TIMEFRAME_CACHE_ENTRIES_MAX) resolvedRelative.clear();
    if (resolved.fromMs < resolved.untilMs) resolvedRelative.set(key, resolved);
  }
  return { startMs: resolved.startMs, endMs: resolved.endMs };
}

/** A relative name at `nowMs`, without the cache, and the unit of instants it holds for. */
export function computeRelative(name: string, zone: Zone, nowMs: number): ResolvedRelative {
  const aliases: Record<string, string> = { today: 'this_1_day', yesterday: 'previous_1_day' };
  const text = aliases[name] ?? name;
  const match = /^(this|previous|last)_(?:(\d+)_)?([a-z]+)$/.exec(text);
  const unit = match ? parseUnit(match[3]) : undefined;
  const count = match?.[2] === undefined ? 1 : Number(match[2]);
  if (!match || !unit || !Number.isSafeInteger(count) || count < 1 || count > 1_000_000) {
    throw new ApiError('TimeframeDefinitionError',
      `timeframe "${name}" is not understood; use this_N_<unit>, previous_N_<unit>, today, ` +
      'yesterday or {"start", "end"}; units: minutes hours days weeks months years');
  }
  const now = DateTime.fromMillis(nowMs, { zone });
  const current = startOfUnit(now, unit);
  const next = addUnits(current, unit, 1);
  const range = match[1] === 'this'
    ? { start: addUnits(current, unit, -(count - 1)), end: next }
    : { start: addUnits(current, unit, -count), end: current };
  if (!range.start.isValid || !range.end.isValid) {
    throw new ApiError('TimeframeDefinitionError', `timeframe "${name}" reaches outside time`);
  }
  // An empty validity (next invalid at the end of time) is never cached.
  const untilMs = next.isValid ? next.toMillis() : NaN;
  return { startMs: range.start.toMillis(), endMs: range.end.toMillis(), fromMs: current.toMillis(), untilMs };
}

function resolveAbsolute(value: Record<string, unknown>): TimeRange {
  const startMs = parseInstant(value.start, 'start');
  const endMs = parseInstant(value.end, 'end');
  if (!(startMs < endMs)) {
    throw new ApiError('TimeframeDefinitionError', 'timeframe start must be before its end');
  }
  return { startMs, endMs };
}

/** An ISO-8601 instant → ms; a date without an offset is read as UTC. */
export function parseInstant(value: unknown, what: string): number {
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)) {
    const parsed = DateTime.fromISO(value, { zone: 'utc', setZone: true });
    if (parsed.isValid) return parsed.toMillis();
  }
  throw new ApiError('TimeframeDefinitionError',
    `timeframe ${what} ${JSON.stringify(value)} is not an ISO-8601 date-time ` +
    '(e.g. "2024-01-31T00:00:00.000Z")');
}
