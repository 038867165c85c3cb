/**
 * Key checks for route handlers (docs/api.md §3): no key or a key unknown to the project → 401
 * InvalidApiKeyError; a valid key of the wrong kind → 403 KeyNotPermittedError. The master key
 * passes every project check. An unknown project id answers 401, like a wrong key: that does not
 * reveal which project ids exist. Key comparison itself is the engine's (constant time).
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { ApiError, type AccessKey, type KeyKind, type Permission, type TallyEngine } from '../../engine/index.js';

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

/** Checks `key` against project `projectId`; returns its kind or throws 401/403 (403 for any access key). */
export function requireProjectKey(
  engine: TallyEngine, projectId: string, key: string, allowed: readonly KeyKind[],
): KeyKind {
  const scope = requireScope(engine, projectId, key, allowed, null);
  return scope.kind as KeyKind;
}

/** Who a request acts as: a project key's kind, or an access key with its record. */
export type Scope = { readonly kind: KeyKind; readonly access: null } | { readonly kind: 'access'; readonly access: AccessKey };

/**
 * Checks `key` for a route that project keys of `allowed` kinds (and the Master Key) may use and,
 * when `permission` is given, access keys whose `permitted` holds it (docs/api.md §8). An access
 * key elsewhere, revoked, or without the permission → 403; a key of another project → 401.
 */
export function requireScope(
  engine: TallyEngine, projectId: string, key: string, allowed: readonly KeyKind[], permission: Permission | null,
): Scope {
  if (key === '') throw missingKey();
  const kind = engine.projects.authenticate(projectId, key);
  if (kind !== null) {
    if (kind !== 'master' && !allowed.includes(kind)) {
      throw notPermitted(allowed.map((k) => KEY_NAMES[k]).concat('Master Key').join(' or '));
    }
    return { kind, access: null };
  }
  const access = engine.accessKeys.find(projectId, key);
  if (access === null) throw invalidKey();
  if (permission === null) {
    throw new ApiError('KeyNotPermittedError', 'Access keys may not use this route; use a project key.');
  }
  if (!access.is_active) throw new ApiError('KeyNotPermittedError', 'This access key is revoked.');
  if (!access.permitted.includes(permission)) {
    throw new ApiError('KeyNotPermittedError', `This access key is not permitted "${permission}".`);
  }
  return { kind: 'access', access };
}

/** Constant-time equality of two strings (hashing first makes the lengths equal). */
export function sameKey(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

/** True when `key` is some project's key of any kind or an access key (a valid key, for the 403 vs 401 choice). */
function isAnyProjectKey(engine: TallyEngine, key: string): boolean {
  return engine.projects.list().some((project) => engine.projects.authenticate(project.id, key) !== null
    || engine.accessKeys.find(project.id, key) !== null);
}

/** The organization key, or 403 for a project key, 401 otherwise. */
export function requireOrgKey(engine: TallyEngine, key: string): void {
  if (key === '') throw missingKey();
  if (sameKey(key, engine.organization.key)) return;
  if (isAnyProjectKey(engine, key)) throw notPermitted('Organization Key');
  throw invalidKey();
}

/** The versions endpoint: the org key or any project's master key; 403 for other project keys. */
export function requireMasterOrOrgKey(engine: TallyEngine, key: string): void {
  if (key === '') throw missingKey();
  if (sameKey(key, engine.organization.key) || engine.projects.isAnyMasterKey(key)) return;
  if (isAnyProjectKey(engine, key)) throw notPermitted('Master Key or the Organization Key');
  throw invalidKey();
}
