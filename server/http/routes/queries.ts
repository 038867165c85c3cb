/**
 * Analyses (docs/api.md §6): GET (lenient query-string params), POST (one JSON object) and
 * HEAD, with a Read or Master Key. The engine validates the parameters and runs the analysis.
 */
import { ANALYSES as ANALYSES_LIST, ApiError, isAsyncExtraction, withForcedFilters } from '../../../engine/index.js';
import { requireScope, type Scope } from '../auth.js';
import { lenientParams, parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';
import { submitExtraction } from './extractions.js';

/** THE list of analyses (engine/query/plan/plan.ts); anything else in the path is 404. */
const ANALYSES: ReadonlySet<string> = new Set(ANALYSES_LIST);

function queryParams(ctx: Ctx): Record<string, unknown> {
  if (ctx.method !== 'POST') return lenientParams(ctx.query);
  if (ctx.body.length === 0) return lenientParams(ctx.query);
  const body = parseJsonBody(ctx.body);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError('InvalidQueryError',
      'The query body must be one JSON object of parameters.');
  }
  const { api_key: _ignored, ...params } = body as Record<string, unknown>;
  return params;
}

/**
 * The parameters with an access key's forced filters ANDed in: into `filters` (aggregates,
 * multi_analysis, extractions) or into every funnel step's. A client cannot remove them: they are
 * appended after its own, and a `filters` that is not a list is refused rather than dropped.
 */
function scopedParams(analysis: string, params: Record<string, unknown>, scope: Scope): Record<string, unknown> {
  const forced = scope.access?.options.queries?.filters;
  if (forced === undefined || forced.length === 0) return params;
  if (analysis !== 'funnel') return { ...params, filters: withForcedFilters(params.filters, forced) };
  if (!Array.isArray(params.steps)) return params; // refused as a funnel without steps
  return {
    ...params,
    steps: params.steps.map((step: unknown) => (step !== null && typeof step === 'object' && !Array.isArray(step)
      ? { ...step, filters: withForcedFilters((step as Record<string, unknown>).filters, forced) }
      : step)),
  };
}

export const runQuery: Handler = async (ctx, { engine, cluster }) => {
  const { project, analysis } = ctx.params as { project: string; analysis: string };
  const scope = requireScope(engine, project, ctx.key, ['read'], 'queries');
  if (!ANALYSES.has(analysis)) {
    throw new ApiError('ResourceNotFoundError',
      `Unknown analysis "${analysis}"; see docs/api.md §6 for the list.`);
  }
  const params = scopedParams(analysis, queryParams(ctx), scope);
  if (analysis === 'extraction' && isAsyncExtraction(params)) return submitExtraction(engine, project, params, cluster?.queries);
  // With --cluster-nodes, run where the events it reads are stored (server/cluster/queries.ts).
  const result = await (cluster?.queries ?? engine.queries).run(project, analysis, params);
  // The engine answers with the whole body ({result, ...}); a bare value gets the envelope.
  const isObject = result !== null && typeof result === 'object' && !Array.isArray(result);
  return json(200, isObject && 'result' in result ? result : { result });
};
