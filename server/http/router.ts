/**
 * Path matching for the route table: literal segments and ':name' captures, with `/v3/` as an alias
 * of `/3.0/`. It knows nothing of methods' meaning; the dispatcher turns "path known, method not"
 * into 405 and "no path" into 404.
 */
import type { RouteSpec } from './types.js';
import { ROUTER_CACHED_PATHS_MAX } from '../common/limits.js';

interface CompiledRoute {
  readonly spec: RouteSpec;
  readonly segments: readonly string[];
}

export interface Match {
  readonly spec: RouteSpec;
  readonly params: Readonly<Record<string, string>>;
}


export class Router {
  private readonly routes: readonly CompiledRoute[];
  /**
   * Matches by path: writes repeat a few paths (a project's collections) many times a second, and
   * matching one anew split it and tried every route. Callers copy `params` before changing it.
   */
  private readonly cache = new Map<string, Match | null>();

  constructor(specs: readonly RouteSpec[]) {
    this.routes = specs.map((spec) => ({ spec, segments: splitPath(spec.pattern) }));
  }

  /** The matching route, or null; throws URIError on a malformed percent-escape. */
  match(path: string): Match | null {
    let match = this.cache.get(path);
    if (match === undefined) {
      match = this.matchAnew(path); // throws before caching anything for a malformed escape
      if (this.cache.size >= ROUTER_CACHED_PATHS_MAX) this.cache.clear();
      this.cache.set(path, match);
    }
    return match;
  }

  private matchAnew(path: string): Match | null {
    const segments = splitPath(path);
    if (segments[0] === 'v3') segments[0] = '3.0';
    for (const route of this.routes) {
      const params = matchSegments(route.segments, segments);
      if (params) return { spec: route.spec, params: Object.freeze(params) };
    }
    return null;
  }
}

/** '/a/b/' → ['a', 'b']; '/' → []. Empty segments inside the path are kept (and never match). */
function splitPath(path: string): string[] {
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? [] : trimmed.split('/');
}

function matchSegments(
  pattern: readonly string[], path: readonly string[],
): Record<string, string> | null {
  if (pattern.length !== path.length) return null;
  const params: Record<string, string> = {};
  for (let index = 0; index < pattern.length; index++) {
    const want = pattern[index]!;
    const have = path[index]!;
    if (want.startsWith(':')) {
      if (have === '') return null;
      params[want.slice(1)] = decodeURIComponent(have);
    } else if (want !== have) {
      return null;
    }
  }
  return params;
}
