/**
 * Validates the `filters` parameter into FilterNode plan nodes (docs/api.md §6). Timestamp
 * values of svc.timestamp / svc.created_at become ms so they compare as instants. Evaluation
 * over chunks lives in filter-eval.ts; this file is pure validation.
 */
import { ApiError } from '../../base/errors.js';
import { FILTERS_MAX, FILTER_OR_DEPTH_MAX, REGEX_PATTERN_CHARS_MAX } from '../../base/limits.js';
import type { CompareOperator, FilterNode, FilterScalar } from './plan.js';
import { parseInstant } from './timeframe.js';

const GEO_PATH = 'svc.location.coordinates';
export const TIME_PATHS: ReadonlySet<string> = new Set(['svc.timestamp', 'svc.created_at']);

export function parseFilters(value: unknown, depth = 0): FilterNode[] {
  if (value === undefined || value === null || value === '') return [];
  if (!Array.isArray(value)) {
    throw invalid('filters must be an array of {"property_name", "operator", "property_value"}');
  }
  if (value.length > FILTERS_MAX) throw invalid(`at most ${FILTERS_MAX} filters are allowed`);
  return value.map((filter) => parseFilter(filter, depth));
}

function parseFilter(filter: unknown, depth: number): FilterNode {
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
    throw invalid('each filter must be an object {"property_name", "operator", "property_value"}');
  }
  const { property_name: path, operator, property_value: value } = filter as Record<string, unknown>;
  if (operator === 'or') return parseOr(value, depth);
  if (typeof path !== 'string' || path === '') throw invalid('a filter needs a "property_name"');
  if (typeof operator !== 'string') throw invalid(`filter on "${path}" needs an "operator"`);
  switch (operator) {
    case 'eq': case 'ne': case 'lt': case 'lte': case 'gt': case 'gte':
      return parseCompare(path, operator, value);
    case 'in': case 'not_in':
      return parseSet(path, operator, value);
    case 'exists':
      return { kind: 'exists', path, exists: parseBoolean(value, path) };
    case 'contains': case 'not_contains': case 'starts_with': case 'regex':
      return parseText(path, operator, value);
    case 'within':
      return parseWithin(path, value);
    default:
      throw invalid(`filter operator "${operator}" is unknown; use eq ne lt lte gt gte exists in ` +
        'not_in contains not_contains starts_with regex within or');
  }
}

function parseOr(value: unknown, depth: number): FilterNode {
  if (depth >= FILTER_OR_DEPTH_MAX) throw invalid(`"or" filters nest at most ${FILTER_OR_DEPTH_MAX} deep`);
  if (!Array.isArray(value) || value.length === 0) {
    throw invalid('an "or" filter takes a non-empty array of filters as its property_value');
  }
  return { kind: 'or', any: parseFilters(value, depth + 1) };
}

function parseCompare(path: string, operator: CompareOperator, value: unknown): FilterNode {
  if (value === undefined) throw invalid(`filter on "${path}" needs a "property_value"`);
  const scalar = parseScalar(path, value);
  if (scalar === null && operator !== 'eq' && operator !== 'ne') {
    throw invalid(`operator "${operator}" on "${path}" cannot compare with null`);
  }
  if (typeof scalar === 'boolean' && operator !== 'eq' && operator !== 'ne') {
    throw invalid(`operator "${operator}" on "${path}" cannot order booleans`);
  }
  return { kind: 'compare', path, operator, value: scalar };
}

function parseSet(path: string, operator: 'in' | 'not_in', value: unknown): FilterNode {
  if (!Array.isArray(value)) throw invalid(`operator "${operator}" on "${path}" takes an array`);
  const values = value.map((item) => parseScalar(path, item));
  return { kind: 'set', path, negate: operator === 'not_in', values };
}

function parseText(
  path: string, operator: 'contains' | 'not_contains' | 'starts_with' | 'regex', value: unknown,
): FilterNode {
  if (operator === 'regex') {
    if (typeof value !== 'string') throw invalid(`regex on "${path}" takes a pattern string`);
    if (value.length > REGEX_PATTERN_CHARS_MAX) {
      throw invalid(`regex on "${path}" is longer than ${REGEX_PATTERN_CHARS_MAX} characters`);
    }
    try {
      new RegExp(value);
    } catch (error) {
      throw invalid(`regex on "${path}" is not a valid JavaScript pattern: ${String(error)}`);
    }
    return { kind: 'text', path, operator, negate: false, value };
  }
  if (operator === 'starts_with' && typeof value !== 'string') {
    throw invalid(`starts_with on "${path}" takes a string`);
  }
  const scalar = parseScalar(path, value);
  if (scalar === null) throw invalid(`operator "${operator}" on "${path}" needs a value`);
  const negate = operator === 'not_contains';
  return { kind: 'text', path, operator: negate ? 'contains' : operator, negate, value: scalar };
}

function parseWithin(path: string, value: unknown): FilterNode {
  if (path !== GEO_PATH) {
    throw new ApiError('InvalidPropertyNameForGeoFilter',
      `"within" filters only apply to ${GEO_PATH}, not "${path}"`);
  }
  const object = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const coordinates = object.coordinates;
  const miles = Number(object.max_distance_miles);
  const ok = Array.isArray(coordinates) && coordinates.length === 2 &&
    coordinates.every((x) => typeof x === 'number' && Number.isFinite(x)) &&
    Number.isFinite(miles) && miles >= 0 && object.max_distance_miles !== null;
  if (!ok) {
    throw invalid('"within" takes {"coordinates": [longitude, latitude], "max_distance_miles": d}');
  }
  const [lng, lat] = coordinates as number[];
  return { kind: 'within', path, lng, lat, miles };
}

function parseScalar(path: string, value: unknown): FilterScalar {
  if (TIME_PATHS.has(path)) {
    if (value === null) return null;
    if (typeof value !== 'string') throw invalid(`"${path}" compares with ISO-8601 strings`);
    try {
      return parseInstant(value, path);
    } catch {
      throw invalid(`"${JSON.stringify(value)}" is not an ISO-8601 instant for "${path}"`);
    }
  }
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw invalid(`filter value for "${path}" must be a number, string, boolean or null`);
}

function parseBoolean(value: unknown, path: string): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw invalid(`"exists" on "${path}" takes true or false`);
}

function invalid(message: string): ApiError {
  return new ApiError('InvalidFilterError', message);
}
