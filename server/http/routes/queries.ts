/**
 * Analyses (spec/api.md §6): GET (lenient query-string params), POST (one JSON object) and
 * HEAD, with a Read or Master Key. The engine validates the parameters and runs the analysis.
 */
import { ApiError, isAsyncExtraction } from '../../../engine/index.js';
import { requireProjectKey } from '../auth.js';
import { lenientParams, parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';
import { submitExtraction } from './extractions.js';

const ANALYSES = new Set([
  'count', 'count_unique', 'minimum', 'maximum', 'sum', 'average', 'median', 'percentile',
  'standard_deviation', 'select_unique', 'extraction', 'funnel', 'multi_analysis',
]);

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

export const runQuery: Handler = async (ctx, { engine }) => {
  const { project, analysis } = ctx.params as { project: string; analysis: string };
  requireProjectKey(engine, project, ctx.key, ['read']);
  if (!ANALYSES.has(analysis)) {
    throw new ApiError('ResourceNotFoundError',
      `Unknown analysis "${analysis}"; see spec/api.md §6 for the list.`);
  }
  const params = queryParams(ctx);
  if (analysis === 'extraction' && isAsyncExtraction(params)) return submitExtraction(engine, project, params);
  const result = await engine.query(project, analysis, params);
  // The engine answers with the whole body ({result, ...}); a bare value gets the envelope.
  const isObject = result !== null && typeof result === 'object' && !Array.isArray(result);
  return json(200, isObject && 'result' in result ? result : { result });
};
