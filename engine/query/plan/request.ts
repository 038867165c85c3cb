/**
 * Turns a query's parameters (POST body or leniently parsed GET query) into a validated, frozen
 * Plan. The only place wire names (event_collection, group_by, ...) become plan fields. Pure: the
 * clock and the interval bound come in as arguments; no I/O.
 */
import type { Zone } from 'luxon';
import { ApiError } from '../../base/errors.js';
import { FUNNEL_STEPS_MAX, INTERVALS_MAX } from '../../base/limits.js';
import { parseFilters } from './filter.js';
import { cutBuckets, parseInterval } from './interval.js';
import {
  AGGREGATE_KINDS, ANALYSES, type AggregateKind, type AggregatePlan, type AggregateSpec, type Analysis,
  type Buckets, type ExtractionPlan, type FunnelPlan, type FunnelStepPlan, type OrderBy, type Plan,
} from './plan.js';
import { parseTimezone, resolveTimeframe } from './timeframe.js';

type Params = Readonly<Record<string, unknown>>;

const AGGREGATES: readonly AggregateKind[] = AGGREGATE_KINDS;

export interface RequestContext {
  readonly nowMs: number;
  readonly intervalsMax?: number;
}

export function parseRequest(analysis: string, params: Params, context: RequestContext): Plan {
  if (!(ANALYSES as readonly string[]).includes(analysis)) {
    throw new ApiError('ResourceNotFoundError',
      `unknown analysis "${analysis}"; use one of ${ANALYSES.join(', ')}`);
  }
  const plan = analysis === 'extraction' ? parseExtraction(params, context)
    : analysis === 'funnel' ? parseFunnel(params, context)
      : parseAggregate(analysis as Analysis, params, context);
  return deepFreeze(plan);
}

function parseAggregate(analysis: Analysis, params: Params, context: RequestContext): AggregatePlan {
  const collection = requireCollection(params.event_collection);
  const zone = parseTimezone(params.timezone);
  const range = resolveTimeframe(requireTimeframe(params.timeframe), zone, context.nowMs);
  const multi = analysis === 'multi_analysis';
  const aggregates = multi ? parseAnalyses(params.analyses)
    : [parseSpec(null, analysis as AggregateKind, params)];
  const groupBy = parseGroupBy(params.group_by);
  const buckets: Buckets | null = params.interval === undefined || params.interval === null ||
    params.interval === '' ? null
    : cutBuckets(range, parseInterval(params.interval), zone, context.intervalsMax ?? INTERVALS_MAX);
  const orderBy = parseOrderBy(params.order_by, groupBy, aggregates);
  const limit = parseOptionalCount(params.limit, 'limit');
  if (limit !== null && groupBy === null) {
    throw new ApiError('InvalidQueryError', '"limit" applies only to group_by queries');
  }
  return {
    kind: 'aggregate', analysis, collection, range, filters: parseFilters(params.filters),
    aggregates, multi, groupBy, buckets, orderBy, limit,
    includeMetadata: parseBool(params.include_metadata, 'include_metadata'),
  };
}

function parseSpec(label: string | null, kind: AggregateKind, params: Params): AggregateSpec {
  const where = label === null ? '' : ` (analysis "${label}")`;
  let targetProperty: string | null = null;
  if (kind !== 'count') {
    if (typeof params.target_property !== 'string' || params.target_property === '') {
      throw new ApiError('MissingRequiredRequestFieldError',
        `${kind} needs a "target_property"${where}`);
    }
    targetProperty = params.target_property;
  }
  let percentile: number | null = kind === 'median' ? 50 : null;
  if (kind === 'percentile') {
    if (params.percentile === undefined || params.percentile === null || params.percentile === '') {
      throw new ApiError('MissingRequiredRequestFieldError', `percentile needs "percentile"${where}`);
    }
    percentile = Number(params.percentile);
    if (!Number.isFinite(percentile) || percentile < 0 || percentile > 100) {
      throw new ApiError('InvalidQueryError', `"percentile" must be a number from 0 to 100${where}`);
    }
  }
  const forceExact = parseBool(params.force_exact, 'force_exact');
  return { label, kind, targetProperty, percentile, forceExact };
}

function parseAnalyses(value: unknown): AggregateSpec[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value) ||
    Object.keys(value).length === 0) {
    throw new ApiError('MissingRequiredRequestFieldError',
      'multi_analysis needs "analyses": {"<label>": {"analysis_type", "target_property"?}}');
  }
  return Object.entries(value as Record<string, unknown>).map(([label, entry]) => {
    const spec = (typeof entry === 'object' && entry !== null ? entry : {}) as Params;
    const kind = spec.analysis_type;
    if (typeof kind !== 'string' || !(AGGREGATES as readonly string[]).includes(kind)) {
      throw new ApiError('InvalidQueryError',
        `analysis "${label}" needs an "analysis_type" among ${AGGREGATES.join(', ')}`);
    }
    return parseSpec(label, kind as AggregateKind, spec);
  });
}

function parseGroupBy(value: unknown): string[] | null {
  if (value === undefined || value === null || value === '') return null;
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) return null;
  if (!list.every((name) => typeof name === 'string' && name !== '') ||
    new Set(list).size !== list.length) {
    throw new ApiError('InvalidQueryError',
      '"group_by" must be a property name or a list of distinct property names');
  }
  return list as string[];
}

function parseOrderBy(
  value: unknown, groupBy: readonly string[] | null, aggregates: readonly AggregateSpec[],
): OrderBy[] {
  if (value === undefined || value === null || value === '') return [];
  if (groupBy === null) throw new ApiError('InvalidQueryError', '"order_by" needs "group_by"');
  const list = Array.isArray(value) ? value : [value];
  const known = new Set<string>(['result', ...groupBy]);
  for (const spec of aggregates) if (spec.label !== null) known.add(spec.label);
  return list.map((entry): OrderBy => {
    const object = (typeof entry === 'string' ? { property_name: entry } : entry) as Params | null;
    const property = object?.property_name;
    const direction = String(object?.direction ?? 'ASC').toUpperCase();
    if (typeof property !== 'string' || !known.has(property) ||
      (direction !== 'ASC' && direction !== 'DESC')) {
      throw new ApiError('InvalidQueryError',
        '"order_by" takes {"property_name": "result" or a group_by property, ' +
        '"direction": "ASC" | "DESC"} or a list of them');
    }
    return { property, descending: direction === 'DESC' };
  });
}

function parseExtraction(params: Params, context: RequestContext): ExtractionPlan {
  const collection = requireCollection(params.event_collection);
  const zone = parseTimezone(params.timezone);
  const latest = parseOptionalCount(params.latest, 'latest');
  // `latest` without a timeframe means the N newest events of all time (docs/api.md §6, §11): what
  // Keen's Explorer sends for its collection preview.
  const range = latest !== null && isAbsent(params.timeframe)
    ? ALL_TIME
    : resolveTimeframe(requireTimeframe(params.timeframe), zone, context.nowMs);
  let propertyNames: string[] | null = null;
  const names = params.property_names;
  if (names !== undefined && names !== null && names !== '') {
    const list = Array.isArray(names) ? names : [names];
    if (!list.every((name) => typeof name === 'string' && name !== '')) {
      throw new ApiError('InvalidQueryError', '"property_names" must be a list of property names');
    }
    propertyNames = list as string[];
  }
  return {
    kind: 'extraction', collection, range, filters: parseFilters(params.filters), propertyNames,
    latest,
    includeMetadata: parseBool(params.include_metadata, 'include_metadata'),
  };
}

function parseFunnel(params: Params, context: RequestContext): FunnelPlan {
  const steps = params.steps;
  if (!Array.isArray(steps) || steps.length === 0) {
    throw new ApiError('MissingRequiredRequestFieldError', 'funnel needs a non-empty "steps" list');
  }
  if (steps.length > FUNNEL_STEPS_MAX) {
    throw new ApiError('InvalidQueryError', `a funnel has at most ${FUNNEL_STEPS_MAX} steps`);
  }
  const plans = steps.map((step, index) => parseStep(step, index, params, context));
  if (plans[0].optional || plans[0].inverted) {
    throw new ApiError('InvalidQueryError', 'the first funnel step can be neither optional nor inverted');
  }
  return {
    kind: 'funnel', steps: plans,
    includeMetadata: parseBool(params.include_metadata, 'include_metadata'),
  };
}

function parseStep(step: unknown, index: number, root: Params, context: RequestContext): FunnelStepPlan {
  if (typeof step !== 'object' || step === null || Array.isArray(step)) {
    throw new ApiError('InvalidQueryError', `funnel step ${index} must be an object`);
  }
  const s = step as Params;
  const collection = requireCollection(s.event_collection, `funnel step ${index}: `);
  if (typeof s.actor_property !== 'string' || s.actor_property === '') {
    throw new ApiError('MissingRequiredRequestFieldError',
      `funnel step ${index} needs an "actor_property"`);
  }
  const timeframe = s.timeframe ?? root.timeframe;
  const timezone = s.timezone ?? root.timezone;
  const zone: Zone = parseTimezone(timezone);
  const range = resolveTimeframe(requireTimeframe(timeframe), zone, context.nowMs);
  const filters = parseFilters(s.filters);
  const optional = parseBool(s.optional, 'optional');
  const inverted = parseBool(s.inverted, 'inverted');
  const withActors = parseBool(s.with_actors, 'with_actors');
  const normalized = {
    event_collection: collection, actor_property: s.actor_property, timeframe,
    timezone: timezone ?? 'UTC', filters: s.filters ?? [], optional, inverted,
    with_actors: withActors,
  };
  return { collection, actorProperty: s.actor_property, range, filters, optional, inverted,
    withActors, normalized };
}

function requireCollection(value: unknown, where = ''): string {
  if (typeof value !== 'string' || value === '') {
    throw new ApiError('MissingRequiredRequestFieldError', `${where}"event_collection" is required`);
  }
  return value;
}

/** Every instant a timestamp can hold (JavaScript's Date range). */
const ALL_TIME = { startMs: -8.64e15, endMs: 8.64e15 };

function isAbsent(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

function requireTimeframe(value: unknown): unknown {
  if (isAbsent(value)) {
    throw new ApiError('MissingRequiredRequestFieldError',
      '"timeframe" is required, e.g. "this_7_days" or {"start": "...", "end": "..."}');
  }
  return value;
}

/** true/false or their strings (GET); absent is false. */
function parseBool(value: unknown, name: string): boolean {
  if (value === undefined || value === null || value === false || value === 'false' ||
    value === '') return false;
  if (value === true || value === 'true') return true;
  throw new ApiError('InvalidQueryError', `"${name}" must be true or false`);
}

function parseOptionalCount(value: unknown, name: string): number | null {
  if (value === undefined || value === null || value === '') return null;
  const count = Number(value);
  if (!Number.isSafeInteger(count) || count < 1 || (typeof value !== 'number' && typeof value !== 'string')) {
    throw new ApiError('InvalidQueryError', `"${name}" must be a positive integer`);
  }
  return count;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
