/**
 * extraction: the stored events of a timeframe that pass the filters, rebuilt from their columns
 * (storage/event-json.ts), oldest first; `latest` keeps the N most recent, `property_names` projects each event
 * onto the named dotted paths. A synchronous extraction scans at most extractionScanMax events
 * and returns at most extractionResultMax, else ExtractionTooLargeError.
 */
import { ApiError } from '../errors.js';
import type { ScanSource } from '../storage/chunk.js';
import { EventBuilder } from '../storage/event-json.js';
import type { ExtractionPlan } from './plan.js';
import { scanSource, type ExecEnv, type ScanBuffers } from './scan.js';

interface Found {
  readonly ts: number;
  readonly seq: number;
  /** The row's chunk's builder: an event is rebuilt only once it is among those returned. */
  readonly builder: EventBuilder;
  readonly row: number;
}

export function runExtraction(
  plan: ExtractionPlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers,
): Record<string, unknown> {
  const { extractionScanMax, extractionResultMax } = env.limits;
  const keep = plan.latest ?? extractionResultMax;
  let found: Found[] = [];
  scanSource(source, { range: plan.range, filters: plan.filters, columns: null }, env, buffers,
    ({ chunk, idx, n }) => {
      if (buffers.eventsScanned > extractionScanMax) throw tooLarge('scan', extractionScanMax);
      const builder = new EventBuilder(chunk, source.idKey);
      for (let k = 0; k < n; k++) {
        const i = idx[k];
        found.push({ ts: chunk.ts[i], seq: chunk.seq[i], builder, row: i });
      }
      if (plan.latest === null && found.length > extractionResultMax) {
        throw tooLarge('return', extractionResultMax);
      }
      if (found.length > 2 * keep) found = newest(found, keep);
    });
  found.sort(byTime);
  if (found.length > keep) {
    if (plan.latest === null) throw tooLarge('return', extractionResultMax);
    found = found.slice(found.length - keep);
  }
  const events = found.map((entry) => project(entry.builder.event(entry.row), plan.propertyNames));
  return { result: events };
}

function byTime(a: Found, b: Found): number {
  return a.ts - b.ts || a.seq - b.seq;
}

function newest(found: Found[], keep: number): Found[] {
  return found.sort(byTime).slice(found.length - keep);
}

function project(event: Record<string, unknown>, names: readonly string[] | null): unknown {
  if (names === null) return event;
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const parts = name.split('.');
    let value: unknown = event;
    for (const part of parts) {
      value = typeof value === 'object' && value !== null && !Array.isArray(value)
        ? (value as Record<string, unknown>)[part] : undefined;
    }
    if (value === undefined) continue;
    let target = out;
    for (const part of parts.slice(0, -1)) {
      const next = target[part];
      target = (typeof next === 'object' && next !== null ? next : (target[part] = {})) as Record<string, unknown>;
    }
    target[parts[parts.length - 1]] = value;
  }
  return out;
}

function tooLarge(what: 'scan' | 'return', limit: number): ApiError {
  const message = what === 'scan'
    ? `the extraction would scan more than ${limit} events`
    : `the extraction would return more than ${limit} events`;
  return new ApiError('ExtractionTooLargeError',
    `${message}; split the request into shorter timeframes (or set "latest")`);
}
