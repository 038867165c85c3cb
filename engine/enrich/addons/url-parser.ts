/**
 * svc:url_parser: URL → { protocol, domain, path, anchor, query_string } with Node's WHATWG URL.
 * `protocol` has no ':' ('https'), `domain` is the hostname (lower case, punycode), `path` the
 * pathname, `anchor` the fragment without '#', `query_string` an object of parameter → value.
 *
 * Null semantics: the output object is always written. A value that is not a string, or a string
 * that is not an absolute URL, gives every field null. For a valid URL, `anchor` is null when there
 * is no fragment and `query_string` is {} when there is no query. A repeated parameter keeps its
 * first value (a property keeps one type); a name that is not a valid property name (empty,
 * containing '.', 256+ characters, `__proto__`) is dropped rather than rejecting the event.
 * Parsed URLs are LRU-cached.
 */
import { PROPERTY_NAME_CHARS_MAX } from '../../base/limits.js';
import { URL_CACHE_ENTRIES_MAX, URL_CACHED_CHARS_MAX } from '../../base/limits.js';
import { LruCache } from '../lru.js';
import type { Addon } from './addon.js';

export function createUrlParser(cacheEntriesMax = URL_CACHE_ENTRIES_MAX): Addon {
  // Page URLs repeat; building url.searchParams was the costliest step of this add-on.
  const cache = new LruCache<string, ParsedUrl>(cacheEntriesMax);
  return {
    inputKeys: ['url'],
    compute(values) {
      const value = values[0];
      if (typeof value !== 'string') return copyParsed(UNPARSED);
      if (value.length > URL_CACHED_CHARS_MAX) return copyParsed(parseParts(value));
      let parsed = cache.get(value);
      if (parsed === undefined) {
        parsed = parseParts(value);
        cache.set(value, parsed);
      }
      return copyParsed(parsed);
    },
  };
}

interface ParsedUrl {
  readonly protocol: string | null;
  readonly domain: string | null;
  readonly path: string | null;
  readonly anchor: string | null;
  readonly query_string: Readonly<Record<string, string>> | null;
}

const UNPARSED: ParsedUrl = {
  protocol: null, domain: null, path: null, anchor: null, query_string: null,
};

function parseParts(value: string): ParsedUrl {
  const url = parseUrl(value);
  if (url === null) return UNPARSED;
  return {
    protocol: url.protocol.slice(0, -1),
    domain: url.hostname,
    path: url.pathname,
    anchor: url.hash.length > 1 ? url.hash.slice(1) : null,
    query_string: url.search.length > 1 ? queryObject(url.searchParams) : {},
  };
}

/** A fresh output object, so events never share the query_string object. */
function copyParsed(parsed: ParsedUrl): Record<string, unknown> {
  const query = parsed.query_string;
  return { ...parsed, query_string: query === null ? null : { ...query } };
}

/** The parsed URL, or null when `value` is not a string holding an absolute URL. */
export function parseUrl(value: unknown): URL | null {
  if (typeof value !== 'string') return null;
  // A malformed URL is an expected input here, not an error: translate it to "no URL".
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

function queryObject(params: URLSearchParams): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [name, value] of params) {
    if (!isPropertyName(name) || Object.hasOwn(query, name)) continue;
    query[name] = value;
  }
  return query;
}

function isPropertyName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= PROPERTY_NAME_CHARS_MAX &&
    !name.includes('.') &&
    name !== '__proto__'
  );
}
