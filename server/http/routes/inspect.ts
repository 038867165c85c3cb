/**
 * Schema inspection (docs/api.md §5): all collections, one collection, one property. Read or Master
 * Key. Links always use the /3.0 prefix, also when the request came in through /v3.
 */
import { ApiError, limits, type CollectionSchema } from '../../../engine/index.js';
import { requireScope } from '../auth.js';
import { json } from '../respond.js';
import type { Handler } from '../types.js';

function collectionUrl(project: string, collection: string): string {
  return `/3.0/projects/${encodeURIComponent(project)}/events/${encodeURIComponent(collection)}`;
}

function describe(project: string, schema: CollectionSchema, withProperties: boolean): object {
  const url = collectionUrl(project, schema.name);
  if (!withProperties) return { name: schema.name, url };
  return { name: schema.name, properties: schema.properties, url };
}

function notFound(what: string): ApiError {
  return new ApiError('ResourceNotFoundError',
    `${what} was not found; record an event to create it.`);
}

export const listCollections: Handler = (ctx, { engine }) => {
  const project = ctx.params['project']!;
  requireScope(engine, project, ctx.key, ['read'], 'schema');
  const withProperties = ctx.query.get('include_schema') !== 'false';
  const all = engine.collections.list(project).slice(0, limits.COLLECTIONS_LISTED_MAX);
  return json(200, all.map((schema) => describe(project, schema, withProperties)));
};

export const getCollection: Handler = (ctx, { engine }) => {
  const { project, collection } = ctx.params as { project: string; collection: string };
  requireScope(engine, project, ctx.key, ['read'], 'schema');
  const schema = engine.collections.get(project, collection);
  if (schema === undefined) throw notFound(`Collection "${collection}"`);
  return json(200, describe(project, schema, true));
};

export const getProperty: Handler = (ctx, { engine }) => {
  const { project, collection, property } = ctx.params as Record<string, string>;
  requireScope(engine, project!, ctx.key, ['read'], 'schema');
  const schema = engine.collections.get(project!, collection!);
  if (schema === undefined) throw notFound(`Collection "${collection}"`);
  const known = Object.hasOwn(schema.properties, property!);
  const type = known ? schema.properties[property!] : undefined;
  if (type === undefined) throw notFound(`Property "${property}" of collection "${collection}"`);
  const url = `${collectionUrl(project!, collection!)}/properties/${encodeURIComponent(property!)}`;
  return json(200, { property_name: property, url, type });
};
