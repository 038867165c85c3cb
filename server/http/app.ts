/**
 * The route table of the HTTP API, on one screen. Paths are matched by router.ts (`/v3` is an
 * alias of `/3.0`); HEAD reaches GET handlers; a known path with another method → 405, an unknown
 * path → 404.
 */
import { limits } from '../../engine/index.js';
import { Router } from './router.js';
import {
  createAccessKey, deleteAccessKey, getAccessKey, listAccessKeys, revokeAccessKey, unrevokeAccessKey, updateAccessKey,
} from './routes/access-keys.js';
import { datasetResults, deleteDataset, getDataset, listDatasets, putDataset } from './routes/datasets.js';
import { deleteEvents, deleteProperty } from './routes/deletes.js';
import { getExplorerFile, getExplorerPage, getRoot } from './routes/explorer.js';
import { getExtractionJob, getExtractionResult } from './routes/extractions.js';
import { recordBatch, recordBeaconOrInspect, recordEvent } from './routes/events.js';
import { getProperty, listCollections } from './routes/inspect.js';
import { createProject, getProject, listProjects, regenerateKey } from './routes/organizations.js';
import { getDiscovery, getOrganizationUsage, getProjectResource, listProjectResources } from './routes/projects.js';
import { postClusterQuery } from './routes/cluster.js';
import { runQuery } from './routes/queries.js';
import { deleteSaved, getSaved, listSaved, putSaved, savedResult } from './routes/saved.js';
import { getHealth, getMetrics, getReady } from './routes/operations.js';
import type { RouteSpec } from './types.js';

/** Bodies of organization and query requests are small JSON objects; the event bound fits. */
const SMALL_BODY_BYTES_MAX = limits.EVENT_BYTES_MAX;

const O = '/3.0/organizations/:org';
const P = '/3.0/projects/:project';

const ROUTES: readonly RouteSpec[] = [
  { pattern: '/', methods: { GET: getRoot } },
  { pattern: '/explorer', methods: { GET: getExplorerPage } },
  { pattern: '/explorer/:file', methods: { GET: getExplorerFile } },
  { pattern: '/health', methods: { GET: getHealth } },
  { pattern: '/ready', methods: { GET: getReady } },
  { pattern: '/metrics', methods: { GET: getMetrics } },
  // Discovery and project resources (docs/api.md §12), read by Keen's own Explorer.
  { pattern: '/3.0', methods: { GET: getDiscovery } },
  { pattern: '/3.0/projects', methods: { GET: listProjectResources } },
  { pattern: P, methods: { GET: getProjectResource } },
  { pattern: `${P}/organization-usage`, methods: { GET: getOrganizationUsage } },
  { pattern: `${O}/projects`, methods: { GET: listProjects, POST: createProject } },
  { pattern: `${O}/projects/:project`, methods: { GET: getProject } },
  { pattern: `${P}/api_keys/:kind/regenerate`, methods: { POST: regenerateKey } },
  { pattern: `${P}/keys`, methods: { GET: listAccessKeys, POST: createAccessKey } },
  { pattern: `${P}/keys/:key`, methods: { GET: getAccessKey, POST: updateAccessKey, DELETE: deleteAccessKey } },
  { pattern: `${P}/keys/:key/revoke`, methods: { POST: revokeAccessKey } },
  { pattern: `${P}/keys/:key/unrevoke`, methods: { POST: unrevokeAccessKey } },
  { pattern: `${P}/datasets`, methods: { GET: listDatasets } },
  { pattern: `${P}/datasets/:name`, methods: { GET: getDataset, PUT: putDataset, DELETE: deleteDataset } },
  { pattern: `${P}/datasets/:name/results`, methods: { GET: datasetResults } },
  { pattern: `${P}/events`, methods: { GET: listCollections, POST: recordBatch },
    bodyBytesMax: limits.BATCH_BYTES_MAX },
  { pattern: `${P}/events/:collection`, methods: { GET: recordBeaconOrInspect, POST: recordEvent, DELETE: deleteEvents },
    bodyBytesMax: limits.EVENT_BYTES_MAX },
  { pattern: `${P}/events/:collection/properties/:property`, methods: { GET: getProperty, DELETE: deleteProperty } },
  // Before queries/:analysis: `saved` is not an analysis.
  { pattern: `${P}/queries/saved`, methods: { GET: listSaved } },
  { pattern: `${P}/queries/saved/:name`, methods: { GET: getSaved, PUT: putSaved, DELETE: deleteSaved } },
  { pattern: `${P}/queries/saved/:name/result`, methods: { GET: savedResult } },
  { pattern: `${P}/queries/:analysis`, methods: { GET: runQuery, POST: runQuery } },
  { pattern: `${P}/queries/extraction/jobs/:id`, methods: { GET: getExtractionJob } },
  { pattern: `${P}/queries/extraction/jobs/:id/result`, methods: { GET: getExtractionResult } },
  // Cluster mode: another node's request for this one's share of a query (server/cluster/queries.ts).
  { pattern: '/internal/cluster/query', methods: { POST: postClusterQuery }, bodyBytesMax: 2 * SMALL_BODY_BYTES_MAX },
].map((route) => ({ bodyBytesMax: SMALL_BODY_BYTES_MAX, ...route }));

export function createRouter(): Router {
  return new Router(ROUTES);
}
