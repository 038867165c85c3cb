/**
 * The schema dictionary of one collection: property path → type (docs/api.md §4). A path keeps the
 * first non-null type it was seen with; later values of other types are still stored. Bounded by
 * COLLECTION_PROPERTIES_MAX distinct paths (TooManyPropertiesError rejects the whole event).
 */
import { ApiError } from '../base/errors.js';
import { COLLECTION_PROPERTIES_MAX } from '../base/limits.js';
import { isStructuralPath, type Leaves } from './flatten.js';
import {
  CompactCursor, KIND_FALSE, KIND_FRAGMENT, KIND_LIST, KIND_NULL, KIND_NUM, KIND_STR, KIND_TRUE, type CompactLeaves, type LeafView,
} from './leaf-codec.js';

/** Schema type strings of docs/api.md §4. */
export type SchemaType = 'num' | 'bool' | 'string' | 'list' | 'null' | 'datetime' | 'geo';

const GEO_PATH = 'svc.location.coordinates';
/** Paths every stored event has; listed in the schema, not counted against the limit. */
const STANDARD: Readonly<Record<string, SchemaType>> = {
  'svc.created_at': 'datetime',
  'svc.id': 'string',
  'svc.timestamp': 'datetime',
};

function leafType(path: string, value: unknown): SchemaType {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return path === GEO_PATH ? 'geo' : 'list';
  switch (typeof value) {
    case 'number': return 'num';
    case 'boolean': return 'bool';
    default: return 'string';
  }
}

/** leafType of a leaf with this kind (leaf-codec.ts). */
function kindType(path: string, kind: number): SchemaType {
  switch (kind) {
    case KIND_NUM: return 'num';
    case KIND_TRUE:
    case KIND_FALSE: return 'bool';
    case KIND_STR: return 'string';
    case KIND_LIST: return path === GEO_PATH ? 'geo' : 'list';
    case KIND_NULL:
    default: return 'null';
  }
}

export class SchemaDictionary {
  private readonly types = new Map<string, SchemaType>();

  constructor(initial?: Readonly<Record<string, SchemaType>>) {
    if (initial) {
      for (const [path, type] of Object.entries(initial)) {
        if (!(path in STANDARD)) this.types.set(path, type);
      }
    }
  }

  get size(): number {
    return this.types.size;
  }

  /** Throws TooManyPropertiesError when the leaves would take the collection past its bound. */
  check(leaves: Leaves): void {
    let added = 0;
    for (let i = leaves.start; i < leaves.count; i++) {
      const path = leaves.paths[i];
      if (!this.types.has(path) && !isStructuralPath(path)) added++;
    }
    if (added > 0 && this.types.size + added > COLLECTION_PROPERTIES_MAX) {
      throw new ApiError('TooManyPropertiesError',
        `A collection may have at most ${COLLECTION_PROPERTIES_MAX} properties; this event would bring it to ` +
        `${this.types.size + added}. Dynamically named properties are the usual cause.`);
    }
  }

  /**
   * Whether events whose paths are all among `paths` pass check() in any number and order: the
   * new ones among them fit all at once.
   */
  fits(paths: readonly string[]): boolean {
    let added = 0;
    for (const path of paths) if (!this.types.has(path) && !isStructuralPath(path)) added++;
    return added === 0 || this.types.size + added <= COLLECTION_PROPERTIES_MAX;
  }

  /**
   * observe() of the view's leaves [from[e], to[e]) for each event e in order, with no per-leaf
   * work when every path of the view already has a type.
   */
  observeView(view: LeafView, from: ArrayLike<number>, to: ArrayLike<number>, events: number): void {
    const paths = view.paths;
    let open: Uint8Array | null = null;
    for (let p = 0; p < paths.length; p++) {
      const known = this.types.get(paths[p]);
      if ((known !== undefined && known !== 'null') || isStructuralPath(paths[p])) continue;
      (open ??= new Uint8Array(paths.length))[p] = 1;
    }
    if (open === null) return;
    if (view.compact !== null) {
      this.observeCompact(view, view.compact, open, from, to, events);
      return;
    }
    const { pathOf, kinds } = view;
    for (let e = 0; e < events; e++) {
      for (let i = from[e]; i < to[e]; i++) this.observeKind(paths, open, pathOf[i], kinds[i]);
    }
  }

  /**
   * observeView over the leaves as stored: an add-on result's leaves are observed where the first
   * event using it has them, which later uses cannot change (the first non-null type stays).
   */
  private observeCompact(
    view: LeafView, compact: CompactLeaves, open: Uint8Array, from: ArrayLike<number>, to: ArrayLike<number>, events: number,
  ): void {
    const { pathOf, kinds, refs, starts } = compact;
    const paths = view.paths;
    const cursor = new CompactCursor(compact);
    const seen = new Uint8Array(starts.length);
    for (let e = 0; e < events; e++) {
      for (let c = cursor.seek(from[e]), end = cursor.seek(to[e]); c < end; c++) {
        if (kinds[c] !== KIND_FRAGMENT) this.observeKind(paths, open, pathOf[c], kinds[c]);
        else if (seen[refs[c]] === 0) {
          seen[refs[c]] = 1;
          for (let j = starts[refs[c]]; j < starts[refs[c] + 1]; j++) this.observeKind(paths, open, pathOf[j], kinds[j]);
        }
      }
    }
  }

  /** A leaf at path `p` of kind `kind`, for observeView: `open` marks the paths still without a type. */
  private observeKind(paths: readonly string[], open: Uint8Array, p: number, kind: number): void {
    if (open[p] === 0) return;
    const path = paths[p];
    const type = kindType(path, kind);
    if (type !== 'null') open[p] = 0;
    if (type !== 'null' || !this.types.has(path)) this.types.set(path, type);
  }

  observe(leaves: Leaves): void {
    for (let i = leaves.start; i < leaves.count; i++) {
      const path = leaves.paths[i];
      const known = this.types.get(path);
      if ((known !== undefined && known !== 'null') || isStructuralPath(path)) continue;
      const type = leafType(path, leaves.values[i]);
      if (known === undefined || type !== 'null') this.types.set(path, type);
    }
  }

  /** Removes `path` and every path below it (a property delete); true when any was known. */
  forget(path: string): boolean {
    let found = false;
    for (const known of [...this.types.keys()]) {
      if (known === path || known.startsWith(`${path}.`)) found = this.types.delete(known) || found;
    }
    return found;
  }

  typeOf(path: string): SchemaType | undefined {
    return STANDARD[path] ?? this.types.get(path);
  }

  toJSON(): Record<string, SchemaType> {
    const out: Record<string, SchemaType> = { ...STANDARD };
    for (const [path, type] of this.types) out[path] = type;
    return out;
  }
}
