/**
 * Deletes (docs/api.md §7), Master Key only: events of a collection by filters/timeframe/timezone
 * or the whole collection, and one property. Parameters come from the query string (parsed
 * leniently, as keen-analysis sends them) and/or a JSON body; unknown ones are ignored. In cluster
 * mode a delete is checked here and produced to the events topic (server/cluster/deletes.ts).
 */
import { ApiError } from '../../../engine/index.js';
import { requireProjectKey } from '../auth.js';
import { lenientParams, parseJsonBody } from '../parse.js';
import type { Ctx, Handler } from '../types.js';

function deleteParams(ctx: Ctx): Record<string, unknown> {
  const params = lenientParams(ctx.query);
  if (ctx.body.length === 0) return params;
  const body = parseJsonBody(ctx.body);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError(
      'InvalidQueryError',
      'The delete body must be one JSON object of parameters.',
    );
  }
  const { api_key: _ignored, ...rest } = body as Record<string, unknown>;
  return { ...params, ...rest };
}

export const deleteEvents: Handler = async (ctx, { engine, cluster }) => {
  const { project, collection } = ctx.params as { project: string; collection: string };
  requireProjectKey(engine, project, ctx.key, []);
  if (cluster !== undefined) {
    // Checked here, applied by every owner of the collection's partition (server/cluster/deletes.ts).
    await cluster.delete(project, collection, engine.collections.planDeleteEvents(project, collection, deleteParams(ctx)));
  } else {
    await engine.collections.deleteEvents(project, collection, deleteParams(ctx));
  }
  return { status: 204 };
};

export const deleteProperty: Handler = async (ctx, { engine, cluster }) => {
  const { project, collection, property } = ctx.params as {
    project: string;
    collection: string;
    property: string;
  };
  requireProjectKey(engine, project, ctx.key, []);
  if (cluster !== undefined) await cluster.delete(project, collection, engine.collections.planDeleteProperty(project, collection, property));
  else await engine.collections.deleteProperty(project, collection, property);
  return { status: 204 };
};
