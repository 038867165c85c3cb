/**
 * Operator routes: liveness (`/health`), readiness (`/ready`; while the server shuts down every
 * route answers 503 ServiceUnavailableError, this one included) and Prometheus metrics
 * (`/metrics`, organization key). Health and readiness need no key and reveal nothing else.
 */
import { requireOrgKey } from '../auth.js';
import { json } from '../respond.js';
import type { Handler } from '../types.js';

export const getHealth: Handler = () => json(200, { status: 'ok' });

export const getReady: Handler = () => json(200, { status: 'ready' });

export const getMetrics: Handler = async (ctx, { engine, metrics }) => {
  requireOrgKey(engine, ctx.key);
  if (metrics === undefined) return json(200, {});
  const text = await metrics.text();
  return { status: 200, body: Buffer.from(text), contentType: 'text/plain; version=0.0.4; charset=utf-8' };
};
