/**
 * Saved and cached queries (spec/api.md §9): definitions are managed with the Master Key and read
 * with the Read or Master Key; `/result` serves a cached query from memory (no rate limit) and
 * runs any other as an ad-hoc query would. Every answer but DELETE's has a JSON body.
 */
import { ApiError } from '../../../engine/index.js';
import { requireProjectKey } from '../auth.js';
import { parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';

function names(ctx: Ctx): { project: string; name: string } {
  return ctx.params as { project: string; name: string };
}

export const listSaved: Handler = (ctx, { engine }) => {
  const project = ctx.params['project']!;
  requireProjectKey(engine, project, ctx.key, ['read']);
  return json(200, engine.listSavedQueries(project));
};

export const getSaved: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['read']);
  return json(200, engine.getSavedQuery(project, name));
};

export const putSaved: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  if (ctx.body.length === 0) throw new ApiError('MissingRequiredRequestFieldError', 'The body needs a "query" object.');
  const { created, saved } = engine.putSavedQuery(project, name, parseJsonBody(ctx.body));
  return json(created ? 201 : 200, saved);
};

export const deleteSaved: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  engine.deleteSavedQuery(project, name);
  return { status: 204 };
};

export const savedResult: Handler = async (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['read']);
  return json(200, await engine.savedQueryResult(project, name));
};
