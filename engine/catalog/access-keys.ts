/**
 * Access keys (docs/api.md §8): per-project keys with a scope. Records live in `access-keys.json`
 * in the data directory, rewritten durably on every change. A key is 64 hex characters; finding one
 * compares the candidate against every key of the project in constant time per key. What a key may
 * do is checked by the routes (server/http/auth.ts and the routes); this module owns the records and the two
 * transformations a scope makes: autofill merged into written events, filters ANDed into queries.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { ApiError } from '../base/errors.js';
import type { Guards } from '../base/guards.js';
import { ACCESS_KEYS_MAX, ACCESS_KEY_NAME_CHARS_MAX } from '../base/limits.js';
import { safeEqual } from './projects.js';
import { splitId, type CatalogCommit, type CatalogRecord } from './records.js';
import { parseFilters } from '../query/plan/filter.js';
import { readJsonIfExists, writeFileDurable } from '../storage/files.js';

export const PERMISSIONS = ['writes', 'queries', 'saved_queries', 'cached_queries', 'datasets', 'schema'] as const;
export type Permission = (typeof PERMISSIONS)[number];
const OPTION_NAMES = new Set(['writes', 'queries', 'saved_queries', 'cached_queries', 'datasets']);

export interface NameList {
  readonly allowed?: readonly string[];
  readonly blocked?: readonly string[];
}

export interface AccessKeyOptions {
  readonly writes?: { readonly autofill?: Readonly<Record<string, unknown>> };
  readonly queries?: { readonly filters?: readonly unknown[] };
  readonly saved_queries?: NameList;
  readonly cached_queries?: NameList;
  readonly datasets?: Readonly<Record<string, unknown>>;
}

export interface AccessKey {
  readonly key: string;
  readonly name: string;
  readonly project_id: string;
  readonly is_active: boolean;
  readonly permitted: readonly Permission[];
  readonly options: AccessKeyOptions;
  readonly created_date: string;
  readonly last_modified_date: string;
}

export class AccessKeys {
  private readonly file: string;
  private readonly byProject: Record<string, AccessKey[]>;

  constructor(dataDir: string, private readonly clock: () => number, private readonly guards: Guards, private readonly commit: CatalogCommit) {
    this.file = path.join(dataDir, 'access-keys.json');
    this.byProject = readJsonIfExists<Record<string, AccessKey[]>>(this.file) ?? {};
  }

  async create(projectId: string, body: unknown): Promise<AccessKey> {
    this.guards.project(projectId);
    const keys = this.byProject[projectId] ?? [];
    if (keys.length >= ACCESS_KEYS_MAX) throw invalid(`A project may have at most ${ACCESS_KEYS_MAX} access keys.`);
    const now = new Date(this.clock()).toISOString();
    const record: AccessKey = { key: randomBytes(32).toString('hex'), project_id: projectId, created_date: now, last_modified_date: now, ...definition(body, true) };
    return this.change(record);
  }

  list(projectId: string, name?: string): AccessKey[] {
    const keys = this.byProject[projectId] ?? [];
    return name === undefined ? keys.slice() : keys.filter((key) => key.name === name);
  }

  get(projectId: string, key: string): AccessKey {
    const record = this.find(projectId, key);
    if (record === null) throw new ApiError('ResourceNotFoundError', 'No access key with that value in this project.');
    return record;
  }

  /** Replaces the definition (the whole record but its key and dates). */
  async update(projectId: string, key: string, body: unknown): Promise<AccessKey> {
    const old = this.get(projectId, key);
    return this.change({ ...old, ...definition(body, old.is_active), last_modified_date: new Date(this.clock()).toISOString() });
  }

  async setActive(projectId: string, key: string, active: boolean): Promise<AccessKey> {
    const old = this.get(projectId, key);
    return this.change({ ...old, is_active: active, last_modified_date: new Date(this.clock()).toISOString() });
  }

  async delete(projectId: string, key: string): Promise<void> {
    const old = this.get(projectId, key);
    await this.commit([{ kind: 'access_key', id: `${projectId}/${old.key}`, state: null }]);
  }

  /** The record of `candidate` in this project, or null; every key is compared, in constant time each. */
  find(projectId: string, candidate: string): AccessKey | null {
    let found: AccessKey | null = null;
    // Bound: the project's access keys (at most ACCESS_KEYS_MAX).
    for (const record of this.byProject[projectId] ?? []) if (safeEqual(record.key, candidate)) found = record;
    return found;
  }

  /** Stores a key's record (a new one goes last) or removes it (null) in memory; false when nothing changed. */
  apply(id: string, state: AccessKey | null): boolean {
    const [projectId, key] = splitId(id);
    const keys = this.byProject[projectId];
    const index = keys === undefined ? -1 : keys.findIndex((record) => record.key === key);
    if (state === null) {
      if (index < 0) return false;
      this.byProject[projectId] = keys!.filter((_, i) => i !== index);
    } else if (index < 0) {
      (this.byProject[projectId] ??= []).push(state);
    } else {
      if (JSON.stringify(keys![index]) === JSON.stringify(state)) return false;
      keys![index] = state;
    }
    return true;
  }

  records(): CatalogRecord[] {
    return Object.values(this.byProject).flat().map((state) => ({ kind: 'access_key', id: `${state.project_id}/${state.key}`, state }));
  }

  private async change(next: AccessKey): Promise<AccessKey> {
    await this.commit([{ kind: 'access_key', id: `${next.project_id}/${next.key}`, state: next }]);
    return next;
  }

  save(): void {
    writeFileDurable(this.file, JSON.stringify(this.byProject));
  }
}

/** `event` with the key's autofill deep-merged in, the autofill's values winning at every depth. */
export function applyAutofill(event: unknown, autofill: Readonly<Record<string, unknown>> | undefined): unknown {
  if (autofill === undefined || event === null || typeof event !== 'object' || Array.isArray(event)) return event;
  return merge(event as Record<string, unknown>, autofill);
}

function merge(target: Record<string, unknown>, source: Readonly<Record<string, unknown>>): Record<string, unknown> {
  for (const [name, value] of Object.entries(source)) {
    const current = target[name];
    const bothObjects = isObject(value) && isObject(current);
    target[name] = bothObjects ? merge(current as Record<string, unknown>, value as Record<string, unknown>) : structuredClone(value);
  }
  return target;
}

/**
 * `filters` (a query's own) with the key's forced filters ANDed in. A value that is not a filter
 * list is refused here rather than passed on, so that nothing can make the forced filters vanish.
 */
export function withForcedFilters(filters: unknown, forced: readonly unknown[] | undefined): unknown {
  if (forced === undefined || forced.length === 0) return filters;
  if (filters === undefined || filters === null || filters === '') return [...forced];
  if (!Array.isArray(filters)) {
    throw new ApiError('InvalidFilterError', 'filters must be an array of {"property_name", "operator", "property_value"}');
  }
  return [...filters, ...forced];
}

/**
 * True when a stored query (a saved query's definition, an extraction job's parameters) already
 * carries every filter an access key forces: in `filters`, or in every step's for a funnel. Who may
 * read a stored result rests on this: such a result holds nothing the key could not query itself.
 */
export function carriesForcedFilters(query: Readonly<Record<string, unknown>>, forced: readonly unknown[] | undefined): boolean {
  if (forced === undefined || forced.length === 0) return true;
  const has = (filters: unknown) => Array.isArray(filters)
    && forced.every((f) => filters.some((own) => JSON.stringify(own) === JSON.stringify(f)));
  const steps = query.steps;
  return query.analysis_type === 'funnel' && Array.isArray(steps)
    ? steps.length > 0 && steps.every((step) => has((step as Record<string, unknown>)?.filters))
    : has(query.filters);
}

function definition(body: unknown, activeDefault: boolean): Pick<AccessKey, 'name' | 'is_active' | 'permitted' | 'options'> {
  if (!isObject(body)) throw invalid('The body must be a JSON object: {"name", "permitted", "options"?, "is_active"?}.');
  const { name, permitted, options, is_active: active } = body;
  if (typeof name !== 'string' || name.length === 0 || name.length > ACCESS_KEY_NAME_CHARS_MAX) {
    throw invalid(`"name" must be a string of 1 to ${ACCESS_KEY_NAME_CHARS_MAX} characters.`);
  }
  if (!Array.isArray(permitted) || !permitted.every((p) => (PERMISSIONS as readonly unknown[]).includes(p))) {
    throw invalid(`"permitted" must be an array of: ${PERMISSIONS.join(', ')}.`);
  }
  if (active !== undefined && typeof active !== 'boolean') throw invalid('"is_active" must be true or false.');
  return { name, permitted: [...new Set(permitted as Permission[])], options: checkOptions(options), is_active: active ?? activeDefault };
}

function checkOptions(options: unknown): AccessKeyOptions {
  if (options === undefined || options === null) return {};
  if (!isObject(options)) throw invalid('"options" must be an object.');
  for (const name of Object.keys(options)) if (!OPTION_NAMES.has(name)) throw invalid(`Unknown option "${name}".`);
  const { writes, queries, saved_queries: saved, cached_queries: cached, datasets } = options;
  if (writes !== undefined) {
    if (!isObject(writes) || (writes.autofill !== undefined && !isObject(writes.autofill))) throw invalid('"options.writes.autofill" must be an object.');
    if (isObject(writes.autofill) && 'svc' in writes.autofill) throw invalid('"options.writes.autofill" may not set the svc namespace.');
  }
  if (queries !== undefined) {
    if (!isObject(queries)) throw invalid('"options.queries" must be an object.');
    try {
      parseFilters(queries.filters);
    } catch (error) {
      throw invalid(`"options.queries.filters": ${(error as Error).message}`);
    }
  }
  for (const [what, list] of [['saved_queries', saved], ['cached_queries', cached]] as const) {
    if (list === undefined) continue;
    const ok = isObject(list) && [list.allowed, list.blocked].every((names) => names === undefined || (Array.isArray(names) && names.every((n) => typeof n === 'string')));
    if (!ok) throw invalid(`"options.${what}" must be {"allowed"?: [names], "blocked"?: [names]}.`);
  }
  if (datasets !== undefined && !isObject(datasets)) throw invalid('"options.datasets" must be an object.');
  return options as AccessKeyOptions;
}

function invalid(message: string): ApiError {
  return new ApiError('InvalidAccessKeyDefinitionError', message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
