/**
 * A batch body (docs/api.md §4: a JSON object of collection name → array of events) parsed and
 * prepared off the thread that serves writes, and handed back in a form that crosses threads
 * cheaply: typed arrays per event and every event's leaves in one byte array (schema/leaf-codec.ts),
 * which the WAL record then holds as it is.
 */
import type { EventToWrite, WriteContext } from './event-preparer.js';
import { ApiError, isApiError, type ErrorCode } from '../base/errors.js';
import type { EventPreparer } from './event-preparer.js';
import { BATCH_EVENTS_MAX } from '../base/limits.js';
import { markOutOfRangeNumbers } from '../schema/exact-numbers.js';
import { newLeaves, type Leaves } from '../schema/flatten.js';
import type { LeafEncoder } from '../schema/leaf-codec.js';
import type { FastBatch } from './fast-batch.js';

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

/** Int32s per event in PackedBatch.ranges. */
export const RANGE_FIELDS = 2;

/** A prepared batch's events, whose leaves are elsewhere (PackedBatch, or the reader's Leaves). */
export type PreparedBatch = Omit<PackedBatch, 'leaves'>;

/** A prepared batch as it crosses threads (postMessage); see packBatch. */
export interface PackedBatch {
  readonly collections: [string, number][];
  /** Per event: its index in `errors` when the preparer refused it, else -1. */
  readonly errorOf: Int32Array;
  readonly errors: { code: ErrorCode; message: string }[];
  /** Per event: svc.timestamp in ms. */
  readonly timestamps: Float64Array;
  readonly tokens: (string | null)[];
  /** Per event (RANGE_FIELDS): its leaves' from and to. */
  readonly ranges: Int32Array;
  readonly tooLarge: Uint8Array;
  /** The leaves of every prepared event, as LeafEncoder writes them. */
  readonly leaves: Uint8Array;
}

/** What the packed batch's typed arrays hold, to move rather than copy them to another thread. */
export function packedTransferables(packed: PackedBatch): ArrayBuffer[] {
  return [packed.errorOf, packed.timestamps, packed.ranges, packed.tooLarge, packed.leaves].map((array) => array.buffer as ArrayBuffer);
}

/**
 * A batch the fast reader took (fast-batch.ts) in PreparedBatch's shape: none of its events is
 * refused there, and none carries a uniqueness token. Its arrays are fresh, to move across threads.
 */
export function preparedOf(fast: FastBatch): PreparedBatch {
  const count = fast.events;
  return {
    collections: fast.collections, errorOf: new Int32Array(count).fill(-1), errors: [], timestamps: fast.timestamps.slice(),
    tokens: new Array<string | null>(count).fill(null), ranges: fast.ranges.slice(), tooLarge: fast.tooLarge.slice(),
  };
}

/**
 * Prepares every event of a parsed batch with `preparer` and packs the results. A refused event
 * carries its error; nothing here knows the store, so schema and uniqueness are the caller's.
 * `leaves` is scratch space, reused from one batch to the next.
 */
export function packBatch(
  preparer: EventPreparer, encoder: LeafEncoder, batch: ParsedBatch, ctx: WriteContext, now: number, nowIso: string,
  leaves: Leaves = newLeaves(),
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
  for (let i = 0; i < count; i++) {
    leaves.start = leaves.count;
    try {
      const row = preparer.prepare(batch.events[i].event, ctx, now, nowIso, leaves);
      t[i] = row.timestamp;
      tokens[i] = row.token;
      const at = RANGE_FIELDS * i;
      ranges[at] = row.from;
      ranges[at + 1] = row.to;
      tooLarge[i] = row.tooLarge ? 1 : 0;
    } catch (error) {
      if (!isApiError(error)) throw error;
      leaves.count = leaves.start;
      errorOf[i] = errors.length;
      errors.push({ code: error.error_code, message: error.message });
    }
  }
  return { collections: batch.collections, errorOf, errors, timestamps: t, tokens, ranges, tooLarge, leaves: encoder.encode(leaves, leaves.count) };
}
