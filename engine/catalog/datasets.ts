/**
 * Cached datasets (docs/api.md §10): a query (count, sum, minimum, maximum, average or
 * count_unique over a collection, with filters, a named interval and a timezone) precomputed per
 * distinct `index_by` value and per interval bucket, and kept current as events arrive: each new
 * event updates the one bucket it falls in, nothing is re-run. A dataset bootstraps by reading its
 * collection's log from the start (status Bootstrapping), then follows the log from where it stopped
 * on every append; a delete in its collection starts it over. Definitions live in `datasets.json`
 * (durable); the buckets are memory only and are rebuilt after a restart.
 */
import path from 'node:path';
import { DateTime, type Zone } from 'luxon';
import type { LogRecord } from '../log/record.js';
import { ApiError } from '../base/errors.js';
import type { Guards } from '../base/guards.js';
import { splitId, type CatalogCommit, type CatalogRecord } from './records.js';
import { parseFilters } from '../query/plan/filter.js';
import { cutBuckets, parseInterval } from '../query/plan/interval.js';
import type { AggregateKind, FilterNode } from '../query/plan/plan.js';
import { parseTimezone, resolveTimeframe, startOfUnit, type CalendarUnit } from '../query/plan/timeframe.js';
import { readJsonIfExists, writeFileDurable } from '../storage/files.js';
import { DATASETS_MAX, DATASET_BUCKETS_MAX, DATASET_INDEX_BY_MAX, DATASET_READ_BYTES, DATASET_READ_RECORDS } from '../base/limits.js';

/** The analyses a dataset keeps per bucket: a subset of THE list (query/plan/plan.ts). */
const ANALYSES: ReadonlySet<AggregateKind> = new Set(['count', 'sum', 'minimum', 'maximum', 'average', 'count_unique']);
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

type Params = Readonly<Record<string, unknown>>;

export interface DatasetDefinition {
  readonly dataset_name: string;
  readonly display_name: string;
  readonly query: Params;
  readonly index_by: readonly string[];
  readonly created_date: string;
}

export interface DatasetView extends DatasetDefinition {
  readonly project_id: string;
  readonly status: 'Created' | 'Bootstrapping' | 'OK' | 'Failed';
  readonly status_message?: string;
  /** Events applied so far (bootstrap and since). */
  readonly events: number;
}

export interface DatasetHost {
  readonly dataDir: string;
  readonly guards: Guards;
  readonly clock: () => number;
  /** With `filters`, each record says whether its event passes them, by the query engine's own evaluation. */
  readLog(projectId: string, collection: string, fromOffset: number, maxRecords: number, maxBytes: number,
    filters?: readonly FilterNode[]): LogRecord[];
  logBounds(projectId: string, collection: string): { start: number; end: number };
  onAppend(listener: (projectId: string, collection: string) => void): () => void;
  onDelete(listener: (projectId: string, collection: string) => void): () => void;
  /** Passes a change on (cluster mode: the shared topic) and applies it (apply()). */
  readonly commit: CatalogCommit;
}

/** One bucket's state: enough to answer the analysis exactly and to add one more event. */
interface Cell {
  count: number;
  sum: number;
  min: number;
  max: number;
  distinct: Set<string> | null;
}

interface Live {
  readonly def: DatasetDefinition;
  readonly project: string;
  readonly analysis: string;
  readonly collection: string;
  readonly target: string | null;
  readonly filters: readonly FilterNode[];
  readonly unit: CalendarUnit;
  readonly zone: Zone;
  /** index key (JSON of the index values) → bucket start ms → cell. */
  cells: Map<string, Map<number, Cell>>;
  cursor: number;
  events: number;
  status: DatasetView['status'];
  message: string | undefined;
  following: Promise<void> | null;
  again: boolean;
}

export class Datasets {
  private readonly file: string;
  private readonly defs: Record<string, Record<string, DatasetDefinition>>;
  private readonly live = new Map<string, Live>();
  private readonly unsubscribe: (() => void)[] = [];
  private closed = false;

  constructor(private readonly host: DatasetHost) {
    this.file = path.join(host.dataDir, 'datasets.json');
    this.defs = readJsonIfExists<Record<string, Record<string, DatasetDefinition>>>(this.file) ?? {};
    this.unsubscribe.push(host.onAppend((project, collection) => this.each(project, collection, (live) => this.follow(live))));
    this.unsubscribe.push(host.onDelete((project, collection) => this.each(project, collection, (live) => this.restart(live))));
    for (const [project, byName] of Object.entries(this.defs)) for (const def of Object.values(byName)) this.start(project, def);
  }

  async put(projectId: string, name: string, body: unknown): Promise<DatasetView> {
    this.host.guards.project(projectId);
    if (!NAME.test(name)) throw new ApiError('InvalidResourceNameError', 'Dataset names are 1-64 characters of A-Z, a-z, 0-9, "_" and "-".');
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('InvalidQueryError', 'The body must be a JSON object.');
    const { display_name: display, query, index_by: indexBy } = body as Record<string, unknown>;
    if (query === null || typeof query !== 'object' || Array.isArray(query)) {
      throw new ApiError('MissingRequiredRequestFieldError', 'The body needs a "query" object.');
    }
    const indexList = typeof indexBy === 'string' ? [indexBy] : indexBy;
    if (!Array.isArray(indexList) || indexList.length < 1 || indexList.length > DATASET_INDEX_BY_MAX || !indexList.every((p) => typeof p === 'string' && p !== '')) {
      throw new ApiError('MissingRequiredRequestFieldError', `"index_by" is 1 to ${DATASET_INDEX_BY_MAX} property names.`);
    }
    const def: DatasetDefinition = {
      dataset_name: name, display_name: typeof display === 'string' ? display : name, query: query as Params,
      index_by: indexList as string[], created_date: new Date(this.host.clock()).toISOString(),
    };
    this.compile(projectId, def); // the 400s, before anything is stored
    const byName = this.defs[projectId] ?? {};
    if (byName[name] === undefined && Object.keys(byName).length >= DATASETS_MAX) {
      throw new ApiError('InvalidQueryError', `A project may have at most ${DATASETS_MAX} datasets.`);
    }
    await this.host.commit([{ kind: 'dataset', id: `${projectId}/${name}`, state: def }]);
    return this.get(projectId, name);
  }

  list(projectId: string): DatasetView[] {
    return Object.keys(this.defs[projectId] ?? {}).sort().map((name) => this.get(projectId, name));
  }

  get(projectId: string, name: string): DatasetView {
    return this.view(this.find(projectId, name));
  }

  async delete(projectId: string, name: string): Promise<void> {
    this.find(projectId, name);
    await this.host.commit([{ kind: 'dataset', id: `${projectId}/${name}`, state: null }]);
  }

  /** Stores a definition and starts it over (or removes it: null) in memory; false when nothing changed. */
  apply(id: string, def: DatasetDefinition | null): boolean {
    const [projectId, name] = splitId(id);
    const current = this.defs[projectId]?.[name];
    if (def === null) {
      if (current === undefined) return false;
      delete this.defs[projectId]![name];
      this.live.delete(key(projectId, name));
      return true;
    }
    if (current !== undefined && JSON.stringify(current) === JSON.stringify(def)) return false;
    (this.defs[projectId] ??= {})[name] = def;
    this.live.delete(key(projectId, name));
    this.start(projectId, def);
    return true;
  }

  records(): CatalogRecord[] {
    return Object.entries(this.defs).flatMap(([project, byName]) => Object.entries(byName).map(([name, state]) => (
      { kind: 'dataset' as const, id: `${project}/${name}`, state })));
  }

  save(): void {
    writeFileDurable(this.file, JSON.stringify(this.defs));
  }

  /** Per bucket of `timeframe` (in the dataset's interval), the value for one index value. */
  results(projectId: string, name: string, indexValue: unknown, timeframe: unknown): { timeframe: { start: string; end: string }; value: unknown }[] {
    const live = this.find(projectId, name);
    if (live.status !== 'OK') {
      throw new ApiError('ServiceUnavailableError', `The dataset is ${live.status.toLowerCase()}${live.message ? `: ${live.message}` : ''}; retry shortly.`);
    }
    const candidates = indexKeys(live.def.index_by, indexValue);
    const range = resolveTimeframe(timeframe, live.zone, this.host.clock());
    const { edges, labels } = cutBuckets(range, { unit: live.unit, count: 1 }, live.zone, DATASET_BUCKETS_MAX);
    const cells = candidates.map((candidate) => live.cells.get(candidate)).find((found) => found !== undefined);
    const out = [];
    for (let b = 0; b + 1 < edges.length; b++) {
      const cell = cells?.get(bucketStart(edges[b]!, live.unit, live.zone));
      out.push({ timeframe: { start: labels[b]!, end: labels[b + 1]! }, value: valueOf(live.analysis, cell) });
    }
    return out;
  }

  close(): void {
    this.closed = true;
    for (const stop of this.unsubscribe) stop();
  }

  private find(projectId: string, name: string): Live {
    const live = this.live.get(key(projectId, name));
    if (live === undefined || this.defs[projectId]?.[name] === undefined) {
      throw new ApiError('ResourceNotFoundError', `No dataset named "${name}" in this project.`);
    }
    return live;
  }

  private view(live: Live): DatasetView {
    return { ...live.def, project_id: live.project, status: live.status, ...(live.message && { status_message: live.message }), events: live.events };
  }

  private compile(projectId: string, def: DatasetDefinition): Omit<Live, 'cells' | 'cursor' | 'events' | 'status' | 'message' | 'following' | 'again'> {
    const query = def.query;
    const analysis = query.analysis_type;
    if (typeof analysis !== 'string' || !ANALYSES.has(analysis as AggregateKind)) {
      throw new ApiError('InvalidQueryError', `A dataset's analysis_type is one of ${[...ANALYSES].join(', ')}.`);
    }
    if (typeof query.event_collection !== 'string' || query.event_collection === '') {
      throw new ApiError('MissingRequiredRequestFieldError', 'The dataset query needs an "event_collection".');
    }
    const target = query.target_property;
    if (analysis !== 'count' && (typeof target !== 'string' || target === '')) {
      throw new ApiError('MissingRequiredRequestFieldError', `${analysis} needs a "target_property".`);
    }
    const size = parseInterval(query.interval ?? '');
    if (size.count !== 1) throw new ApiError('InvalidQueryError', 'A dataset takes a named interval: minutely, hourly, daily, weekly, monthly or yearly.');
    const zone = parseTimezone(query.timezone);
    resolveTimeframe(query.timeframe, zone, this.host.clock());
    return {
      def, project: projectId, analysis, collection: query.event_collection, target: analysis === 'count' ? null : target as string,
      filters: parseFilters(query.filters), unit: size.unit, zone,
    };
  }

  private start(projectId: string, def: DatasetDefinition): Live {
    const live: Live = { ...this.compile(projectId, def), cells: new Map(), cursor: 0, events: 0, status: 'Created', message: undefined, following: null, again: false };
    this.live.set(key(projectId, def.dataset_name), live);
    this.follow(live);
    return live;
  }

  private restart(live: Live): void {
    live.cells = new Map();
    live.cursor = 0;
    live.events = 0;
    live.status = 'Created';
    this.follow(live);
  }

  private each(projectId: string, collection: string, action: (live: Live) => void): void {
    for (const live of this.live.values()) if (live.project === projectId && live.collection === collection) action(live);
  }

  /** Reads the log from the cursor to its end, in steps; one reader per dataset at a time. */
  private follow(live: Live): void {
    if (live.following !== null) {
      live.again = true;
      return;
    }
    live.following = (async () => {
      do {
        live.again = false;
        if (live.status === 'Created') live.status = 'Bootstrapping';
        // Bound: each step advances the cursor by at least one record or ends the loop.
        for (;;) {
          if (this.closed || this.live.get(key(live.project, live.def.dataset_name)) !== live) return;
          const { start, end } = this.host.logBounds(live.project, live.collection);
          if (live.cursor < start) live.cursor = start;
          if (live.cursor >= end) break;
          const records = this.host.readLog(live.project, live.collection, live.cursor, DATASET_READ_RECORDS, DATASET_READ_BYTES, live.filters);
          if (records.length === 0) break;
          for (const record of records) {
            live.events++;
            if (record.matches !== false) this.add(live, JSON.parse(record.json) as Record<string, unknown>);
          }
          live.cursor = records[records.length - 1]!.offset + 1;
          await new Promise((resolve) => setImmediate(resolve));
        }
        live.status = 'OK';
      } while (live.again);
    })().catch((error: unknown) => {
      live.status = 'Failed';
      live.message = (error as Error).message;
    }).finally(() => {
      live.following = null;
    });
  }

  /** Adds one event that passed the filters to its bucket. */
  private add(live: Live, event: Record<string, unknown>): void {
    const ts = Date.parse(valueAt(event, 'svc.timestamp') as string);
    if (!Number.isFinite(ts)) return;
    let value: unknown = null;
    if (live.target !== null) {
      value = valueAt(event, live.target);
      if (value === undefined || value === null) return;
      if (live.analysis !== 'count_unique' && typeof value !== 'number') return;
    }
    const indexKey = JSON.stringify(live.def.index_by.map((p) => valueAt(event, p) ?? null));
    let buckets = live.cells.get(indexKey);
    if (buckets === undefined) live.cells.set(indexKey, (buckets = new Map()));
    const start = bucketStart(ts, live.unit, live.zone);
    let cell = buckets.get(start);
    if (cell === undefined) {
      cell = { count: 0, sum: 0, min: Infinity, max: -Infinity, distinct: live.analysis === 'count_unique' ? new Set() : null };
      buckets.set(start, cell);
    }
    cell.count++;
    if (typeof value === 'number') {
      cell.sum += value;
      if (value < cell.min) cell.min = value;
      if (value > cell.max) cell.max = value;
    }
    cell.distinct?.add(JSON.stringify(value));
  }
}

function key(projectId: string, name: string): string {
  return `${projectId}\u0000${name}`;
}

function bucketStart(ms: number, unit: CalendarUnit, zone: Zone): number {
  return startOfUnit(DateTime.fromMillis(ms, { zone }), unit).toMillis();
}

function valueOf(analysis: string, cell: Cell | undefined): unknown {
  switch (analysis) {
    case 'count': return cell?.count ?? 0;
    case 'sum': return cell === undefined || cell.count === 0 ? null : cell.sum; // as the ad-hoc sum of an empty bucket
    case 'count_unique': return cell?.distinct?.size ?? 0;
    case 'minimum': return cell === undefined || cell.count === 0 ? null : cell.min;
    case 'maximum': return cell === undefined || cell.count === 0 ? null : cell.max;
    default: return cell === undefined || cell.count === 0 ? null : cell.sum / cell.count;
  }
}

/**
 * The index values asked for, as candidate keys: a JSON object of index_by → value, or for a single
 * index_by its value, bare (`index_by=a`) or as JSON (`index_by="a"`, `index_by=3`): both readings
 * of an ambiguous text are candidates, and the first that holds data answers.
 */
function indexKeys(indexBy: readonly string[], given: unknown): string[] {
  let parsed: unknown = given;
  if (typeof given === 'string') {
    try {
      parsed = JSON.parse(given);
    } catch {
      parsed = given;
    }
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const object = parsed as Record<string, unknown>;
    if (!indexBy.every((p) => Object.hasOwn(object, p))) {
      throw new ApiError('InvalidQueryError', `"index_by" must give a value for each of ${indexBy.join(', ')}.`);
    }
    return [JSON.stringify(indexBy.map((p) => object[p]))];
  }
  if (indexBy.length !== 1 || given === undefined || given === null) {
    throw new ApiError('InvalidQueryError', `"index_by" is a JSON object with a value for each of ${indexBy.join(', ')}.`);
  }
  return [...new Set([JSON.stringify([parsed]), JSON.stringify([given])])];
}

function valueAt(event: Record<string, unknown>, dotted: string): unknown {
  let at: unknown = event;
  for (const part of dotted.split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}
