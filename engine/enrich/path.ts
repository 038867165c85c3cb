/**
 * Dotted property paths (`store.address.city`) over plain event objects: parse, read, write and
 * delete.
 * Only own properties of plain objects are walked; arrays are values, never containers. Writing
 * creates missing objects; it never replaces a non-object on the way.
 */
import { EVENT_DEPTH_MAX } from '../base/limits.js';

/** The segments of `path`, or null when it is not a valid dotted path. */
export function parsePath(path: unknown): string[] | null {
  if (typeof path !== 'string' || path.length === 0) return null;
  const segments = path.split('.');
  if (segments.length > EVENT_DEPTH_MAX) return null;
  for (const segment of segments) {
    // `__proto__` would reach Object.prototype through plain assignment.
    if (segment.length === 0 || segment === '__proto__') return null;
  }
  return segments;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Returned by readPath when the path does not exist (JSON events never hold undefined). */
export const MISSING: unique symbol = Symbol('missing');

/** The value at the path, or MISSING. */
export function readPath(
  root: Record<string, unknown>,
  segments: readonly string[],
): unknown {
  let current: Record<string, unknown> = root;
  const last = segments.length - 1;
  for (let index = 0; index < last; index++) {
    const next = Object.hasOwn(current, segments[index]) ? current[segments[index]] : undefined;
    if (!isObject(next)) return MISSING;
    current = next;
  }
  if (!Object.hasOwn(current, segments[last])) return MISSING;
  const value = current[segments[last]];
  return value === undefined ? MISSING : value;
}

/**
 * Sets the value at the path, creating missing objects. Returns the dotted prefix that holds a
 * non-object (and writes nothing) or null on success.
 */
export function writePath(
  root: Record<string, unknown>,
  segments: readonly string[],
  value: unknown,
): string | null {
  let current: Record<string, unknown> = root;
  const last = segments.length - 1;
  for (let index = 0; index < last; index++) {
    const key = segments[index];
    const next = Object.hasOwn(current, key) ? current[key] : undefined;
    if (next === undefined) {
      const created: Record<string, unknown> = {};
      current[key] = created;
      current = created;
    } else if (isObject(next)) {
      current = next;
    } else {
      return segments.slice(0, index + 1).join('.');
    }
  }
  current[segments[last]] = value;
  return null;
}

/** Removes the property at the path when it exists; parents stay, even when left empty. */
export function deletePath(root: Record<string, unknown>, segments: readonly string[]): void {
  let current: Record<string, unknown> = root;
  const last = segments.length - 1;
  for (let index = 0; index < last; index++) {
    const next = Object.hasOwn(current, segments[index]) ? current[segments[index]] : undefined;
    if (!isObject(next)) return;
    current = next;
  }
  delete current[segments[last]];
}
