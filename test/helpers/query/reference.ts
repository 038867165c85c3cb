/**
 * The naive reference of the query semantics (test support): evaluates filters and analyses on
 * one event object at a time, written independently of the scan's typed-array code.
 */
import { milesBetween } from '../../../engine/query/eval/filter-eval.js';
import type { FilterNode } from '../../../engine/query/plan/plan.js';
import type { TestEvent, Value } from './test-support.js';

export function valueAt(event: TestEvent, path: string): Value {
  if (path === 'svc.timestamp') return event.ts;
  if (path === 'svc.created_at') return event.ts + 1000;
  return event.props[path];
}

export function matches(event: TestEvent, node: FilterNode): boolean {
  if (node.kind === 'or') return node.any.some((sub) => matches(event, sub));
  const value = valueAt(event, node.path);
  switch (node.kind) {
    case 'compare': {
      const v = node.value;
      if (node.operator === 'eq') return equals(value, v);
      if (node.operator === 'ne') return !equals(value, v);
      if (typeof value !== typeof v || (typeof v !== 'number' && typeof v !== 'string')) return false;
      const a = value as number | string;
      return node.operator === 'lt' ? a < v : node.operator === 'lte' ? a <= v
        : node.operator === 'gt' ? a > v : a >= v;
    }
    case 'set': {
      const any = node.values.some((v) => equals(value, v));
      return any !== node.negate;
    }
    case 'exists':
      return (value !== undefined) === node.exists;
    case 'text': {
      const v = node.value;
      let p = false;
      if (node.operator === 'contains') {
        p = Array.isArray(value) ? value.includes(v as never)
          : typeof value === 'string' && typeof v === 'string' && value.includes(v);
      } else if (node.operator === 'starts_with') {
        const test = (x: unknown) => typeof x === 'string' && x.startsWith(v as string);
        p = Array.isArray(value) ? value.some(test) : test(value);
      } else {
        const re = new RegExp(v as string);
        const test = (x: unknown) => typeof x === 'string' && re.test(x);
        p = Array.isArray(value) ? value.some(test) : test(value);
      }
      return p !== node.negate;
    }
    case 'within':
      return Array.isArray(value) && value.length === 2 &&
        milesBetween(node.lng, node.lat, value[0] as number, value[1] as number) <= node.miles;
  }
}

function equals(value: Value, v: unknown): boolean {
  if (v === null) return value === null || value === undefined;
  if (Array.isArray(value)) return value.includes(v as never);
  return value === v;
}

/** The reference result of one analysis over the (already selected) events. */
export function analyze(
  kind: string, events: readonly TestEvent[], target: string | null, percentile = 50,
): unknown {
  if (kind === 'count') return events.length;
  const values = events.map((event) => valueAt(event, target!))
    .filter((v) => v !== undefined && v !== null);
  const numbers = values.filter((v): v is number => typeof v === 'number');
  if (kind === 'count_unique') return new Set(values.map((v) => JSON.stringify(v))).size;
  if (kind === 'select_unique') {
    const seen = new Map(values.map((v) => [JSON.stringify(v), v]));
    return [...seen.values()];
  }
  if (kind === 'sum') return numbers.reduce((a, b) => a + b, 0);
  if (numbers.length === 0) return null;
  const sorted = [...numbers].sort((a, b) => a - b);
  const mean = numbers.reduce((a, b) => a + b, 0) / numbers.length;
  switch (kind) {
    case 'minimum': return sorted[0];
    case 'maximum': return sorted[sorted.length - 1];
    case 'average': return mean;
    case 'standard_deviation':
      return Math.sqrt(numbers.reduce((a, x) => a + (x - mean) ** 2, 0) / numbers.length);
    case 'median': case 'percentile': {
      const q = (kind === 'median' ? 50 : percentile) / 100;
      const position = q * (sorted.length - 1);
      const low = Math.floor(position);
      if (low + 1 >= sorted.length) return sorted[low];
      return sorted[low] + (sorted[low + 1] - sorted[low]) * (position - low);
    }
  }
  throw new Error(`no reference for ${kind}`);
}
