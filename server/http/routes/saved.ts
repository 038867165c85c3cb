/**
 * Saved and cached queries (docs/api.md §9): definitions are managed with the Master Key and read
 * with the Read or Master Key; `/result` serves a cached query from memory (no rate limit) and
 * runs any other as an ad-hoc query would. Every answer but DELETE's has a JSON body.
 */
import { ApiError, carriesForcedFilters, isApiError, type AccessKey, type NameList, type SavedQuery, type TallyEngine } from '../../../engine/index.js';
import { requireProjectKey, requireScope } from '../auth.js';
import { parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';

function names(ctx: Ctx): { project: string; name: string } {
  return ctx.params as { project: string; name: string };
}

function listed(list: NameList | undefined, name: string): boolean {
  if (list?.allowed !== undefined && !list.allowed.includes(name)) return false;
  return list?.blocked === undefined || !list.blocked.includes(name);
}

function keyNotPermitted(why: string): ApiError {
  return new ApiError('KeyNotPermittedError', why);
}

/**
 * Who may read saved query `name` (docs/api.md §8): project Read/Master keys, and access keys with
 * `saved_queries` (or, for a cached query's result, `cached_queries`) whose allowed/blocked lists
 * let the name through and whose forced filters the saved query already carries.
 */
function authorizeRead(engine: TallyEngine, project: string, key: string, name: string, result: boolean): void {
  let access: AccessKey | null;
  let via: 'saved_queries' | 'cached_queries' = 'saved_queries';
  try {
    access = requireScope(engine, project, key, ['read'], 'saved_queries').access;
  } catch (error) {
    if (!result || !isApiError(error) || error.error_code !== 'KeyNotPermittedError') throw error;
    access = requireScope(engine, project, key, ['read'], 'cached_queries').access;
    via = 'cached_queries';
  }
  if (access === null) return;
  if (!listed(access.options[via], name)) throw keyNotPermitted(`This access key may not read the saved query "${name}".`);
  const saved = engine.savedQueries.get(project, name);
  if (via === 'cached_queries' && saved.refresh_rate === 0) throw keyNotPermitted(`"${name}" is not a cached query.`);
  const forced = access.options.queries?.filters;
  if (!carriesForcedFilters(saved.query, forced)) {
    throw keyNotPermitted(`The saved query "${name}" does not carry this access key's filters.`);
  }
}

export const listSaved: Handler = (ctx, { engine }) => {
  const project = ctx.params['project']!;
  const { access } = requireScope(engine, project, ctx.key, ['read'], 'saved_queries');
  const all = engine.savedQueries.list(project);
  return json(200, access === null ? all : all.filter((saved) => listed(access.options.saved_queries, saved.query_name)));
};

export const getSaved: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  authorizeRead(engine, project, ctx.key, name, false);
  return json(200, engine.savedQueries.get(project, name));
};

export const putSaved: Handler = async (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  if (ctx.body.length === 0) throw new ApiError('MissingRequiredRequestFieldError', 'The body needs a "query" object.');
  const { created, saved } = await engine.savedQueries.put(project, name, parseJsonBody(ctx.body));
  return json(created ? 201 : 200, saved);
};

export const deleteSaved: Handler = async (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  await engine.savedQueries.delete(project, name);
  return { status: 204 };
};

export const savedResult: Handler = async (ctx, { engine }) => {
  const { project, name } = names(ctx);
  authorizeRead(engine, project, ctx.key, name, true);
  return json(200, await engine.savedQueries.result(project, name));
};
