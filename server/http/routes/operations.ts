/**
 * Operator routes: liveness (`/health`), readiness (`/ready`; while the server shuts down every
 * route answers 503 ServiceUnavailableError, this one included, and so does this one in cluster
 * mode until the node has caught up with the events topic) and Prometheus metrics
 * (`/metrics`, organization key). Health and readiness need no key and reveal nothing else (in
 * cluster mode health names the node's id, partitions and which peer ids answer, no URLs).
 */
import { requireOrgKey } from '../auth.js';
import { json } from '../respond.js';
import type { Handler } from '../types.js';

/** Liveness; in cluster mode with what the node stores and which peers answer (server/cluster/status.ts). */
export const getHealth: Handler = (_ctx, { cluster }) => json(200, cluster?.status === undefined
  ? { status: 'ok' } : { status: 'ok', cluster: cluster.status.health() });

/** In cluster mode not ready until the node caught up with the events topic: its queries would miss events. */
export const getReady: Handler = (_ctx, { cluster }) => (cluster === undefined || cluster.caughtUp
  ? json(200, { status: 'ready' })
  : json(503, { message: 'Catching up with the events topic; queries would miss events.', error_code: 'ServiceUnavailableError' }));

export const getMetrics: Handler = async (ctx, { engine, metrics }) => {
  requireOrgKey(engine, ctx.key);
  if (metrics === undefined) return json(200, {});
  const text = await metrics.text();
  return { status: 200, body: Buffer.from(text), contentType: 'text/plain; version=0.0.4; charset=utf-8' };
};
