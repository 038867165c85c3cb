/**
 * Events rebuilt from their columns: the store keeps each event once, as columns (chunk.ts), and
 * extraction and the outbound Kafka stream turn a row back into the JSON object the client sent,
 * enriched and with its svc object. Nesting comes from the dotted paths, types from the row's tag
 * (a property seen with two types reads back as each row's own), lists and their nulls as stored,
 * `svc.addons` and empty objects from their structural leaves (schema/flatten.ts). Key order may
 * differ from the order sent; JSON objects are unordered.
 */
import { eventId } from '../ids.js';
import { STRUCTURAL_SUFFIX, isStructuralPath } from '../schema/flatten.js';
import { formatTimestamp } from '../schema/timestamp.js';
import {
  TAG_BOOL, TAG_LIST, TAG_MISSING, TAG_NUM, TAG_STR, type Column, type ColumnChunk,
} from './chunk.js';

type JsonObject = Record<string, unknown>;

/** A column with its path split once per chunk, not once per row. */
interface PlannedColumn {
  readonly column: Column;
  /** Keys from the event root to the value's parent. */
  readonly parents: readonly string[];
  readonly key: string;
  /** The value is JSON text to parse (a structural leaf). */
  readonly structural: boolean;
}

/** Turns rows of one chunk into events; build the plan once and call event() per row. */
export class EventBuilder {
  private readonly planned: PlannedColumn[] = [];

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

  /** The event stored at `row`. */
  event(row: number): JsonObject {
    const chunk = this.chunk;
    const event: JsonObject = {};
    const svc: JsonObject = {
      id: eventId(this.idKey, chunk.seq[row]),
      timestamp: formatTimestamp(chunk.ts[row]),
      created_at: formatTimestamp(chunk.createdAt[row]),
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
    case TAG_NUM: return column.num![row];
    case TAG_BOOL: return column.num![row] === 1;
    case TAG_STR: return column.dict![column.str![row]];
    case TAG_LIST: return column.lists![row];
    default: return null;
  }
}
