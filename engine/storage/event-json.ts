/**
 * Events rebuilt from their columns: the store keeps each event once, as columns (chunk.ts), and
 * extraction and the outbound Kafka stream turn a row back into the JSON object the client sent,
 * enriched and with its svc object. Nesting comes from the dotted paths, types from the row's tag
 * (a property seen with two types reads back as each row's own), lists and their nulls as stored,
 * `svc.addons` and empty objects from their structural leaves (schema/flatten.ts). Key order may
 * differ from the order sent; JSON objects are unordered.
 */
import { eventId } from './event-ids.js';
import { STRUCTURAL_SUFFIX, isStructuralPath } from '../schema/flatten.js';
import { formatTimestamp } from '../schema/timestamp.js';
import {
  TAG_BOOL, TAG_LIST, TAG_MISSING, TAG_NUM, TAG_STR, dictLength, numberAt, stringAt, type Column, type ColumnChunk,
} from './chunk.js';

type JsonObject = Record<string, unknown>;

const SVC_PREFIX = '"svc":';

/** A column with its path split once per chunk, not once per row. */
interface PlannedColumn {
  readonly column: Column;
  /** Keys from the event root to the value's parent. */
  readonly parents: readonly string[];
  readonly key: string;
  /** The value is JSON text to parse (a structural leaf). */
  readonly structural: boolean;
}

/**
 * A node of an event's JSON tree for json(): a property that a row may hold as a primitive or list
 * (`leaf`), as JSON text (`structural`: an empty object, svc.addons) or as an object (`children`);
 * a row holds at most one of the three.
 */
interface JsonNode {
  /** `"key":`, escaped once. */
  readonly prefix: string;
  leaf: Column | null;
  structural: Column | null;
  readonly children: JsonNode[];
  readonly byKey: Map<string, JsonNode>;
}

function jsonNode(key: string): JsonNode {
  return { prefix: `${JSON.stringify(key)}:`, leaf: null, structural: null, children: [], byKey: new Map() };
}

/** Turns rows of one chunk into events; build the plan once and call event() or json() per row. */
export class EventBuilder {
  private readonly planned: PlannedColumn[] = [];
  private tree: JsonNode | null = null;
  /** Per string column, its dictionary's strings as JSON, made on first use. */
  private readonly quoted = new Map<Column, (string | undefined)[]>();
  private lastTs = NaN;
  private lastTsText = '';
  private lastCreated = NaN;
  private lastCreatedText = '';

  /** `idKey` is the collection's id key (ids.ts collectionIdKey). */
  constructor(private readonly chunk: ColumnChunk, private readonly idKey: number) {
    // Structural leaves last: an empty object never hides a sibling, and svc exists before svc.addons.
    const columns = [...chunk.columns.values()].sort((a, b) =>
      Number(isStructuralPath(a.path)) - Number(isStructuralPath(b.path)));
    for (const column of columns) {
      const structural = isStructuralPath(column.path);
      const path = structural ? column.path.slice(0, -STRUCTURAL_SUFFIX.length) : column.path;
      const parts = path.split('.');
      this.planned.push({ column, parents: parts.slice(0, -1), key: parts[parts.length - 1], structural });
    }
  }

  /**
   * The event stored at `row` as JSON text, written straight from the columns (the same event
   * event() builds, without the objects): the outbound stream and NDJSON output use it.
   */
  json(row: number): string {
    const chunk = this.chunk;
    const root = (this.tree ??= this.buildTree());
    let svc = `"id":"${eventId(this.idKey, chunk.seq[row])}","timestamp":"${this.tsText(chunk.ts[row])}",` +
      `"created_at":"${this.createdText(chunk.createdAt[row])}"`;
    let out = '';
    for (const child of root.children) {
      if (child.prefix === SVC_PREFIX) {
        for (const inner of child.children) {
          const value = this.nodeJson(inner, row);
          if (value !== null) svc += `,${inner.prefix}${value}`;
        }
        continue;
      }
      const value = this.nodeJson(child, row);
      if (value !== null) out += `,${child.prefix}${value}`;
    }
    return `{${SVC_PREFIX}{${svc}}${out}}`;
  }

  private nodeJson(node: JsonNode, row: number): string | null {
    if (node.leaf !== null && node.leaf.tags[row] !== TAG_MISSING) return this.leafJson(node.leaf, row);
    if (node.structural !== null && node.structural.tags[row] !== TAG_MISSING) {
      return stringAt(node.structural, node.structural.str![row]);
    }
    let out: string | null = null;
    for (const child of node.children) {
      const value = this.nodeJson(child, row);
      if (value === null) continue;
      out = out === null ? `{${child.prefix}${value}` : `${out},${child.prefix}${value}`;
    }
    return out === null ? null : `${out}}`;
  }

  private leafJson(column: Column, row: number): string {
    switch (column.tags[row]) {
      case TAG_NUM: return String(numberAt(column, row));
      case TAG_BOOL: return column.num![row] === 1 ? 'true' : 'false';
      case TAG_STR: {
        let quoted = this.quoted.get(column);
        if (quoted === undefined) this.quoted.set(column, (quoted = new Array(dictLength(column))));
        const code = column.str![row];
        return (quoted[code] ??= JSON.stringify(stringAt(column, code)));
      }
      case TAG_LIST: return JSON.stringify(column.lists![row]);
      default: return 'null';
    }
  }

  private buildTree(): JsonNode {
    const root = jsonNode('');
    for (const { column, parents, key, structural } of this.planned) {
      let node = root;
      for (const part of [...parents, key]) {
        let next = node.byKey.get(part);
        if (next === undefined) {
          next = jsonNode(part);
          node.byKey.set(part, next);
          node.children.push(next);
        }
        node = next;
      }
      if (structural) node.structural = column;
      else node.leaf = column;
    }
    return root;
  }

  /** Rows of a chunk often share a millisecond: format each distinct one once. */
  private tsText(ms: number): string {
    if (ms !== this.lastTs) [this.lastTs, this.lastTsText] = [ms, formatTimestamp(ms)];
    return this.lastTsText;
  }

  private createdText(ms: number): string {
    if (ms !== this.lastCreated) [this.lastCreated, this.lastCreatedText] = [ms, formatTimestamp(ms)];
    return this.lastCreatedText;
  }

  /** The event stored at `row`. */
  event(row: number): JsonObject {
    const chunk = this.chunk;
    const event: JsonObject = {};
    const svc: JsonObject = {
      id: eventId(this.idKey, chunk.seq[row]),
      timestamp: this.tsText(chunk.ts[row]),
      created_at: this.createdText(chunk.createdAt[row]),
    };
    event.svc = svc;
    for (const { column, parents, key, structural } of this.planned) {
      const tag = column.tags[row];
      if (tag === TAG_MISSING) continue;
      let target = event;
      for (const part of parents) {
        const next = target[part];
        target = (next === undefined ? (target[part] = {}) : next) as JsonObject;
      }
      const value = valueAt(column, row, tag);
      target[key] = structural ? JSON.parse(value as string) : value;
    }
    return event;
  }
}

function valueAt(column: Column, row: number, tag: number): unknown {
  switch (tag) {
    case TAG_NUM: return numberAt(column, row);
    case TAG_BOOL: return column.num![row] === 1;
    case TAG_STR: return stringAt(column, column.str![row]);
    case TAG_LIST: return column.lists![row];
    default: return null;
  }
}
