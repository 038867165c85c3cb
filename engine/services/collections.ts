/**
 * The collection service: schemas, the rows a scan reads (segments and buffers, deletes applied),
 * and deletes of events, properties and whole collections.
 */
import { COLLECTIONS_LISTED_MAX } from '../base/limits.js';
import type { Listeners } from '../base/listeners.js';
import type { DeleteManager } from '../deletes/manager.js';
import { applyDeletes } from '../deletes/rewrite.js';
import { plainChunk, type ColumnChunk, type ScanSource } from '../storage/chunk.js';
import { collectionIdKey } from '../storage/event-ids.js';
import type { RetiredFiles } from '../storage/retired-files.js';
import { readSegment } from '../storage/segment/reader.js';
import type { StoreSet } from '../storage/store-set.js';
import type { CollectionSchema, CollectionService, DeletePlan } from './types.js';

export class Collections implements CollectionService {
  constructor(
    private readonly stores: StoreSet,
    private readonly deletes: DeleteManager,
    private readonly retired: RetiredFiles,
    private readonly deleted: Listeners<[projectId: string, collection: string]>,
  ) {}

  list(projectId: string): CollectionSchema[] {
    const out: CollectionSchema[] = [];
    for (const store of this.stores.values()) {
      if (store.project !== projectId || this.deletes.hidden(store)) continue;
      out.push({ name: store.name, properties: store.schema.toJSON() });
      if (out.length === COLLECTIONS_LISTED_MAX) break;
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(projectId: string, collection: string): CollectionSchema | undefined {
    const store = this.stores.get(projectId, collection);
    if (store === undefined || this.deletes.hidden(store)) return undefined;
    return { name: store.name, properties: store.schema.toJSON() };
  }

  leaseSegments(): () => void {
    return this.retired.lease();
  }

  scanSource(projectId: string, collection: string, startMs: number, endMs: number): ScanSource {
    const store = this.stores.get(projectId, collection);
    if (!store) return { idKey: collectionIdKey(projectId, collection), memoryVersion: 0, segments: [], memory: null, schema: {} };
    const deletes = this.deletes.entriesOf(projectId, collection);
    const source = store.scanSource(startMs, endMs);
    return deletes.length === 0 ? source : { ...source, deletes };
  }

  *scan(projectId: string, collection: string, startMs: number, endMs: number): Iterable<ColumnChunk> {
    const release = this.retired.lease();
    try {
      const source = this.scanSource(projectId, collection, startMs, endMs);
      const deletes = source.deletes ?? [];
      for (const segment of source.segments) yield plainChunk(applyDeletes(readSegment(segment.file), deletes));
      if (source.memory) yield applyDeletes(source.memory, deletes);
    } finally {
      release();
    }
  }

  deleteEvents(projectId: string, collection: string, params: Readonly<Record<string, unknown>>): Promise<void> {
    return this.deletes.deleteEvents(projectId, collection, params);
  }

  deleteProperty(projectId: string, collection: string, property: string): Promise<void> {
    return this.deletes.deleteProperty(projectId, collection, property);
  }

  planDeleteEvents(projectId: string, _collection: string, params: Readonly<Record<string, unknown>>): DeletePlan {
    return this.deletes.planEvents(projectId, params);
  }

  planDeleteProperty(projectId: string, collection: string, property: string): DeletePlan {
    return this.deletes.planProperty(projectId, collection, property);
  }

  applyDelete(projectId: string, collection: string, plan: DeletePlan): Promise<boolean> {
    return this.deletes.apply(projectId, collection, plan);
  }

  onDelete(listener: (projectId: string, collection: string) => void): () => void {
    return this.deleted.add(listener);
  }
}
