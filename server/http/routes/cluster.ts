/**
 * The cluster's internal endpoint (server/cluster/queries.ts): another node asks this one for its
 * share of a query, with `Authorization: <--cluster-secret>`. Answers the partial state of an
 * aggregate (application/octet-stream), a query's body, a dataset's results or a job (JSON), or a
 * finished extraction job's file (streamed); 404 on a node without
 * --cluster-nodes, 401 without the secret, 503 when this node cannot answer for its partitions now.
 */
import { ApiError } from '../../../engine/index.js';
import { parseJsonBody } from '../parse.js';
import { json } from '../respond.js';
import type { Handler } from '../types.js';

export const postClusterQuery: Handler = async (ctx, { cluster }) => {
  const queries = cluster?.queries;
  if (queries === undefined) throw new ApiError('ResourceNotFoundError', 'This node is not part of a cluster of nodes (--cluster-nodes).');
  if (!queries.authenticate(ctx.key)) throw new ApiError('InvalidApiKeyError', 'The cluster secret is missing or wrong.');
  const answer = await queries.serve(parseJsonBody(ctx.body));
  if (answer instanceof Uint8Array) return { status: 200, body: answer, contentType: 'application/octet-stream' };
  if (isJobFile(answer)) return { status: 200, file: answer.file, contentType: answer.contentType };
  const isObject = answer !== null && typeof answer === 'object' && !Array.isArray(answer);
  return json(200, isObject && 'result' in answer ? answer : { result: answer });
};

/** A finished extraction job's file (mode job_result), streamed as the public endpoint streams it. */
function isJobFile(answer: unknown): answer is { file: string; contentType: string } {
  const a = answer as { file?: unknown; contentType?: unknown; result?: unknown } | null;
  return a !== null && typeof a === 'object' && !('result' in a) && typeof a.file === 'string' && typeof a.contentType === 'string';
}
