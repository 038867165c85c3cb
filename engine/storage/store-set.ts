/**
 * Every collection's store of one data directory, by project and collection, and the manifest
 * that lists them: loaded at open, committed after each flush, compaction or delete rewrite.
 */
import fs from 'node:fs';
import { CollectionStore } from './collection.js';
import { readManifest, writeManifest } from './manifest.js';

export class StoreSet {
  private readonly stores = new Map<string, CollectionStore>();

  constructor(private readonly dataDir: string, private readonly clock: () => number) {}

  /** Loads the manifest's collections and removes the files a crash left outside it. */
  load(): void {
    const now = this.clock();
    for (const saved of readManifest(this.dataDir).collections) {
      const store = new CollectionStore(this.dataDir, saved.project, saved.collection, saved, now);
      this.stores.set(key(saved.project, saved.collection), store);
      for (const orphan of store.orphanFiles()) fs.rmSync(orphan, { force: true });
    }
  }

  get(project: string, collection: string): CollectionStore | undefined {
    return this.stores.get(key(project, collection));
  }

  /** The collection's store, created (empty) on first write. */
  open(project: string, collection: string): CollectionStore {
    const id = key(project, collection);
    let store = this.stores.get(id);
    if (store === undefined) {
      store = new CollectionStore(this.dataDir, project, collection, undefined, this.clock());
      this.stores.set(id, store);
    }
    return store;
  }

  /** An empty store in place of `old` (a collection delete): same directory, log offsets go on. */
  reset(old: CollectionStore, flushedSeq: number): CollectionStore {
    const saved = {
      project: old.project, collection: old.name, dir: old.relativeDir, flushedSeq,
      nextSeq: old.nextSeq, schema: {}, segments: [],
    };
    const fresh = new CollectionStore(this.dataDir, old.project, old.name, saved, this.clock());
    this.stores.set(key(old.project, old.name), fresh);
    return fresh;
  }

  values(): IterableIterator<CollectionStore> {
    return this.stores.values();
  }

  /** Rows in every write buffer. */
  bufferedRows(): number {
    let rows = 0;
    for (const store of this.stores.values()) rows += store.buffer.rows;
    return rows;
  }

  /** Bytes held by every write buffer. */
  bufferedBytes(): number {
    let bytes = 0;
    for (const store of this.stores.values()) bytes += store.buffer.bytes;
    return bytes;
  }

  commitManifest(): void {
    const collections = [...this.stores.values()].map((store) => store.toManifest());
    writeManifest(this.dataDir, { version: 1, collections });
  }
}

function key(project: string, collection: string): string {
  return `${project}\u0000${collection}`;
}
