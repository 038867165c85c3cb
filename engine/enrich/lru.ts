/**
 * A bounded, approximately least-recently-used cache in two generations (the quick-lru scheme):
 * new and recently hit entries live in `young`; when `young` fills half the bound it becomes `old`
 * and the previous `old` is dropped whole. A hit in `old` is promoted. Every operation is a Map get
 * or set: no per-hit delete, which made a strict Map-order LRU the hottest code of a geo lookup.
 */
import { assert } from '../base/assert.js';

export class LruCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private readonly generationMax: number;

  constructor(entriesMax: number) {
    assert(Number.isInteger(entriesMax), 'entriesMax must be an integer');
    assert(entriesMax >= 2, 'entriesMax must hold two generations');
    this.generationMax = Math.floor(entriesMax / 2);
  }

  /** Entries held; at most entriesMax. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** The cached value, kept as recent, or undefined. */
  get(key: K): V | undefined {
    const value = this.young.get(key);
    if (value !== undefined) return value;
    const aged = this.old.get(key);
    if (aged !== undefined) {
      this.old.delete(key);
      this.insert(key, aged);
    }
    return aged;
  }

  set(key: K, value: V): void {
    assert(value !== undefined, 'undefined means a miss and cannot be cached');
    if (this.young.has(key)) {
      this.young.set(key, value);
      return;
    }
    this.old.delete(key);
    this.insert(key, value);
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
  }

  private insert(key: K, value: V): void {
    if (this.young.size >= this.generationMax) {
      this.old = this.young;
      this.young = new Map<K, V>();
    }
    this.young.set(key, value);
  }
}
