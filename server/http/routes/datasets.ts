/**
 * Cached datasets (spec/api.md §10): defined and deleted with the Master Key; listed, read and
 * queried with the Read or Master Key or an access key permitted `datasets`. Results come from
 * memory and do not count toward the query rate limit.
 */
import { ApiError } from '../../../engine/index.js';
import { requireProjectKey, requireScope } from '../auth.js';
import { lenientParams, parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';

function names(ctx: Ctx): { project: string; name: string } {
  return ctx.params as { project: string; name: string };
}

export const listDatasets: Handler = (ctx, { engine }) => {
  const project = ctx.params['project']!;
  requireScope(engine, project, ctx.key, ['read'], 'datasets');
  const datasets = engine.listDatasets(project);
  return json(200, { datasets, count: datasets.length });
};

export const getDataset: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireScope(engine, project, ctx.key, ['read'], 'datasets');
  return json(200, engine.getDataset(project, name));
};

export const putDataset: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  if (ctx.body.length === 0) throw new ApiError('MissingRequiredRequestFieldError', 'The body needs "query" and "index_by".');
  return json(201, engine.putDataset(project, name, parseJsonBody(ctx.body)));
};

export const deleteDataset: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  engine.deleteDataset(project, name);
  return { status: 204 };
};

export const datasetResults: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireScope(engine, project, ctx.key, ['read'], 'datasets');
  const params = lenientParams(ctx.query);
  const indexBy = ctx.query.get('index_by');
  if (indexBy === null || indexBy === '') throw new ApiError('MissingRequiredRequestFieldError', 'Results need an "index_by" value.');
  if (params.timeframe === undefined) throw new ApiError('MissingRequiredRequestFieldError', 'Results need a "timeframe".');
  return json(200, { result: engine.datasetResults(project, name, indexBy, params.timeframe) });
};
