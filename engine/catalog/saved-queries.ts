/**
 * Saved and cached queries (docs/api.md §9). Definitions live in `saved-queries.json` in the data
 * directory (rewritten durably on every change, so they survive restarts). A definition with
 * `refresh_rate` 0 runs when its result is read and counts as an ad-hoc query; one with a refresh
 * rate (14,400-86,400 s) is a cached query: it runs right after it is saved (and after each start),
 * then every `refresh_rate` seconds, without counting toward the rate limit, and reading its result
 * serves the last successful run from memory. Before its first run completes a read waits for it.
 */
import path from 'node:path';
import { ApiError } from '../base/errors.js';
import type { Guards } from '../base/guards.js';
import { splitId, type CatalogCommit, type CatalogRecord } from './records.js';
import { readJsonIfExists, writeFileDurable } from '../storage/files.js';
import { CACHED_QUERIES_MAX, CACHED_QUERY_RETRY_MS, REFRESH_RATE_MAX_S, REFRESH_RATE_MIN_S, SAVED_QUERY_METADATA_BYTES_MAX } from '../base/limits.js';

type Params = Readonly<Record<string, unknown>>;

const SAVED_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface RunInformation {
  readonly last_run_date: string | null;
  readonly last_run_status: 'pending' | 'success' | 'failure';
  readonly last_run_error: string | null;
  readonly last_run_duration_ms: number | null;
  readonly next_run_date: string | null;
}

export interface SavedQuery {
  readonly query_name: string;
  /** The §6 parameters with `analysis_type`, as given (nulls dropped). */
  readonly query: Params;
  readonly refresh_rate: number;
  readonly metadata: Params | null;
  readonly created_date: string;
  readonly last_modified_date: string;
  readonly user_last_modified_date: string;
  /** null for a query that is not cached. */
  readonly run_information: RunInformation | null;
}

export interface SavedQueryHost {
  readonly dataDir: string;
  readonly guards: Guards;
  readonly clock: () => number;
  /** Checks a query as an ad-hoc one (the same 400s) without running it. */
  validate(projectId: string, analysis: string, params: Params): void;
  /** Runs a query; `counted` false keeps it out of the ad-hoc rate limit (cached refreshes). */
  run(projectId: string, analysis: string, params: Params, counted: boolean): Promise<unknown>;
  /** Passes a change on (cluster mode: the shared topic) and applies it (apply()). */
  readonly commit: CatalogCommit;
}

interface Cached {
  result: unknown;
  /** The run in progress, if any; a first read waits for it. */
  running: Promise<void> | null;
  timer: NodeJS.Timeout | null;
  info: RunInformation;
  /** Bumped by every save or delete: a run started for an older definition does not publish. */
  generation: number;
  hasResult: boolean;
  error: unknown;
}

type Stored = Omit<SavedQuery, 'run_information'>;

export class SavedQueries {
  private readonly file: string;
  private readonly defs: Record<string, Record<string, Stored>>;
  private readonly cached = new Map<string, Cached>();
  private closed = false;

  constructor(private readonly host: SavedQueryHost) {
    this.file = path.join(host.dataDir, 'saved-queries.json');
    this.defs = readJsonIfExists<Record<string, Record<string, Stored>>>(this.file) ?? {};
    for (const [project, byName] of Object.entries(this.defs)) {
      for (const def of Object.values(byName)) if (def.refresh_rate > 0) this.schedule(project, def, 0);
    }
  }

  list(projectId: string): SavedQuery[] {
    return Object.values(this.defs[projectId] ?? {}).sort((a, b) => (a.query_name < b.query_name ? -1 : 1))
      .map((def) => this.record(projectId, def));
  }

  get(projectId: string, name: string): SavedQuery {
    return this.record(projectId, this.stored(projectId, name));
  }

  /** Creates or replaces `name` (a body's `query_name` renames it); `created` is false for a replacement. */
  async put(projectId: string, name: string, body: unknown): Promise<{ created: boolean; saved: SavedQuery }> {
    this.host.guards.project(projectId);
    checkName(name);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new ApiError('InvalidQueryError', 'The body must be a JSON object with a "query" member.');
    }
    const given = body as Record<string, unknown>;
    const newName = given.query_name === undefined || given.query_name === null ? name : given.query_name;
    if (typeof newName !== 'string') throw new ApiError('InvalidResourceNameError', '"query_name" must be a string.');
    checkName(newName);
    const query = withoutNulls(given.query, '"query"');
    const analysis = query.analysis_type;
    if (typeof analysis !== 'string') {
      throw new ApiError('MissingRequiredRequestFieldError', 'The query needs an "analysis_type" (count, sum, funnel, ...).');
    }
    if (query.async !== undefined || query.email !== undefined) {
      throw new ApiError('InvalidQueryError', 'A saved query cannot be an asynchronous extraction.');
    }
    const refreshRate = parseRefreshRate(given.refresh_rate);
    const metadata = given.metadata === undefined || given.metadata === null ? null : withoutNulls(given.metadata, '"metadata"');
    if (metadata !== null && JSON.stringify(metadata).length > SAVED_QUERY_METADATA_BYTES_MAX) {
      throw new ApiError('InvalidQueryError', `"metadata" may hold at most ${SAVED_QUERY_METADATA_BYTES_MAX} bytes of JSON.`);
    }
    const { analysis_type: _analysis, ...params } = query;
    this.host.validate(projectId, analysis, params);
    const byName = this.defs[projectId] ?? {};
    const previous = byName[name];
    if (newName !== name && byName[newName] !== undefined) {
      throw new ApiError('InvalidQueryError', `A saved query named "${newName}" exists already; delete it first.`);
    }
    if (refreshRate > 0 && (previous === undefined || previous.refresh_rate === 0)) {
      const cachedCount = Object.values(byName).filter((def) => def.refresh_rate > 0).length;
      if (cachedCount >= CACHED_QUERIES_MAX) {
        throw new ApiError('InvalidQueryError', `A project may have at most ${CACHED_QUERIES_MAX} cached queries.`);
      }
    }
    const now = new Date(this.host.clock()).toISOString();
    const def: Stored = {
      query_name: newName, query, refresh_rate: refreshRate, metadata,
      created_date: previous?.created_date ?? now, last_modified_date: now, user_last_modified_date: now,
    };
    const records: CatalogRecord[] = [];
    if (newName !== name && previous !== undefined) records.push({ kind: 'saved_query', id: `${projectId}/${name}`, state: null });
    records.push({ kind: 'saved_query', id: `${projectId}/${newName}`, state: def });
    await this.host.commit(records);
    return { created: previous === undefined, saved: this.record(projectId, this.defs[projectId]?.[newName] ?? def) };
  }

  async delete(projectId: string, name: string): Promise<void> {
    this.stored(projectId, name);
    await this.host.commit([{ kind: 'saved_query', id: `${projectId}/${name}`, state: null }]);
  }

  /**
   * Stores a definition (or removes it: null) in memory and starts (or stops) its refresh cycle;
   * false when nothing changed. A definition stored again goes last, as a put does.
   */
  apply(id: string, state: Stored | null): boolean {
    const [projectId, name] = splitId(id);
    const current = this.defs[projectId]?.[name];
    if (state === null) {
      if (current === undefined) return false;
      delete this.defs[projectId]![name];
      this.unschedule(projectId, name);
      return true;
    }
    if (current !== undefined && JSON.stringify(current) === JSON.stringify(state)) return false;
    const byName = (this.defs[projectId] ??= {});
    delete byName[name];
    byName[name] = state;
    this.unschedule(projectId, name);
    if (state.refresh_rate > 0) this.schedule(projectId, state, 0);
    return true;
  }

  records(): CatalogRecord[] {
    return Object.entries(this.defs).flatMap(([project, byName]) => Object.entries(byName).map(([name, state]) => (
      { kind: 'saved_query' as const, id: `${project}/${name}`, state })));
  }

  /** The record plus `result`: from the cache for a cached query, else run now (counted). */
  async result(projectId: string, name: string): Promise<SavedQuery & { result: unknown }> {
    this.host.guards.open();
    const def = this.stored(projectId, name);
    if (def.refresh_rate === 0) {
      const { analysis_type: analysis, ...params } = def.query;
      const body = await this.host.run(projectId, analysis as string, params, true);
      return { ...this.record(projectId, def), ...resultPart(body) };
    }
    const entry = this.cached.get(key(projectId, name))!;
    // Bound: one wait per run in progress; a run always settles (queries have a 5-minute timeout).
    while (!entry.hasResult && entry.running !== null) await entry.running;
    if (!entry.hasResult) throw entry.error ?? new ApiError('ServiceUnavailableError', 'The cached query has not run yet; retry shortly.');
    return { ...this.record(projectId, def), ...(entry.result as { result: unknown }) };
  }

  close(): void {
    this.closed = true;
    for (const entry of this.cached.values()) if (entry.timer !== null) clearTimeout(entry.timer);
    this.cached.clear();
  }

  private stored(projectId: string, name: string): Stored {
    const def = this.defs[projectId]?.[name];
    if (def === undefined) throw new ApiError('ResourceNotFoundError', `No saved query named "${name}" in this project.`);
    return def;
  }

  private record(projectId: string, def: Stored): SavedQuery {
    const entry = def.refresh_rate > 0 ? this.cached.get(key(projectId, def.query_name)) : undefined;
    return { ...def, run_information: entry?.info ?? null };
  }

  save(): void {
    writeFileDurable(this.file, JSON.stringify(this.defs));
  }

  private unschedule(projectId: string, name: string): void {
    const entry = this.cached.get(key(projectId, name));
    if (entry === undefined) return;
    if (entry.timer !== null) clearTimeout(entry.timer);
    entry.generation++;
    this.cached.delete(key(projectId, name));
  }

  /** Starts the refresh cycle of a cached query: a run after `delayMs`, then every refresh_rate. */
  private schedule(projectId: string, def: Stored, delayMs: number): void {
    const entry: Cached = {
      result: undefined, running: null, timer: null, generation: 0, hasResult: false, error: null,
      info: { last_run_date: null, last_run_status: 'pending', last_run_error: null, last_run_duration_ms: null, next_run_date: null },
    };
    this.cached.set(key(projectId, def.query_name), entry);
    const generation = entry.generation;
    const cycle = () => {
      if (this.closed || entry.generation !== generation) return;
      entry.timer = null;
      entry.running = this.refresh(projectId, def, entry, generation).finally(() => {
        entry.running = null;
        if (this.closed || entry.generation !== generation) return;
        const nextMs = entry.info.last_run_status === 'failure' ? Math.min(CACHED_QUERY_RETRY_MS, def.refresh_rate * 1000) : def.refresh_rate * 1000;
        entry.info = { ...entry.info, next_run_date: new Date(this.host.clock() + nextMs).toISOString() };
        entry.timer = setTimeout(cycle, nextMs);
        entry.timer.unref();
      });
    };
    if (delayMs === 0) cycle();
    else {
      entry.timer = setTimeout(cycle, delayMs);
      entry.timer.unref();
    }
  }

  private async refresh(projectId: string, def: Stored, entry: Cached, generation: number): Promise<void> {
    const { analysis_type: analysis, ...params } = def.query;
    const started = this.host.clock();
    try {
      const body = await this.host.run(projectId, analysis as string, params, false);
      if (entry.generation !== generation) return;
      entry.result = resultPart(body);
      entry.hasResult = true;
      entry.error = null;
      entry.info = { ...entry.info, last_run_date: new Date(started).toISOString(), last_run_status: 'success', last_run_error: null,
        last_run_duration_ms: this.host.clock() - started };
    } catch (error) {
      if (entry.generation !== generation) return;
      entry.error = error;
      entry.info = { ...entry.info, last_run_date: new Date(started).toISOString(), last_run_status: 'failure',
        last_run_error: (error as Error).message, last_run_duration_ms: this.host.clock() - started };
    }
  }
}

function key(projectId: string, name: string): string {
  return `${projectId}\u0000${name}`;
}

function checkName(name: string): void {
  if (!SAVED_NAME.test(name)) {
    throw new ApiError('InvalidResourceNameError', 'Saved query names are 1-64 characters of A-Z, a-z, 0-9, "_" and "-".');
  }
}

function parseRefreshRate(value: unknown): number {
  if (value === undefined || value === null || value === 0) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < REFRESH_RATE_MIN_S || value > REFRESH_RATE_MAX_S) {
    throw new ApiError('InvalidQueryError',
      `"refresh_rate" is 0 (not cached) or whole seconds from ${REFRESH_RATE_MIN_S} (4 hours) to ${REFRESH_RATE_MAX_S} (24 hours).`);
  }
  return value;
}

/** A JSON object without its null members (at any depth), or 400. */
function withoutNulls(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined) throw new ApiError('MissingRequiredRequestFieldError', `The body needs ${what}.`);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ApiError('InvalidQueryError', `${what} must be a JSON object.`);
  }
  const out: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(value)) {
    if (member === null) continue;
    out[name] = member !== null && typeof member === 'object' && !Array.isArray(member) ? withoutNulls(member, what) : member;
  }
  return out;
}

/** The part of a query's answer a saved result carries: `result` (and a funnel's `steps`, ...). */
function resultPart(body: unknown): { result: unknown } {
  if (body !== null && typeof body === 'object' && !Array.isArray(body) && 'result' in body) return body as { result: unknown };
  return { result: body };
}
