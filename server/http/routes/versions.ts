/** GET/HEAD `/`: the API versions (seed "Versioning"); any project's Master Key or the org key. */
import { requireMasterOrOrgKey } from '../auth.js';
import { json } from '../respond.js';
import type { Handler } from '../types.js';

const VERSIONS = [
  { is_public: true, url: '/3.0', version: '3.0' },
  { is_public: false, url: '/2.0', version: '2.0' },
  { is_public: false, url: '/1.0', version: '1.0' },
] as const;

export const getVersions: Handler = (ctx, { engine }) => {
  requireMasterOrOrgKey(engine, ctx.key);
  return json(200, VERSIONS);
};
