/**
 * A batch body (spec/api.md §4: a JSON object of collection name → array of events) parsed and
 * prepared off the thread that serves writes, and handed back in a form that crosses threads
 * cheaply: typed arrays for numbers and ranges, one table of each distinct path and string, and
 * the stored JSON of every event back to back in one byte array.
 */
import type { EventToWrite, WriteContext } from '../api.js';
import { ApiError, isApiError, type ErrorCode } from '../errors.js';
import type { EventPreparer } from '../event-preparer.js';
import { BATCH_EVENTS_MAX } from '../limits.js';
import { markOutOfRangeNumbers } from '../schema/exact-numbers.js';
import { newLeaves, type Leaves } from '../schema/flatten.js';

export interface ParsedBatch {
  readonly events: EventToWrite[];
  /** Collection names in body order, each with its number of events. */
  readonly collections: [string, number][];
}

/** A JSON body, whatever its Content-Type (text/plain from the Beacon API included). */
export function parseJsonBody(body: Uint8Array): unknown {
  if (body.length === 0) {
    throw new ApiError('InvalidJsonError', 'The request body is empty; send a JSON document.');
  }
  return parseJson(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'), 'The request body');
}

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(markOutOfRangeNumbers(text));
  } catch (error) {
    const reason = (error as Error).message;
    throw new ApiError('InvalidJsonError', `${what} is not valid JSON: ${reason}`);
  }
}

function invalidBatch(why: string): ApiError {
  return new ApiError('InvalidBatchError',
    `${why} A batch is a JSON object of collection name → array of events.`);
}

/** The batch body flattened in submission order, checked for shape and the event-count bound. */
export function parseBatchBody(body: Uint8Array): ParsedBatch {
  const batch = parseJsonBody(body);
  if (batch === null || typeof batch !== 'object' || Array.isArray(batch)) {
    throw invalidBatch('The body is not a JSON object.');
  }
  const events: EventToWrite[] = [];
  const collections: [string, number][] = [];
  for (const [collection, list] of Object.entries(batch)) {
    if (!Array.isArray(list)) throw invalidBatch(`The value of "${collection}" is not an array.`);
    if (events.length + list.length > BATCH_EVENTS_MAX) {
      throw invalidBatch(`The batch holds more than ${BATCH_EVENTS_MAX} events; split it.`);
    }
    for (const event of list) events.push({ collection, event });
    collections.push([collection, list.length]);
  }
  return { events, collections };
}

const KIND_NULL = 0;
const KIND_NUM = 1;
const KIND_STR = 2;
const KIND_TRUE = 3;
const KIND_FALSE = 4;
/** A list, or anything else flattening leaves whole: structured-cloned in `others`. */
const KIND_OTHER = 5;

/** Int32s per event in PackedBatch.ranges. */
export const RANGE_FIELDS = 5;

/** A prepared batch as it crosses threads (postMessage); see packBatch. */
export interface PackedBatch {
  readonly collections: [string, number][];
  /** Per event: its index in `errors` when the preparer refused it, else -1. */
  readonly errorOf: Int32Array;
  readonly errors: { code: ErrorCode; message: string }[];
  /** Per event: svc.timestamp in ms. */
  readonly t: Float64Array;
  readonly tokens: (string | null)[];
  /** Per event (RANGE_FIELDS): leaves from, leaves to, raw start, raw end, the stand-in svc.id's byte. */
  readonly ranges: Int32Array;
  readonly tooLarge: Uint8Array;
  /** Every prepared event's stored JSON, back to back. */
  readonly raw: Uint8Array;
  readonly leafCount: number;
  readonly pathTable: string[];
  readonly pathOf: Int32Array;
  readonly kinds: Uint8Array;
  /** Per leaf: its number, or its index in strTable or in `others`. */
  readonly nums: Float64Array;
  readonly strTable: string[];
  readonly others: unknown[];
}

/** What the packed batch's typed arrays hold, to move rather than copy them to another thread. */
export function packedTransferables(packed: PackedBatch): ArrayBuffer[] {
  return [packed.errorOf, packed.t, packed.ranges, packed.tooLarge, packed.raw, packed.pathOf, packed.kinds, packed.nums]
    .map((array) => array.buffer as ArrayBuffer);
}

/**
 * Prepares every event of a parsed batch with `preparer` and packs the results. A refused event
 * carries its error; nothing here knows the store, so schema and uniqueness are the caller's.
 * `leaves` is scratch space, reused from one batch to the next.
 */
export function packBatch(
  preparer: EventPreparer, batch: ParsedBatch, ctx: WriteContext, now: number, nowIso: string, leaves: Leaves = newLeaves(),
): PackedBatch {
  const count = batch.events.length;
  const errorOf = new Int32Array(count).fill(-1);
  const errors: { code: ErrorCode; message: string }[] = [];
  const t = new Float64Array(count);
  const tokens: (string | null)[] = new Array(count).fill(null);
  const ranges = new Int32Array(count * RANGE_FIELDS);
  const tooLarge = new Uint8Array(count);
  leaves.start = 0;
  leaves.count = 0;
  preparer.begin();
  for (let i = 0; i < count; i++) {
    leaves.start = leaves.count;
    try {
      const row = preparer.prepare(batch.events[i].event, ctx, now, nowIso, leaves);
      t[i] = row.t;
      tokens[i] = row.k;
      const at = RANGE_FIELDS * i;
      ranges[at] = row.from;
      ranges[at + 1] = row.to;
      ranges[at + 2] = row.rawStart;
      ranges[at + 3] = row.rawEnd;
      ranges[at + 4] = row.idAt;
      tooLarge[i] = row.tooLarge ? 1 : 0;
    } catch (error) {
      if (!isApiError(error)) throw error;
      leaves.count = leaves.start;
      errorOf[i] = errors.length;
      errors.push({ code: error.error_code, message: error.message });
    }
  }
  const raw = new Uint8Array(preparer.arena.subarray(0, preparer.arenaUsed));
  preparer.end();
  return { collections: batch.collections, errorOf, errors, t, tokens, ranges, tooLarge, raw, ...packLeaves(leaves) };
}

function packLeaves(leaves: Leaves): Pick<PackedBatch, 'leafCount' | 'pathTable' | 'pathOf' | 'kinds' | 'nums' | 'strTable' | 'others'> {
  const n = leaves.count;
  const pathTable: string[] = [];
  const pathIndex = new Map<string, number>();
  const strTable: string[] = [];
  const strIndex = new Map<string, number>();
  const others: unknown[] = [];
  const pathOf = new Int32Array(n);
  const kinds = new Uint8Array(n);
  const nums = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const path = leaves.paths[i];
    let p = pathIndex.get(path);
    if (p === undefined) {
      p = pathTable.length;
      pathTable.push(path);
      pathIndex.set(path, p);
    }
    pathOf[i] = p;
    const value = leaves.values[i];
    switch (typeof value) {
      case 'number':
        kinds[i] = KIND_NUM;
        nums[i] = value;
        break;
      case 'string': {
        let s = strIndex.get(value);
        if (s === undefined) {
          s = strTable.length;
          strTable.push(value);
          strIndex.set(value, s);
        }
        kinds[i] = KIND_STR;
        nums[i] = s;
        break;
      }
      case 'boolean':
        kinds[i] = value ? KIND_TRUE : KIND_FALSE;
        break;
      default:
        if (value === null) {
          kinds[i] = KIND_NULL;
        } else {
          kinds[i] = KIND_OTHER;
          nums[i] = others.length;
          others.push(value);
        }
    }
  }
  return { leafCount: n, pathTable, pathOf, kinds, nums, strTable, others };
}

/** The packed leaves as a Leaves, indices as in the packed batch's ranges. */
export function unpackLeaves(packed: PackedBatch, out: Leaves): Leaves {
  const { leafCount, pathTable, pathOf, kinds, nums, strTable, others } = packed;
  const paths = out.paths;
  const values = out.values;
  for (let i = 0; i < leafCount; i++) {
    paths[i] = pathTable[pathOf[i]];
    switch (kinds[i]) {
      case KIND_NUM: values[i] = nums[i]; break;
      case KIND_STR: values[i] = strTable[nums[i]]; break;
      case KIND_TRUE: values[i] = true; break;
      case KIND_FALSE: values[i] = false; break;
      case KIND_OTHER: values[i] = others[nums[i]]; break;
      default: values[i] = null;
    }
  }
  out.start = 0;
  out.count = leafCount;
  return out;
}
