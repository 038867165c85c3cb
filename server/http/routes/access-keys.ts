/**
 * Access key management (docs/api.md §8): the project's Master Key or the organization key creates,
 * lists, reads, updates, revokes, unrevokes and deletes the project's access keys. An access key
 * never manages keys (403). Every answer but DELETE's has a JSON body.
 */
import { ApiError, type TallyEngine } from '../../../engine/index.js';
import { requireProjectKey, sameKey } from '../auth.js';
import { parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';

function manager(engine: TallyEngine, ctx: Ctx): { project: string; key: string } {
  const { project, key } = ctx.params as { project: string; key: string };
  if (ctx.key !== '' && sameKey(ctx.key, engine.organization.key)) {
    if (engine.projects.get(project) === undefined) throw new ApiError('ResourceNotFoundError', `Project "${project}" was not found.`);
  } else {
    requireProjectKey(engine, project, ctx.key, ['master']);
  }
  return { project, key };
}

function body(ctx: Ctx): unknown {
  if (ctx.body.length === 0) throw new ApiError('InvalidAccessKeyDefinitionError', 'The body must be a JSON object: {"name", "permitted", "options"?}.');
  return parseJsonBody(ctx.body);
}

export const createAccessKey: Handler = async (ctx, { engine }) => {
  const { project } = manager(engine, ctx);
  return json(201, await engine.accessKeys.create(project, body(ctx)));
};

export const listAccessKeys: Handler = (ctx, { engine }) => {
  const { project } = manager(engine, ctx);
  return json(200, engine.accessKeys.list(project, ctx.query.get('name') ?? undefined));
};

export const getAccessKey: Handler = (ctx, { engine }) => {
  const { project, key } = manager(engine, ctx);
  return json(200, engine.accessKeys.get(project, key));
};

export const updateAccessKey: Handler = async (ctx, { engine }) => {
  const { project, key } = manager(engine, ctx);
  return json(200, await engine.accessKeys.update(project, key, body(ctx)));
};

export const deleteAccessKey: Handler = async (ctx, { engine }) => {
  const { project, key } = manager(engine, ctx);
  await engine.accessKeys.delete(project, key);
  return { status: 204 };
};

export const revokeAccessKey: Handler = async (ctx, { engine }) => {
  const { project, key } = manager(engine, ctx);
  return json(200, await engine.accessKeys.setActive(project, key, false));
};

export const unrevokeAccessKey: Handler = async (ctx, { engine }) => {
  const { project, key } = manager(engine, ctx);
  return json(200, await engine.accessKeys.setActive(project, key, true));
};
