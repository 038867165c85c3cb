/**
 * Cached datasets (docs/api.md §10): defined and deleted with the Master Key; listed, read and
 * queried with the Read or Master Key or an access key permitted `datasets`. Results come from
 * memory and do not count toward the query rate limit.
 */
import { ApiError, type AccessKey, type TallyEngine } from '../../../engine/index.js';
import { requireProjectKey, requireScope } from '../auth.js';
import { lenientParams, parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Ctx, Handler } from '../types.js';

function names(ctx: Ctx): { project: string; name: string } {
  return ctx.params as { project: string; name: string };
}

type Operation = 'list' | 'read' | 'retrieve';

interface DatasetOptions {
  readonly operations?: readonly string[];
  readonly allowed?: Readonly<Record<string, { readonly index_by?: Readonly<Record<string, readonly unknown[]>> }>>;
  readonly blocked?: readonly string[];
}

/**
 * An access key's `options.datasets` (docs/api.md §8): `operations` (list, read = a definition,
 * retrieve = results; none given = all), `allowed` datasets with, per index_by property, the
 * values its results may be asked for, and `blocked` datasets. Anything outside them → 403.
 */
function authorize(engine: TallyEngine, ctx: Ctx, operation: Operation, name: string | null): AccessKey | null {
  const { access } = requireScope(engine, ctx.params['project']!, ctx.key, ['read'], 'datasets');
  if (access === null) return null;
  const options = (access.options.datasets ?? {}) as DatasetOptions;
  const refuse = (why: string) => new ApiError('KeyNotPermittedError', why);
  if (options.operations !== undefined && !options.operations.includes(operation)) throw refuse(`This access key may not ${operation} datasets.`);
  if (name !== null && options.blocked?.includes(name)) throw refuse(`This access key may not use the dataset "${name}".`);
  if (name !== null && options.allowed !== undefined && !Object.hasOwn(options.allowed, name)) throw refuse(`This access key may not use the dataset "${name}".`);
  return access;
}

/** The index value a results request asks for, checked against the key's allowed values. */
function checkIndexValue(access: AccessKey | null, name: string, indexBy: string): void {
  const allowedIndex = ((access?.options.datasets ?? {}) as DatasetOptions).allowed?.[name]?.index_by;
  if (allowedIndex === undefined) return;
  let asked: unknown = indexBy;
  try {
    asked = JSON.parse(indexBy);
  } catch {
    // a bare value
  }
  const entries = Object.entries(allowedIndex);
  const ok = entries.every(([property, values]) => {
    const value = asked !== null && typeof asked === 'object' && !Array.isArray(asked)
      ? (asked as Record<string, unknown>)[property]
      : entries.length === 1 ? asked : undefined;
    return values.some((allowed) => allowed === value || (typeof value !== 'string' && String(value) === allowed) || allowed === indexBy);
  });
  if (!ok) throw new ApiError('KeyNotPermittedError', `This access key may not read that index_by value of "${name}".`);
}

export const listDatasets: Handler = (ctx, { engine }) => {
  const project = ctx.params['project']!;
  const access = authorize(engine, ctx, 'list', null);
  const options = (access?.options.datasets ?? {}) as DatasetOptions;
  const datasets = engine.datasets.list(project).filter((d) => !options.blocked?.includes(d.dataset_name)
    && (options.allowed === undefined || Object.hasOwn(options.allowed, d.dataset_name)));
  return json(200, { datasets, count: datasets.length });
};

export const getDataset: Handler = (ctx, { engine }) => {
  const { project, name } = names(ctx);
  authorize(engine, ctx, 'read', name);
  return json(200, engine.datasets.get(project, name));
};

export const putDataset: Handler = async (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  if (ctx.body.length === 0) throw new ApiError('MissingRequiredRequestFieldError', 'The body needs "query" and "index_by".');
  return json(201, await engine.datasets.put(project, name, parseJsonBody(ctx.body)));
};

export const deleteDataset: Handler = async (ctx, { engine }) => {
  const { project, name } = names(ctx);
  requireProjectKey(engine, project, ctx.key, ['master']);
  await engine.datasets.delete(project, name);
  return { status: 204 };
};

export const datasetResults: Handler = async (ctx, { engine, cluster }) => {
  const { project, name } = names(ctx);
  const access = authorize(engine, ctx, 'retrieve', name);
  const params = lenientParams(ctx.query);
  const indexBy = ctx.query.get('index_by');
  if (indexBy === null || indexBy === '') throw new ApiError('MissingRequiredRequestFieldError', 'Results need an "index_by" value.');
  checkIndexValue(access, name, indexBy);
  if (params.timeframe === undefined) throw new ApiError('MissingRequiredRequestFieldError', 'Results need a "timeframe".');
  // With --cluster-nodes the buckets are kept by the nodes that store the collection (server/cluster/queries.ts).
  const result = cluster?.queries === undefined
    ? engine.datasets.results(project, name, indexBy, params.timeframe)
    : await cluster.queries.datasetResults(project, name, indexBy, params.timeframe);
  return json(200, { result });
};
