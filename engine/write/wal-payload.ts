/**
 * The payload of one WAL record: the events of one append call as their leaves (schema/leaf-codec.ts)
 * and per event what the store keeps apart from them. No event is serialized to JSON on the way in:
 * replay rebuilds the buffers' rows from the same leaves the write path applied.
 *
 *   Payload    => VERSION:u8 (2) flags:u8 project:Str16 [tag:Str16] collections:u32 Str16*
 *                 events:u32 Event* leavesLength:u32 Leaves
 *   Event      => collection:u32 from:u32 to:u32 seq:f64 timestampMs:f64 createdAtMs:f64
 *                 tokenLength:i32 (-1: none) token:utf8
 *   Str16      => length:u16 utf8
 *
 * flags: bit 0 (FLAG_TAG) = a tag follows the project; the other bits are 0. The tag is the
 * caller's opaque text for the whole call (AppendOptions.tag, at most TAG_BYTES_MAX bytes: the
 * Kafka listener's idempotent producer fields), written atomically with the events so replay can
 * hand it back (Engine.replayedTags). Payloads written before flags existed have 0 there and
 * decode as before.
 *
 * `from`/`to` are the event's leaves in Leaves, as read (an add-on result that Leaves keeps once in
 * its fragment table counts as its leaves there). Each event carries its log offset so replay can skip
 * rows a flush already put in segments. Payloads of version 1 (one line of text per event with the
 * event's JSON, written before 2026-11-25) still replay: their first byte is a project id's.
 */
import { TAG_BYTES_MAX } from '../base/limits.js';
import { flattenEvent, type Leaves } from '../schema/flatten.js';
import { decodeLeaves } from '../schema/leaf-codec.js';

const VERSION = 2;
/** flags bit 0: a tag (Str16) follows the project id. */
const FLAG_TAG = 1;
const EVENT_FIXED_BYTES = 12 + 24 + 4;

export interface WalEvent {
  readonly collection: string;
  /** Log offset. */
  seq: number;
  /** svc.timestamp, ms. */
  readonly timestamp: number;
  /** svc.created_at, ms. */
  readonly createdAt: number;
  /** Uniqueness token, or null. */
  readonly token: string | null;
  /** The event's leaves: [from, to) of the record's leaves. */
  readonly from: number;
  readonly to: number;
}

export interface WalPayload {
  readonly project: string;
  readonly events: readonly WalEvent[];
  /** The call's tag (AppendOptions.tag), or null. */
  readonly tag: string | null;
}

/**
 * Encodes the payload into one buffer from `alloc`, after `room` bytes left free (the WAL frame
 * header goes there). `leaves` is the call's leaves as LeafEncoder wrote them.
 */
export function encodeWalPayload(
  project: string, events: readonly WalEvent[], leaves: Uint8Array, room: number, alloc: (bytes: number) => Buffer,
  tag: string | null = null,
): Buffer {
  const collections = new Map<string, number>();
  let bytes = room + 2 + 2 + project.length * 3 + 4 + 4 + 4 + leaves.byteLength;
  if (tag !== null) bytes += 2 + tag.length * 3;
  for (const e of events) {
    if (!collections.has(e.collection)) {
      collections.set(e.collection, collections.size);
      bytes += 2 + e.collection.length * 3;
    }
    bytes += EVENT_FIXED_BYTES + (e.token === null ? 0 : e.token.length * 3);
  }
  const out = alloc(bytes);
  let at = room;
  out[at++] = VERSION;
  out[at++] = tag === null ? 0 : FLAG_TAG;
  at = writeStr16(out, at, project);
  if (tag !== null) {
    const start = at;
    at = writeStr16(out, at, tag);
    if (at - start - 2 > TAG_BYTES_MAX) throw new Error('wal record: tag too long');
  }
  at = out.writeUInt32LE(collections.size, at);
  for (const name of collections.keys()) at = writeStr16(out, at, name);
  at = out.writeUInt32LE(events.length, at);
  for (const e of events) {
    at = out.writeUInt32LE(collections.get(e.collection)!, at);
    at = out.writeUInt32LE(e.from, at);
    at = out.writeUInt32LE(e.to, at);
    at = out.writeDoubleLE(e.seq, at);
    at = out.writeDoubleLE(e.timestamp, at);
    at = out.writeDoubleLE(e.createdAt, at);
    if (e.token === null) {
      at = out.writeInt32LE(-1, at);
    } else {
      const length = out.write(e.token, at + 4, 'utf8');
      out.writeInt32LE(length, at);
      at += 4 + length;
    }
  }
  at = out.writeUInt32LE(leaves.byteLength, at);
  out.set(leaves, at);
  return out.subarray(0, at + leaves.byteLength);
}

function writeStr16(out: Buffer, at: number, text: string): number {
  const length = out.write(text, at + 2, 'utf8');
  if (length > 0xffff) throw new Error('wal record: name too long');
  out.writeUInt16LE(length, at);
  return at + 2 + length;
}

/** Decodes a payload; its events' leaves go to `leaves` (from index 0). Throws on malformed bytes. */
export function decodeWalPayload(bytes: Uint8Array, leaves: Leaves): WalPayload {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length === 0) throw new Error('wal record: empty payload');
  if (buffer[0] !== VERSION) return decodeTextPayload(buffer, leaves);
  const flags = buffer[1]!;
  if ((flags & ~FLAG_TAG) !== 0) throw new Error('wal record: unknown flags');
  let at = 2;
  const str16 = (): string => {
    const length = buffer.readUInt16LE(at);
    if (at + 2 + length > buffer.length) throw new Error('wal record: truncated name');
    const text = buffer.toString('utf8', at + 2, at + 2 + length);
    at += 2 + length;
    return text;
  };
  const project = str16();
  const tag = (flags & FLAG_TAG) !== 0 ? str16() : null;
  const collections: string[] = [];
  const collectionCount = buffer.readUInt32LE(at);
  at += 4;
  for (let i = 0; i < collectionCount; i++) collections.push(str16());
  const count = buffer.readUInt32LE(at);
  at += 4;
  const events: WalEvent[] = [];
  for (let i = 0; i < count; i++) {
    const c = collections[buffer.readUInt32LE(at)];
    if (c === undefined) throw new Error('wal record: collection out of range');
    const from = buffer.readUInt32LE(at + 4);
    const to = buffer.readUInt32LE(at + 8);
    const s = buffer.readDoubleLE(at + 12);
    const t = buffer.readDoubleLE(at + 20);
    const a = buffer.readDoubleLE(at + 28);
    const tokenLength = buffer.readInt32LE(at + 36);
    at += EVENT_FIXED_BYTES;
    let k: string | null = null;
    if (tokenLength >= 0) {
      if (at + tokenLength > buffer.length) throw new Error('wal record: truncated token');
      k = buffer.toString('utf8', at, at + tokenLength);
      at += tokenLength;
    }
    events.push({ collection: c, seq: s, timestamp: t, createdAt: a, token: k, from, to });
  }
  const leavesLength = buffer.readUInt32LE(at);
  at += 4;
  if (at + leavesLength !== buffer.length) throw new Error('wal record: leaves length mismatch');
  decodeLeaves(buffer.subarray(at), leaves);
  for (const e of events) {
    if (e.from > e.to || e.to > leaves.count) throw new Error('wal record: leaves out of range');
  }
  return { project: project, events: events, tag };
}

/**
 * Version 1: text, one event a line, `Collection \t Seq \t TimestampMs \t CreatedAtMs \t TokenJson
 * \t EventJson`, after a first line with the project id. The events are flattened into `leaves`.
 */
function decodeTextPayload(bytes: Buffer, leaves: Leaves): WalPayload {
  const text = bytes.toString('utf8');
  let lineEnd = text.indexOf('\n');
  const project = text.slice(0, lineEnd);
  const events: WalEvent[] = [];
  leaves.count = 0;
  while (lineEnd + 1 < text.length) {
    const start = lineEnd + 1;
    lineEnd = text.indexOf('\n', start);
    const fields: string[] = [];
    let at = start;
    for (let f = 0; f < 5; f++) {
      const tab = text.indexOf('\t', at);
      fields.push(text.slice(at, tab));
      at = tab + 1;
    }
    flattenEvent(JSON.parse(text.slice(at, lineEnd)), leaves);
    events.push({
      collection: fields[0], seq: +fields[1], timestamp: +fields[2], createdAt: +fields[3],
      token: JSON.parse(fields[4]) as string | null, from: leaves.start, to: leaves.count,
    });
  }
  return { project: project, events: events, tag: null };
}
