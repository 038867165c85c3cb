/**
 * Asynchronous extractions (docs/api.md §11): a POST/GET extraction with `async: true` or an
 * `email` becomes a job (202 with its status and result URLs); the job's status (Read Key); the
 * finished file, streamed as NDJSON or CSV. The engine owns the jobs; this file only shapes them.
 */
import { ApiError, carriesForcedFilters, type ExtractionJob } from '../../../engine/index.js';
import type { Ctx } from '../types.js';
import { requireScope } from '../auth.js';
import { json } from '../respond.js';
import type { ClusterQueryRoutes, Handler, Reply } from '../types.js';

function jobPath(job: ExtractionJob): string {
  return `/3.0/projects/${job.project}/queries/extraction/jobs/${job.id}`;
}

/** The job as clients see it: `url` is where the result is read once `status` is "done". */
function jobView(job: ExtractionJob): Record<string, unknown> {
  return {
    id: job.id,
    status: job.status,
    events: job.events,
    url: `${jobPath(job)}/result`,
    content_type: job.content_type,
    email: job.email,
    query: job.query,
    created_at: job.created_at,
    finished_at: job.finished_at,
    expires_at: job.expires_at,
    error: job.error,
  };
}

/**
 * Called by the extraction route for an async request whose parameters it has parsed. With
 * --cluster-nodes (`cluster`) the job runs on a node that stores the collection, and its id names
 * that node, so every node answers its status and result (server/cluster/queries.ts).
 */
export async function submitExtraction(
  engine: Parameters<Handler>[1]['engine'],
  project: string,
  params: Record<string, unknown>,
  cluster: ClusterQueryRoutes | undefined,
): Promise<Reply> {
  const job = cluster === undefined ? engine.queries.submitExtraction(project, params) : await cluster.submitExtraction(project, params);
  const view = jobView(job);
  const handle = { id: view.id, url: view.url, status: view.status };
  return {
    status: 202,
    json: byEmailOnly(params) ? { result: emailSentence(job), ...handle } : { result: handle },
    headers: [['Location', jobPath(job)]],
  };
}

/** Keen's email extraction (an `email` and no `async: true`), as Keen's Explorer sends it. */
function byEmailOnly(params: Record<string, unknown>): boolean {
  return typeof params.email === 'string' && params.email !== '' && params.async !== true && params.async !== 'true';
}

/**
 * Keen answers an email extraction with a sentence in `result` and its Explorer draws that sentence
 * (it draws any other `result` as a table, and an object as a never-ending spinner). Tally sends no
 * email, so the sentence says where the events will be; the job's id, url and status sit beside it.
 */
function emailSentence(job: ExtractionJob): string {
  return `Processing. Tally sends no email: extraction job ${job.id} is ${job.status}; `
    + `its status is at ${jobPath(job)} and, once done, its events at ${jobPath(job)}/result.`;
}

/**
 * The job, if this key may see it: the Master and Read Keys see the project's jobs; an access key
 * sees a job only when the job's query already carries every filter the key forces (as for saved
 * and cached results), so a key limited to one tenant never reads a job that another key, or the
 * Master Key, submitted over all of them (403, as for a saved query it may not read).
 */
async function requireJob(ctx: Ctx, { engine, cluster }: Parameters<Handler>[1]): Promise<ExtractionJob> {
  const { project, id } = ctx.params as { project: string; id: string };
  const { access } = requireScope(engine, project, ctx.key, ['read'], 'queries');
  const job = cluster?.queries === undefined ? engine.queries.extractionJob(project, id) : await cluster.queries.extractionJob(project, id);
  if (job === undefined) {
    throw new ApiError('ResourceNotFoundError', `no extraction job "${id}" (jobs expire after 24 hours)`);
  }
  if (access !== null && !carriesForcedFilters(job.query, access.options.queries?.filters)) {
    throw new ApiError('KeyNotPermittedError',
      `The extraction job "${id}" does not carry this access key's filters.`);
  }
  return job;
}

export const getExtractionJob: Handler = async (ctx, deps) => json(200, jobView(await requireJob(ctx, deps)));

export const getExtractionResult: Handler = async (ctx, deps) => {
  const job = await requireJob(ctx, deps);
  const queries = deps.cluster?.queries;
  const answer = queries === undefined ? deps.engine.queries.extractionResult(job.project, job.id) : await queries.extractionResult(job.project, job.id);
  return { status: 200, ...answer };
};
