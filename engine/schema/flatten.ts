/**
 * Flattens a prepared event into (dotted path, leaf value) pairs: primitives, nulls and lists.
 * svc.id, svc.timestamp and svc.created_at are left out: the store keeps them apart (seq, ts,
 * createdAt). What no dotted path of a primitive can say becomes a *structural* leaf, whose path
 * ends with '.' (no property name is empty, so no property path does) and whose value is the JSON
 * text of the value at the path without the dot: `svc.addons` (a list of objects) and empty
 * objects. The columns are the only stored copy of an event (storage/event-json.ts rebuilds it),
 * so every part of it must be in some leaf. Schemas and queries skip structural paths.
 * Reuses the caller's arrays so the write path allocates no per-leaf objects.
 */
import { JOINED_PATHS_MAX } from '../base/limits.js';
import type { JsonObject } from './prepare.js';

const SKIPPED_SVC = new Set(['id', 'timestamp', 'created_at']);

/** Suffix of a structural leaf's path (see above). */
export const STRUCTURAL_SUFFIX = '.';
const ADDONS_PATH = 'svc.addons';
const EMPTY_OBJECT_JSON = '{}';

/** Whether a leaf path is structural: JSON text of a value that has no primitive leaves. */
export function isStructuralPath(path: string): boolean {
  return path.charCodeAt(path.length - 1) === 46; // '.'
}

/**
 * Leaves of one or more events, appended in order. The leaves of the event being flattened are
 * those in [start, count); a batch keeps one Leaves for all its events.
 */
export interface Leaves {
  paths: string[];
  values: unknown[];
  start: number;
  count: number;
}

export function newLeaves(): Leaves {
  return { paths: [], values: [], start: 0, count: 0 };
}

/**
 * Joins parent paths and keys once per distinct pair, so flattening the millionth event with
 * `user.id` allocates no string. Owned by the write path; not shared across threads.
 */
export class PathJoiner {
  private readonly byParent = new Map<string, Map<string, string>>();
  private size = 0;

  join(parent: string, key: string): string {
    let children = this.byParent.get(parent);
    if (children === undefined) {
      if (this.size >= JOINED_PATHS_MAX) this.clear();
      children = new Map();
      this.byParent.set(parent, children);
    }
    let joined = children.get(key);
    if (joined === undefined) {
      joined = `${parent}.${key}`;
      children.set(key, joined);
      this.size++;
    }
    return joined;
  }

  private clear(): void {
    this.byParent.clear();
    this.size = 0;
  }
}

const UNCACHED: Pick<PathJoiner, 'join'> = { join: (parent, key) => `${parent}.${key}` };

/** Appends the leaves of `event` after the existing ones and marks them as the current event's. */
export function flattenEvent(event: JsonObject, out: Leaves, paths: Pick<PathJoiner, 'join'> = UNCACHED): void {
  out.start = out.count;
  for (const key in event) {
    const value = event[key];
    if (key === 'svc' && isPlainObject(value)) {
      for (const svcKey in value) {
        if (SKIPPED_SVC.has(svcKey)) continue;
        if (svcKey === 'addons') {
          const addons = value[svcKey];
          if (addons !== undefined) push(out, ADDONS_PATH + STRUCTURAL_SUFFIX, JSON.stringify(addons));
          continue;
        }
        visit(value[svcKey], paths.join('svc', svcKey), out, paths);
      }
      continue;
    }
    visit(value, key, out, paths);
  }
}

/** Appends the leaves of a plain object, with no svc rule: add-on results, relative to their output. */
export function flattenObject(object: JsonObject, out: Leaves, paths: Pick<PathJoiner, 'join'> = UNCACHED): void {
  out.start = out.count;
  for (const key in object) visit(object[key], key, out, paths);
}

function visit(value: unknown, path: string, out: Leaves, paths: Pick<PathJoiner, 'join'>): void {
  if (isPlainObject(value)) {
    let empty = true;
    for (const key in value) {
      empty = false;
      visit(value[key], paths.join(path, key), out, paths);
    }
    if (empty) push(out, path + STRUCTURAL_SUFFIX, EMPTY_OBJECT_JSON);
    return;
  }
  push(out, path, value);
}

function push(out: Leaves, path: string, value: unknown): void {
  out.paths[out.count] = path;
  out.values[out.count] = value;
  out.count++;
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * About the JSON size of one leaf: its path and value and the quotes, colon and comma around them
 * (leavesBytes in event-preparer.ts sums these). Strings count a byte a character.
 */
export function leafBytes(path: string, value: unknown): number {
  return path.length + 4 + valueBytes(value);
}

function valueBytes(value: unknown): number {
  switch (typeof value) {
    case 'string': return value.length + 2;
    case 'number': return 8;
    case 'boolean': return 5;
    default: {
      if (!Array.isArray(value)) return 4; // null
      let bytes = 2;
      for (const item of value) bytes += valueBytes(item) + 1;
      return bytes;
    }
  }
}
