/**
 * Deletes (docs/api.md §7): the durable delete log and what the engine does with it. A delete of
 * events or of a property appends an entry bound by log offset (`seq < seqBefore`) to
 * `deletes.json` (written and fsynced before the 204); readers apply the entries as a row
 * predicate (predicate.ts) until the background rewrite has removed the rows from every segment
 * and the buffer has flushed past the bound, then the entry retires. A whole-collection delete
 * drops the collection's segments, buffer and schema at once and leaves a tombstone, so the WAL
 * replay after a crash cannot bring its events back. It owns no segment format: segments are read
 * and written by storage's reader and writer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiError } from '../base/errors.js';
import { COLLECTION_DELETES_PER_MINUTE, DELETES_PER_MINUTE } from '../base/limits.js';
import { parseFilters } from '../query/plan/filter.js';
import { RateLimiter } from '../base/rate-limit.js';
import { parseTimezone, resolveTimeframe } from '../query/plan/timeframe.js';
import type { SchemaType, SegmentFooter, SegmentRef } from '../storage/chunk.js';
import type { CollectionStore } from '../storage/collection.js';
import { readJsonIfExists, writeFileDurable } from '../storage/files.js';
import { touches, underPath, type DeleteEntry } from './predicate.js';
import type { FilterNode } from '../query/plan/plan.js';
import type { DeletePlan } from '../storage/delete-entry.js';

/** Far past and far future in ms: a delete without a timeframe covers all time (JSON-safe). */
const ALL_TIME = { startMs: -8.64e15, endMs: 8.64e15 };
const FILE = 'deletes.json';

interface LogFile {
  version: 1;
  nextId: number;
  entries: { project: string; collection: string; entry: DeleteEntry }[];
  tombstones: { project: string; collection: string; seqBefore: number }[];
  /** Segment file (relative to the data dir) → the highest entry id it was rewritten for. */
  clean: Record<string, number>;
}

export interface DeleteHost {
  readonly dataDir: string;
  readonly clock: () => number;
  store(project: string, collection: string): CollectionStore | undefined;
  stores(): Iterable<CollectionStore>;
  /** A fresh, empty store for the collection in place of the old one (same dir and log offsets). */
  resetStore(old: CollectionStore, flushedSeq: number): CollectionStore;
  /** Resolves when no flush or compaction runs; the caller's synchronous code then runs alone. */
  idle(): Promise<void>;
  commitManifest(): void;
  /** Tells the engine's onDelete listeners (cached results over the collection are stale). */
  deleted(project: string, collection: string): void;
  rewrite(job: {
    file: string;
    source: string;
    deletes: readonly DeleteEntry[];
    schema: Readonly<Record<string, SchemaType>>;
  }): Promise<SegmentFooter>;
  forget(file: string): void;
  /** Removes replaced files once no reader that listed them is left (storage/retired-files.ts). */
  retire(files: readonly string[]): void;
}

export class DeleteManager {
  private log: LogFile;
  private readonly rates: RateLimiter;

  constructor(private readonly host: DeleteHost) {
    this.log = readJsonIfExists<LogFile>(path.join(host.dataDir, FILE)) ?? {
      version: 1,
      nextId: 1,
      entries: [],
      tombstones: [],
      clean: {},
    };
    this.rates = new RateLimiter(host.clock);
  }

  /** Entries readers of the collection must apply; empty almost always. */
  entriesOf(project: string, collection: string): DeleteEntry[] {
    if (this.log.entries.length === 0) return [];
    return this.log.entries
      .filter((e) => e.project === project && e.collection === collection)
      .map((e) => e.entry);
  }

  /** True for a deleted collection nothing was written to since. */
  hidden(store: CollectionStore): boolean {
    return this.log.tombstones.some(
      (t) =>
        t.project === store.project && t.collection === store.name && store.nextSeq <= t.seqBefore,
    );
  }

  /** DELETE .../events/<c>: by filters/timeframe/timezone, or the whole collection without them. */
  async deleteEvents(
    project: string,
    collection: string,
    params: Readonly<Record<string, unknown>>,
  ): Promise<void> {
    const plan = this.parse(params);
    this.requireCollection(project, collection);
    this.take(project, plan);
    await this.host.idle();
    this.applyTo(this.requireCollection(project, collection), plan);
  }

  /** DELETE .../events/<c>/properties/<p>: gone from the schema now, from the data for readers. */
  async deleteProperty(project: string, collection: string, property: string): Promise<void> {
    const before = this.requireCollection(project, collection);
    if (!deletable(before, property)) throw noProperty(collection, property);
    const plan: DeletePlan = { kind: 'property', property };
    this.take(project, plan);
    await this.host.idle();
    this.applyTo(this.requireCollection(project, collection), plan);
  }

  /** A delete of events checked (400s, 429) and its timeframe resolved; nothing applied. */
  planEvents(project: string, params: Readonly<Record<string, unknown>>): DeletePlan {
    const plan = this.parse(params);
    this.take(project, plan);
    return plan;
  }

  /** A property delete checked as far as it can be without the data (svc paths, 429). */
  planProperty(project: string, collection: string, property: string): DeletePlan {
    if (property === '' || property === 'svc' || property.startsWith('svc.')) throw noProperty(collection, property);
    const plan: DeletePlan = { kind: 'property', property };
    this.take(project, plan);
    return plan;
  }

  /**
   * Applies a plan to the collection as stored now (no rate limit): rows and properties of the
   * events stored so far (`seqBefore` = the store's next log offset), or the whole collection.
   * False when the store has no such collection or property.
   */
  async apply(project: string, collection: string, plan: DeletePlan): Promise<boolean> {
    const filters = plan.kind === 'rows' ? parseFilters(plan.filters) : [];
    await this.host.idle();
    const store = this.host.store(project, collection);
    if (store === undefined || this.hidden(store)) return false;
    if (plan.kind === 'property' && !deletable(store, plan.property)) return false;
    this.applyTo(store, plan, filters);
    return true;
  }

  private parse(params: Readonly<Record<string, unknown>>): DeletePlan {
    const given = (name: string) =>
      params[name] !== undefined && params[name] !== null && params[name] !== '';
    if (!given('filters') && !given('timeframe') && !given('timezone')) return { kind: 'collection' };
    parseFilters(params.filters);
    let range = ALL_TIME;
    if (given('timeframe'))
      range = resolveTimeframe(params.timeframe, parseTimezone(params.timezone), this.host.clock());
    else if (given('timezone')) parseTimezone(params.timezone);
    return { kind: 'rows', startMs: range.startMs, endMs: range.endMs, filters: params.filters ?? [] };
  }

  private take(project: string, plan: DeletePlan): void {
    if (plan.kind === 'collection') this.rates.take(project, 'collection_delete', COLLECTION_DELETES_PER_MINUTE);
    else this.rates.take(project, 'delete', DELETES_PER_MINUTE);
  }

  /** Synchronous, after idle(): no flush or compaction runs meanwhile. */
  private applyTo(store: CollectionStore, plan: DeletePlan, filters?: FilterNode[]): void {
    if (plan.kind === 'collection') return this.dropCollection(store);
    if (plan.kind === 'rows') {
      return this.append(store, {
        kind: 'rows',
        id: this.log.nextId,
        seqBefore: store.nextSeq,
        range: { startMs: plan.startMs, endMs: plan.endMs },
        filters: filters ?? parseFilters(plan.filters),
      });
    }
    this.append(store, {
      kind: 'property',
      id: this.log.nextId,
      seqBefore: store.nextSeq,
      path: plan.property,
    });
    store.schema.forget(plan.property);
    this.host.commitManifest();
  }

  private requireCollection(project: string, collection: string): CollectionStore {
    const store = this.host.store(project, collection);
    if (store === undefined || this.hidden(store)) {
      throw new ApiError('ResourceNotFoundError', `collection "${collection}" does not exist`);
    }
    return store;
  }

  private append(store: CollectionStore, entry: DeleteEntry): void {
    this.log.nextId = entry.id + 1;
    this.log.entries.push({ project: store.project, collection: store.name, entry });
    this.save();
    this.host.deleted(store.project, store.name);
  }

  private dropCollection(store: CollectionStore): void {
    const files = store.segments.map((s) => s.file);
    this.log.tombstones = this.log.tombstones.filter(
      (t) => t.project !== store.project || t.collection !== store.name,
    );
    this.log.tombstones.push({
      project: store.project,
      collection: store.name,
      seqBefore: store.nextSeq,
    });
    this.log.entries = this.log.entries.filter(
      (e) => e.project !== store.project || e.collection !== store.name,
    );
    this.save();
    this.host.resetStore(store, store.nextSeq);
    this.host.commitManifest();
    for (const file of files) this.host.forget(file);
    this.host.retire(files);
    this.host.deleted(store.project, store.name);
  }

  /**
   * After open: finishes a collection delete a crash interrupted (tombstone saved, manifest not
   * yet) and re-applies property deletes to a schema the WAL replay may have brought back.
   */
  recover(): void {
    for (const tombstone of this.log.tombstones) {
      const store = this.host.store(tombstone.project, tombstone.collection);
      if (store === undefined) continue;
      const stale =
        store.segments.some((s) => s.footer.seqMin < tombstone.seqBefore) ||
        (store.buffer.rows > 0 && store.buffer.firstSeq < tombstone.seqBefore);
      if (!stale) continue;
      const files = store.segments.map((s) => s.file);
      const fresh = this.host.resetStore(store, tombstone.seqBefore);
      const rows = store.buffer.rows > 0 ? store.buffer.snapshot() : null;
      let older = 0;
      while (rows !== null && older < rows.rows && rows.seq[older] < tombstone.seqBefore) older++;
      // Events written after the delete (replayed from the WAL) stay.
      if (rows !== null && older < rows.rows) fresh.buffer = store.buffer.dropPrefix(older);
      this.host.commitManifest();
      this.removeFiles(files);
    }
    for (const { project, collection, entry } of this.log.entries) {
      const store = this.host.store(project, collection);
      if (entry.kind === 'property' && store !== undefined && store.nextSeq <= entry.seqBefore) {
        store.schema.forget(entry.path);
      }
    }
  }

  /**
   * One step of the background rewrite (run by the engine after each flush, never concurrently
   * with one): rewrites one segment that still holds deleted rows or properties, or retires the
   * entries nothing holds any more. Returns true when it did some work.
   */
  async rewriteStep(): Promise<boolean> {
    if (this.log.entries.length === 0) return false;
    for (const store of [...this.host.stores()]) {
      const entries = this.entriesOf(store.project, store.name);
      if (entries.length === 0) continue;
      const maxId = Math.max(...entries.map((e) => e.id));
      for (const ref of store.segments) {
        if ((this.log.clean[this.relative(ref.file)] ?? 0) >= maxId) continue;
        const affecting = entries.filter((entry) => affects(entry, ref));
        if (affecting.length === 0) {
          this.log.clean[this.relative(ref.file)] = maxId;
          continue;
        }
        await this.rewriteOne(store, ref, affecting, maxId);
        return true;
      }
      this.retire(store, entries);
    }
    return false;
  }

  private async rewriteOne(
    store: CollectionStore,
    ref: SegmentRef,
    deletes: DeleteEntry[],
    maxId: number,
  ): Promise<void> {
    const name = path
      .basename(ref.file)
      .replace(/-\d+\.arrow$/, `-${process.hrtime.bigint()}.arrow`);
    const file = path.join(
      path.dirname(ref.file),
      name === path.basename(ref.file) ? `r${name}` : name,
    );
    const footer = await this.host.rewrite({
      file,
      source: ref.file,
      deletes,
      schema: store.schema.toJSON(),
    });
    const index = store.segments.indexOf(ref);
    if (index === -1) {
      this.removeFiles([file]);
      return;
    }
    if (footer.rows > 0 && !fs.existsSync(file)) {
      // No row or value of it was deleted (the footer could not tell): nothing to swap.
      this.log.clean[this.relative(ref.file)] = maxId;
      this.save();
      return;
    }
    if (footer.rows === 0) store.segments.splice(index, 1);
    else store.segments[index] = { file, footer };
    delete this.log.clean[this.relative(ref.file)];
    if (footer.rows > 0) this.log.clean[this.relative(file)] = maxId;
    this.host.commitManifest();
    this.save();
    this.host.forget(ref.file);
    // Removed once no query that listed it may still read it (storage/retired-files.ts).
    this.host.retire([ref.file]);
  }

  /** Drops the entries every segment is clean of and the buffer has flushed past. */
  private retire(store: CollectionStore, entries: DeleteEntry[]): void {
    const done = entries.filter(
      (entry) =>
        store.flushedSeq >= entry.seqBefore &&
        (store.buffer.rows === 0 || store.buffer.firstSeq >= entry.seqBefore) &&
        store.segments.every(
          (s) =>
            !touches(entry, s.footer.seqMin) ||
            (this.log.clean[this.relative(s.file)] ?? 0) >= entry.id,
        ),
    );
    if (done.length === 0) return;
    const ids = new Set(done.map((e) => e.id));
    this.log.entries = this.log.entries.filter((e) => !ids.has(e.entry.id));
    if (this.log.entries.length === 0) this.log.clean = {};
    this.save();
  }

  private removeFiles(files: readonly string[]): void {
    for (const file of files) {
      this.host.forget(file);
      fs.rmSync(file, { force: true });
      fs.rmSync(`${file}.meta`, { force: true });
    }
  }

  private relative(file: string): string {
    return path.relative(this.host.dataDir, file);
  }

  private save(): void {
    writeFileDurable(path.join(this.host.dataDir, FILE), JSON.stringify(this.log));
  }
}

/** The collection has the property (or paths below it) and it is no svc path. */
function deletable(store: CollectionStore, property: string): boolean {
  return !property.startsWith('svc.') && property !== 'svc'
    && Object.keys(store.schema.toJSON()).some((p) => underPath(p, property));
}

function noProperty(collection: string, property: string): ApiError {
  return new ApiError('ResourceNotFoundError', `collection "${collection}" has no deletable property "${property}"`);
}

/** Whether a segment may hold rows or values the entry deletes, judging by its footer. */
function affects(entry: DeleteEntry, ref: SegmentRef): boolean {
  const footer = ref.footer;
  if (!touches(entry, footer.seqMin)) return false;
  if (entry.kind === 'property') {
    return Object.entries(footer.columns).some(
      ([name, stats]) => underPath(name, entry.path) && stats.present > 0,
    );
  }
  return footer.tsMax >= entry.range.startMs && footer.tsMin < entry.range.endMs;
}
