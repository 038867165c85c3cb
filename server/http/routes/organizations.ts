/**
 * The organization API (docs/api.md §2): create, list and get projects with the Organization
 * Key, and regenerate a project's write or read key with its Master Key.
 */
import { ApiError } from '../../../engine/index.js';
import { PROJECT_NAME_CHARS_MAX } from '../../common/limits.js';
import { requireOrgKey, requireProjectKey } from '../auth.js';
import { parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Deps, Handler } from '../types.js';

function requireOrg(ctx: Ctx, { engine }: Deps): void {
  requireOrgKey(engine, ctx.key);
  if (ctx.params['org'] !== engine.organization.id) {
    throw new ApiError('ResourceNotFoundError',
      `Organization "${ctx.params['org']}" was not found.`);
  }
}

function projectName(body: unknown): string {
  const isObject = body !== null && typeof body === 'object';
  const name = isObject ? (body as { name?: unknown }).name : undefined;
  if (typeof name !== 'string' || name.trim() === '' || name.length > PROJECT_NAME_CHARS_MAX) {
    throw new ApiError(
      'MissingRequiredRequestFieldError',
      `Send {"name": "<project name>"}: a non-empty string of at most ` +
        `${PROJECT_NAME_CHARS_MAX} characters.`,
    );
  }
  return name;
}

export const createProject: Handler = async (ctx, deps) => {
  requireOrg(ctx, deps);
  const name = projectName(parseJsonBody(ctx.body));
  return json(201, await deps.engine.projects.create(name));
};

export const listProjects: Handler = (ctx, deps) => {
  requireOrg(ctx, deps);
  return json(200, deps.engine.projects.list());
};

export const getProject: Handler = (ctx, deps) => {
  requireOrg(ctx, deps);
  const project = deps.engine.projects.get(ctx.params['project']!);
  if (project === undefined) {
    throw new ApiError('ResourceNotFoundError',
      `Project "${ctx.params['project']}" was not found.`);
  }
  return json(200, project);
};

export const regenerateKey: Handler = async (ctx, { engine }) => {
  const { project, kind } = ctx.params as { project: string; kind: string };
  requireProjectKey(engine, project, ctx.key, ['master']);
  if (kind !== 'write' && kind !== 'read') {
    throw new ApiError('ResourceNotFoundError',
      `Only the write and read keys can be regenerated, not "${kind}".`);
  }
  return json(200, { [kind]: await engine.projects.regenerateKey(project, kind) });
};
