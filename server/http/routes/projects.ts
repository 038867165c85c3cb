/**
 * Discovery and project resources (docs/api.md §12), what Keen's own Explorer and dashboards read:
 * `/3.0` → the projects resource's URL; `/3.0/projects` → the projects the key reaches; one project
 * with its collections and saved queries; and the project's usage against Tally's real limits.
 * All with a Master Key (the organization key too, for every project); HEAD and CORS come from the
 * dispatcher as on every route.
 */
import { ApiError, limits, type ProjectInfo, type TallyEngine } from '../../../engine/index.js';
import { requireMasterOrOrgKey, requireProjectKey, sameKey } from '../auth.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';

function projectUrl(id: string): string {
  return `/3.0/projects/${encodeURIComponent(id)}`;
}

/** Keen's project object: links for discovery, every collection and every saved query by name and URL. */
function projectObject(engine: TallyEngine, project: ProjectInfo): object {
  const url = projectUrl(project.id);
  const collections = engine.collections.list(project.id).slice(0, limits.COLLECTIONS_LISTED_MAX);
  return {
    id: project.id,
    name: project.name,
    url,
    events_url: `${url}/events`,
    queries_url: `${url}/queries`,
    events: collections.map(({ name }) => ({ name, url: `${url}/events/${encodeURIComponent(name)}` })),
    saved_queries: engine.savedQueries.list(project.id).map(({ query_name: name }) => (
      { name, url: `${url}/queries/saved/${encodeURIComponent(name)}` })),
  };
}

function isOrgKey(engine: TallyEngine, key: string): boolean {
  return key !== '' && sameKey(key, engine.organization.key);
}

/**
 * The project of the path for its Master Key or the organization key. A read/write key of the
 * project → 403, any other key → 401 (an unknown id does not tell whether it exists, §3), except
 * with the organization key, which may be told 404.
 */
function requireProject(ctx: Ctx, engine: TallyEngine): ProjectInfo {
  const id = ctx.params['project']!;
  if (isOrgKey(engine, ctx.key)) {
    const project = engine.projects.get(id);
    if (project === undefined) throw new ApiError('ResourceNotFoundError', `Project "${id}" was not found.`);
    return project;
  }
  requireProjectKey(engine, id, ctx.key, ['master']);
  return engine.projects.get(id)!;
}

export const getDiscovery: Handler = (ctx, { engine }) => {
  requireMasterOrOrgKey(engine, ctx.key);
  return json(200, { projects_resource_url: '/3.0/projects' });
};

export const listProjectResources: Handler = (ctx, { engine }) => {
  requireMasterOrOrgKey(engine, ctx.key);
  const all = engine.projects.list();
  const reachable = isOrgKey(engine, ctx.key)
    ? all
    : all.filter((project) => engine.projects.authenticate(project.id, ctx.key) === 'master');
  return json(200, reachable.map((project) => projectObject(engine, project)));
};

export const getProjectResource: Handler = (ctx, { engine }) => {
  return json(200, projectObject(engine, requireProject(ctx, engine)));
};

/**
 * Usage against Tally's limits: the Explorer reads `cached_queries` before it offers to cache a
 * query (it refuses when `limited` and `current_usage >= limit`). `events_recorded` per collection is
 * the number of events its log has taken (the next log offset), deleted ones included.
 */
export const getOrganizationUsage: Handler = (ctx, { engine }) => {
  const project = requireProject(ctx, engine);
  const saved = engine.savedQueries.list(project.id);
  const cached = saved.filter((query) => query.refresh_rate > 0).length;
  const collections = engine.collections.list(project.id).map(({ name }) => (
    { name, events_recorded: engine.log.bounds(project.id, name).end }));
  return json(200, {
    project_id: project.id,
    cached_queries: { limited: true, limit: limits.CACHED_QUERIES_MAX, current_usage: cached },
    saved_queries: { limited: false, current_usage: saved.length },
    datasets: { limited: true, limit: limits.DATASETS_MAX, current_usage: engine.datasets.list(project.id).length },
    events: {
      collections: collections.length,
      events_recorded: collections.reduce((sum, collection) => sum + collection.events_recorded, 0),
      by_collection: collections,
    },
    queries: { per_minute_limit: limits.QUERIES_PER_MINUTE },
    extractions: { per_minute_limit: limits.EXTRACTIONS_PER_MINUTE },
  });
};
