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
 *
 * Results are cached per add-on and distinct input as Fragments (fragment.ts). Given an Appended,
 * apply leaves results whose output is a new top-level name out of the event and lists them there
 * instead; the write path splices their JSON and leaves, which equal what the event's own
 * serialization would give. Any other output (nested, an existing name, read by a later add-on)
 * puts every result into the event as a fresh copy, as without an Appended.
 */
import { assert } from '../base/assert.js';
import { ApiError } from '../base/errors.js';
import type { Addon } from './addons/addon.js';
import { createDateTimeParser } from './addons/date-time-parser.js';
import { adoptDatabaseFiles, createIpToGeo, loadGeoDatabases, type SharedFile } from './addons/ip-to-geo.js';
export { sharedDatabaseFiles } from './addons/ip-to-geo.js';
import { createReferrerParser, loadReferrerTable } from './addons/referrer-parser.js';
import { createUaParser } from './addons/ua-parser.js';
import { loadUapRules } from './addons/uap-rules.js';
import { createUrlParser } from './addons/url-parser.js';
import {
  ADDONS_PER_EVENT_MAX, FRAGMENT_CACHE_ENTRIES_MAX, FRAGMENT_KEY_CHARS_MAX, PATH_CACHE_ENTRIES_MAX,
} from '../base/limits.js';
import { cloneJson, makeFragment, type Appended, type Fragment } from '../schema/fragment.js';
import { LruCache } from './lru.js';
import { MISSING, deletePath, isObject, parsePath, readPath, writePath } from './path.js';

export interface Enricher {
  /**
   * Enriches `event` in place; returns at once when it has no `svc.addons`. With `appended`, it
   * may list results there instead (cleared first): they belong after the event's last property.
   */
  apply(event: Record<string, unknown>, receivedAtMs: number, appended?: Appended): void;
  /** The input keys of the add-on called `name`, in the order its values are given; undefined: no such add-on. */
  inputKeys(name: string): readonly string[] | undefined;
  /**
   * The result of add-on `name` (inputKeys gives a name) for input values read from an event: the
   * fragment apply would use, from the cache when it is there. For readers that find the inputs
   * without an event object (ingest/fast-batch.ts).
   */
  result(name: string, values: readonly unknown[]): Fragment;
  /** Drops the databases and caches; apply must not be called afterwards. */
  close(): void;
}

export interface EnricherOptions {
  /** An mmdb City file (MaxMind GeoLite2/GeoIP2 or DB-IP) used for IPv4 and IPv6 alike. */
  geoipDbPath?: string | undefined;
  /** Database files another thread reserved or read (sharedDatabaseFiles there), shared, not re-read. */
  databaseFiles?: ReadonlyMap<string, SharedFile>;
  /**
   * Read every add-on's data now rather than on its first use: a server pays the ~0.6 s at start,
   * not on the first event that asks for an add-on; an embedding program opens at once.
   */
  eagerData?: boolean;
}

const IP_TO_GEO = 'svc:ip_to_geo';

export async function createEnricher(opts: EnricherOptions): Promise<Enricher> {
  if (opts.databaseFiles) adoptDatabaseFiles(opts.databaseFiles);
  const addons = new Map<string, Addon>([
    [IP_TO_GEO, createIpToGeo(loadGeoDatabases(opts.geoipDbPath))],
    ['svc:ua_parser', lazyAddon(['ua_string'], () => createUaParser(loadUapRules()), opts.eagerData === true)],
    ['svc:url_parser', createUrlParser()],
    ['svc:referrer_parser', lazyAddon(['referrer_url', 'page_url'], () => createReferrerParser(loadReferrerTable()),
      opts.eagerData === true)],
    ['svc:date_time_parser', createDateTimeParser()],
  ]);
  const cached = new Map<string, CachedAddon>();
  for (const [name, addon] of addons) {
    cached.set(name, { addon, fragments: new LruCache(FRAGMENT_CACHE_ENTRIES_MAX), shared: new WeakMap() });
  }
  let context: Context | null = { addons: cached, paths: new LruCache(PATH_CACHE_ENTRIES_MAX) };
  return {
    apply(event, receivedAtMs, appended) {
      if (appended !== undefined) appended.count = 0;
      const svc = event.svc;
      if (!isObject(svc) || svc.addons === undefined) return;
      assert(context !== null, 'Enricher used after close()');
      applyAddons(context, event, svc.addons, receivedAtMs, appended ?? null);
      if (appended !== undefined && appended.count < 0) appended.count = 0;
    },
    inputKeys(name) {
      return cached.get(name)?.addon.inputKeys;
    },
    result(name, values) {
      const addon = cached.get(name);
      assert(addon !== undefined && context !== null, 'Enricher.result takes a known add-on, before close()');
      return result(addon, values);
    },
    close() {
      context = null;
    },
  };
}

/**
 * An add-on whose data is read on its first use, not when the engine opens: uap-core's rules and
 * the referrer table are YAML that took ~0.6 s (and as much again in garbage collection) to parse
 * at every open, which an embedding program or a store that never uses them paid for nothing.
 * The bundled geo databases are read lazily the same way (ip-to-geo.ts).
 */
function lazyAddon(inputKeys: readonly string[], make: () => Addon, eager: boolean): Addon {
  let made: Addon | null = null;
  const addon = (): Addon => {
    if (made === null) {
      made = make();
      assert(made.inputKeys.join() === inputKeys.join(), 'a lazy add-on declares its own input keys');
    }
    return made;
  };
  if (eager) addon();
  return { inputKeys, compute: (values) => addon().compute(values) };
}

/** Whether `name` can be a new last property of an event that does not have it (not an array index). */
export function appendableName(name: string): boolean {
  return !INDEX_LIKE.test(name);
}

/** An add-on and its results by input. */
interface CachedAddon {
  readonly addon: Addon;
  readonly fragments: LruCache<string, Fragment>;
  /** With computeShared: the result kept for each shared object (one per place for ip_to_geo). */
  readonly shared: WeakMap<object, Fragment>;
}

/** What apply needs besides the event: the add-ons by name and parsed dotted paths. */
interface Context {
  readonly addons: ReadonlyMap<string, CachedAddon>;
  /** Paths repeat across events, and splitting them was the hottest code of apply. */
  readonly paths: LruCache<string, readonly string[]>;
}

function applyAddons(
  context: Context,
  event: Record<string, unknown>,
  entries: unknown,
  receivedAtMs: number,
  appended: Appended | null,
): void {
  if (!Array.isArray(entries)) invalid('svc.addons must be an array of add-on objects');
  if (entries.length > ADDONS_PER_EVENT_MAX) {
    const count = entries.length;
    invalid(`svc.addons has ${count} entries; at most ${ADDONS_PER_EVENT_MAX} are allowed`);
  }
  for (let index = 0; index < entries.length; index++) {
    runAddon(context, event, entries[index], index, receivedAtMs, appended);
    if (appended !== null && appended.count < 0) appended = null; // results now live in the event
  }
}

/**
 * One add-on entry. Messages are built only on failure: this runs for every enriched event.
 * Sets `appended.count` to -1 once it has moved the appended results into the event.
 */
function runAddon(
  context: Context,
  event: Record<string, unknown>,
  entry: unknown,
  index: number,
  receivedAtMs: number,
  appended: Appended | null,
): void {
  if (!isObject(entry)) {
    invalid(`svc.addons[${index}] must be an object with name, input and output`);
  }
  const name = entry.name;
  const cachedAddon = typeof name === 'string' ? context.addons.get(name) : undefined;
  if (cachedAddon === undefined) {
    invalid(`svc.addons[${index}]: unknown add-on name ${JSON.stringify(name ?? null)}`);
  }
  const at: EntryRef = { name: name as string, index, paths: context.paths };
  const input = entry.input;
  if (!isObject(input)) fail(at, 'input must be an object of property paths');
  const keys = cachedAddon.addon.inputKeys;
  const values: unknown[] = new Array(keys.length);
  for (let key = 0; key < keys.length; key++) {
    const segments = inputPath(input, keys[key], at);
    if (appended !== null && listed(appended, segments[0])) {
      moveIntoEvent(event, appended);
      appended = null;
    }
    values[key] = readInput(event, input, segments, keys[key], at, receivedAtMs);
  }
  const removeIp = name === IP_TO_GEO ? removeIpFlag(input, at) : false;
  const output = outputPath(entry.output, at);
  const fragment = result(cachedAddon, values);
  if (removeIp) {
    const ipPath = inputPath(input, 'ip', at);
    if (appended !== null && listed(appended, ipPath[0])) {
      moveIntoEvent(event, appended);
      appended = null;
    }
    deletePath(event, ipPath);
  }
  if (appended !== null && output.length === 1 && appendable(event, appended, output[0])) {
    appended.names[appended.count] = output[0];
    appended.fragments[appended.count++] = fragment;
    return;
  }
  if (appended !== null) moveIntoEvent(event, appended);
  const blocked = writePath(event, output, cloneJson(fragment.value));
  if (blocked !== null) {
    fail(at, `output "${entry.output}" passes through "${blocked}", which is not an object`);
  }
}

/** The cached result for these input values; values other than strings, or long ones, are not cached. */
function result(cachedAddon: CachedAddon, values: readonly unknown[]): Fragment {
  let key: string | null = null;
  if (values.length === 1) {
    if (typeof values[0] === 'string') key = values[0];
  } else if (values.every((value) => typeof value === 'string')) {
    key = values.join('\u0000');
  }
  if (key === null || key.length > FRAGMENT_KEY_CHARS_MAX) return makeFragment(cachedAddon.addon.compute(values));
  let fragment = cachedAddon.fragments.get(key);
  if (fragment === undefined) {
    const { addon, shared } = cachedAddon;
    if (addon.computeShared === undefined) fragment = makeFragment(addon.compute(values));
    else {
      const value = addon.computeShared(values);
      fragment = shared.get(value);
      if (fragment === undefined) shared.set(value, fragment = makeFragment(value as Record<string, unknown>));
    }
    cachedAddon.fragments.set(key, fragment);
  }
  return fragment;
}

/** True when `name` can be a new last property: absent from the event and from the list. */
function appendable(event: Record<string, unknown>, appended: Appended, name: string): boolean {
  // Names like "7" are array indices: objects order them first, not last.
  return !Object.hasOwn(event, name) && !listed(appended, name) && !INDEX_LIKE.test(name);
}

const INDEX_LIKE = /^(?:0|[1-9][0-9]*)$/;

function listed(appended: Appended, name: string): boolean {
  for (let i = 0; i < appended.count; i++) {
    if (appended.names[i] === name) return true;
  }
  return false;
}

/** Writes the listed results into the event as fresh copies and ends the list (count -1). */
function moveIntoEvent(event: Record<string, unknown>, appended: Appended): void {
  for (let i = 0; i < appended.count; i++) event[appended.names[i]] = cloneJson(appended.fragments[i].value);
  appended.count = -1;
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
  segments: readonly string[],
  key: string,
  at: EntryRef,
  receivedAtMs: number,
): unknown {
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
