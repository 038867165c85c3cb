/**
 * The enrichment pipeline: runs the add-ons named in an event's `svc.addons`, in array order, on an
 * event the engine has already validated, stamped and placeholder-substituted. It owns add-on
 * configuration checks, reading inputs and writing outputs at dotted paths, and loading every data
 * file once in createEnricher. It does not validate the produced properties against the schema.
 *
 * Errors are InvalidEventError naming the add-on and field: `svc.addons` not an array or too long,
 * an entry that is not an object, an unknown name, a missing or malformed `input` or required input
 * path, an input path absent from the event, a missing output or one in the `svc` namespace, or an
 * output path through an existing non-object. Malformed input *values* are not errors: the add-on
 * still writes its whole output object, with null for each field it cannot determine (per-file
 * headers give the details; ua_parser omits `device.type`, as the seed says). When apply throws,
 * the event may be partly enriched; the caller rejects it, so no rollback is attempted.
 *
 * An input naming `svc.timestamp` on an event without one reads the receipt time (receivedAtMs).
 * Add-ons run in order, so a later one may read an earlier one's output.
 */
import { assert } from '../assert.js';
import { ApiError } from '../errors.js';
import type { Addon } from './addons/addon.js';
import { createDateTimeParser } from './addons/date-time-parser.js';
import { createIpToGeo, loadGeoDatabases } from './addons/ip-to-geo.js';
import { createReferrerParser, loadReferrerTable } from './addons/referrer-parser.js';
import { createUaParser } from './addons/ua-parser.js';
import { loadUapRules } from './addons/uap-rules.js';
import { createUrlParser } from './addons/url-parser.js';
import { ADDONS_PER_EVENT_MAX, PATH_CACHE_ENTRIES_MAX } from '../limits.js';
import { LruCache } from './lru.js';
import { MISSING, deletePath, isObject, parsePath, readPath, writePath } from './path.js';

export interface Enricher {
  /** Enriches `event` in place; returns at once when it has no `svc.addons`. */
  apply(event: Record<string, unknown>, receivedAtMs: number): void;
  /** Drops the databases and caches; apply must not be called afterwards. */
  close(): void;
}

export interface EnricherOptions {
  /** An mmdb City file (MaxMind GeoLite2/GeoIP2 or DB-IP) used for IPv4 and IPv6 alike. */
  geoipDbPath?: string;
}

const IP_TO_GEO = 'svc:ip_to_geo';

export async function createEnricher(opts: EnricherOptions): Promise<Enricher> {
  const addons = new Map<string, Addon>([
    [IP_TO_GEO, createIpToGeo(loadGeoDatabases(opts.geoipDbPath))],
    ['svc:ua_parser', createUaParser(loadUapRules())],
    ['svc:url_parser', createUrlParser()],
    ['svc:referrer_parser', createReferrerParser(loadReferrerTable())],
    ['svc:date_time_parser', createDateTimeParser()],
  ]);
  let context: Context | null = { addons, paths: new LruCache(PATH_CACHE_ENTRIES_MAX) };
  return {
    apply(event, receivedAtMs) {
      const svc = event.svc;
      if (!isObject(svc) || svc.addons === undefined) return;
      assert(context !== null, 'Enricher used after close()');
      applyAddons(context, event, svc.addons, receivedAtMs);
    },
    close() {
      context = null;
    },
  };
}

/** What apply needs besides the event: the add-ons by name and parsed dotted paths. */
interface Context {
  readonly addons: ReadonlyMap<string, Addon>;
  /** Paths repeat across events, and splitting them was the hottest code of apply. */
  readonly paths: LruCache<string, readonly string[]>;
}

function applyAddons(
  context: Context,
  event: Record<string, unknown>,
  entries: unknown,
  receivedAtMs: number,
): void {
  if (!Array.isArray(entries)) invalid('svc.addons must be an array of add-on objects');
  if (entries.length > ADDONS_PER_EVENT_MAX) {
    const count = entries.length;
    invalid(`svc.addons has ${count} entries; at most ${ADDONS_PER_EVENT_MAX} are allowed`);
  }
  for (let index = 0; index < entries.length; index++) {
    runAddon(context, event, entries[index], index, receivedAtMs);
  }
}

/** One add-on entry. Messages are built only on failure: this runs for every enriched event. */
function runAddon(
  context: Context,
  event: Record<string, unknown>,
  entry: unknown,
  index: number,
  receivedAtMs: number,
): void {
  if (!isObject(entry)) {
    invalid(`svc.addons[${index}] must be an object with name, input and output`);
  }
  const name = entry.name;
  const addon = typeof name === 'string' ? context.addons.get(name) : undefined;
  if (addon === undefined) {
    invalid(`svc.addons[${index}]: unknown add-on name ${JSON.stringify(name ?? null)}`);
  }
  const at: EntryRef = { name: name as string, index, paths: context.paths };
  const input = entry.input;
  if (!isObject(input)) fail(at, 'input must be an object of property paths');
  const keys = addon.inputKeys;
  const values: unknown[] = new Array(keys.length);
  for (let key = 0; key < keys.length; key++) {
    values[key] = readInput(event, input, keys[key], at, receivedAtMs);
  }
  const removeIp = name === IP_TO_GEO ? removeIpFlag(input, at) : false;
  const output = outputPath(entry.output, at);
  const result = addon.compute(values);
  if (removeIp) deletePath(event, inputPath(input, 'ip', at));
  const blocked = writePath(event, output, result);
  if (blocked !== null) {
    fail(at, `output "${entry.output}" passes through "${blocked}", which is not an object`);
  }
}

/** Which entry an error is about: "add-on svc:url_parser (svc.addons[1]): …". */
interface EntryRef {
  readonly name: string;
  readonly index: number;
  readonly paths: LruCache<string, readonly string[]>;
}

/** The value at the path named by `input[key]`; svc.timestamp falls back to the receipt time. */
function readInput(
  event: Record<string, unknown>,
  input: Record<string, unknown>,
  key: string,
  at: EntryRef,
  receivedAtMs: number,
): unknown {
  const segments = inputPath(input, key, at);
  const value = readPath(event, segments);
  if (value !== MISSING) return value;
  if (input[key] === 'svc.timestamp') return new Date(receivedAtMs).toISOString();
  return fail(at, `input.${key} names "${input[key]}", which the event does not have`);
}

function inputPath(input: Record<string, unknown>, key: string, at: EntryRef): readonly string[] {
  if (input[key] === undefined) fail(at, `input.${key} is required`);
  const segments = cachedPath(at.paths, input[key]);
  if (segments === null) fail(at, `input.${key} must be a dotted property path`);
  return segments;
}

function removeIpFlag(input: Record<string, unknown>, at: EntryRef): boolean {
  const flag = input.remove_ip_property;
  if (flag === undefined) return false;
  if (typeof flag !== 'boolean') fail(at, 'input.remove_ip_property must be a boolean');
  if (flag && (input.ip === 'svc' || String(input.ip).startsWith('svc.'))) {
    fail(at, 'input.remove_ip_property cannot remove a svc property');
  }
  return flag;
}

function outputPath(output: unknown, at: EntryRef): readonly string[] {
  if (output === undefined) fail(at, 'output is required');
  const segments = cachedPath(at.paths, output);
  if (segments === null) fail(at, 'output must be a dotted property path');
  if (segments[0] === 'svc') fail(at, `output "${output}" lies in the svc namespace`);
  return segments;
}

function cachedPath(
  paths: LruCache<string, readonly string[]>,
  path: unknown,
): readonly string[] | null {
  if (typeof path !== 'string') return null;
  const cached = paths.get(path);
  if (cached !== undefined) return cached;
  const segments = parsePath(path);
  if (segments !== null) paths.set(path, segments);
  return segments;
}

function fail(at: EntryRef, message: string): never {
  return invalid(`add-on ${at.name} (svc.addons[${at.index}]): ${message}`);
}

function invalid(message: string): never {
  throw new ApiError('InvalidEventError', message);
}
