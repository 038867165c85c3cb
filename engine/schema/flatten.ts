/**
 * Flattens a prepared event into (dotted path, leaf value) pairs: primitives, nulls and lists.
 * svc.id, svc.timestamp, svc.created_at and svc.addons are left out: the store keeps them apart.
 * Reuses the caller's arrays so the write path allocates no per-leaf objects.
 */
import type { JsonObject } from './prepare.js';

const SKIPPED_SVC = new Set(['id', 'timestamp', 'created_at', 'addons']);

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

/** Appends the leaves of `event` after the existing ones and marks them as the current event's. */
export function flattenEvent(event: JsonObject, out: Leaves): void {
  out.start = out.count;
  for (const key in event) {
    const value = event[key];
    if (key === 'svc' && isPlainObject(value)) {
      for (const svcKey in value) {
        if (SKIPPED_SVC.has(svcKey)) continue;
        visit(value[svcKey], `svc.${svcKey}`, out);
      }
      continue;
    }
    visit(value, key, out);
  }
}

function visit(value: unknown, path: string, out: Leaves): void {
  if (isPlainObject(value)) {
    for (const key in value) visit(value[key], `${path}.${key}`, out);
    return;
  }
  out.paths[out.count] = path;
  out.values[out.count] = value;
  out.count++;
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
