/**
 * Key checks for route handlers (spec/api.md §3): no key or a key unknown to the project → 401
 * InvalidApiKeyError; a valid key of the wrong kind → 403 KeyNotPermittedError. The master key
 * passes every project check. An unknown project id answers 401, like a wrong key: that does not
 * reveal which project ids exist. Key comparison itself is the engine's (constant time).
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { ApiError, type KeyKind, type TallyEngine } from '../../engine/index.js';

function missingKey(): ApiError {
  return new ApiError('InvalidApiKeyError',
    'An API key is required: send it in the Authorization header or as api_key.');
}

function invalidKey(): ApiError {
  return new ApiError('InvalidApiKeyError',
    'The API key is not valid for this resource; check the key and the project id.');
}

function notPermitted(needed: string): ApiError {
  return new ApiError('KeyNotPermittedError',
    `This API key is not permitted here; use the ${needed}.`);
}

const KEY_NAMES: Readonly<Record<KeyKind, string>> = {
  master: 'Master Key',
  write: 'Write Key',
  read: 'Read Key',
};

/** Checks `key` against project `projectId`; returns its kind or throws 401/403. */
export function requireProjectKey(
  engine: TallyEngine, projectId: string, key: string, allowed: readonly KeyKind[],
): KeyKind {
  if (key === '') throw missingKey();
  const kind = engine.authenticate(projectId, key);
  if (kind === null) throw invalidKey();
  if (kind !== 'master' && !allowed.includes(kind)) {
    throw notPermitted(allowed.map((k) => KEY_NAMES[k]).concat('Master Key').join(' or '));
  }
  return kind;
}

/** Constant-time equality of two strings (hashing first makes the lengths equal). */
export function sameKey(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

/** True when `key` is some project's key of any kind (a valid key, for the 403 vs 401 choice). */
function isAnyProjectKey(engine: TallyEngine, key: string): boolean {
  return engine.listProjects().some((project) => engine.authenticate(project.id, key) !== null);
}

/** The organization key, or 403 for a project key, 401 otherwise. */
export function requireOrgKey(engine: TallyEngine, key: string): void {
  if (key === '') throw missingKey();
  if (sameKey(key, engine.orgKey)) return;
  if (isAnyProjectKey(engine, key)) throw notPermitted('Organization Key');
  throw invalidKey();
}

/** The versions endpoint: the org key or any project's master key; 403 for other project keys. */
export function requireMasterOrOrgKey(engine: TallyEngine, key: string): void {
  if (key === '') throw missingKey();
  if (sameKey(key, engine.orgKey) || engine.isAnyMasterKey(key)) return;
  if (isAnyProjectKey(engine, key)) throw notPermitted('Master Key or the Organization Key');
  throw invalidKey();
}
