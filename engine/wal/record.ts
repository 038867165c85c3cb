/**
 * The WAL frame codec: turns one opaque payload into one self-checking frame, and a file's bytes
 * back into payloads up to the first frame that is torn or corrupt. Pure: no I/O, no clock, and
 * no knowledge of what a payload means (the engine encodes msgpack; this file never looks inside).
 *
 * Grammar (all integers big-endian):
 *
 *   File   => Record*
 *   Record => magic version length crc payload
 *     magic   => uint8    0xA7; a zero-filled or foreign tail fails here, before length is trusted
 *     version => uint8    1; a new frame layout gets a new number and a new decode branch
 *     length  => uint32   bytes of payload; header + length must be <= WAL_RECORD_BYTES_MAX
 *     crc     => uint32   CRC-32C over magic, version, length and payload, so a flipped length
 *                         bit is caught even when the shorter or longer read happens to fit
 *     payload => bytes[length]
 *
 * A frame is valid only if all four checks pass; the first that fails ends the clean prefix.
 * Zero bytes from there to the end are room the WAL zeroed ahead of its writes (wal.ts), not a
 * torn frame: a frame starts with a non-zero magic byte, so any bytes of one left by a crash
 * make the tail non-zero.
 */
import { crc32c } from '@node-rs/crc32';
import { assert } from '../base/assert.js';
import { WAL_RECORD_BYTES_MAX } from '../base/limits.js';

const RECORD_MAGIC = 0xa7;
const RECORD_VERSION = 1;
/** magic(1) + version(1) + length(4) + crc(4). */
export const RECORD_HEADER_BYTES = 10;
/** The largest payload a frame may carry; anything longer on disk is treated as corruption. */
const RECORD_PAYLOAD_BYTES_MAX = WAL_RECORD_BYTES_MAX - RECORD_HEADER_BYTES;

/** Why decoding stopped before the end of the buffer. */
export type TornReason =
  | 'short-header'
  | 'bad-magic'
  | 'bad-version'
  | 'length-over-max'
  | 'short-payload'
  | 'crc-mismatch';

export interface DecodedRecords {
  /** Payloads of the clean prefix, in order. They are views into the input buffer, not copies. */
  readonly payloads: Uint8Array[];
  /** Bytes of the clean prefix: the offset just past the last valid frame. */
  readonly cleanBytes: number;
  /** True when bytes other than zeroed room follow the clean prefix (a torn write or corruption). */
  readonly torn: boolean;
  /** Zero bytes from the clean prefix to the end (room the WAL zeroed ahead); 0 when torn. */
  readonly roomBytes: number;
  /** Which check failed at `cleanBytes`; null when the buffer decoded to its end. */
  readonly reason: TornReason | null;
}

/** Frames one payload. The engine bounds payloads long before here, so an oversize one is a bug. */
export function encodeRecord(payload: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payload.byteLength);
  frame.set(payload, RECORD_HEADER_BYTES);
  return frameInPlace(frame);
}

/**
 * Frames the payload that fills `frame` after its first RECORD_HEADER_BYTES, writing the header
 * into that room: a writer that leaves the room saves copying the payload into a new frame.
 */
export function frameInPlace(frame: Buffer): Buffer {
  const length = frame.length - RECORD_HEADER_BYTES;
  assert(length >= 0 && length <= RECORD_PAYLOAD_BYTES_MAX, 'WAL payload over the frame limit');
  frame[0] = RECORD_MAGIC;
  frame[1] = RECORD_VERSION;
  frame.writeUInt32BE(length, 2);
  frame.writeUInt32BE(frameCrc(frame, length), 6);
  return frame;
}

/**
 * Decodes frames from the start of `buf` until the end or the first torn/corrupt frame. Never
 * throws on bad bytes: corruption is an expected state of a file after a crash.
 */
export function decodeRecords(buf: Buffer): DecodedRecords {
  const payloads: Uint8Array[] = [];
  let offset = 0;
  // Bound: each iteration consumes at least RECORD_HEADER_BYTES, so at most buf.length / 10 frames.
  while (offset < buf.length) {
    const reason = checkFrame(buf, offset);
    if (reason !== null && allZero(buf, offset)) return { payloads, cleanBytes: offset, torn: false, roomBytes: buf.length - offset, reason: null };
    if (reason !== null) return { payloads, cleanBytes: offset, torn: true, roomBytes: 0, reason };
    const length = buf.readUInt32BE(offset + 2);
    const start = offset + RECORD_HEADER_BYTES;
    payloads.push(buf.subarray(start, start + length));
    offset = start + length;
  }
  assert(offset === buf.length, 'decode must stop exactly at the end of the buffer');
  return { payloads, cleanBytes: offset, torn: false, roomBytes: 0, reason: null };
}

/** Whether every byte of buf from `offset` on is zero. */
function allZero(buf: Buffer, offset: number): boolean {
  // Bound: the rest of the buffer, a zeroed chunk or less in a WAL segment.
  for (let at = offset; at < buf.length; at++) if (buf[at] !== 0) return false;
  return true;
}

/** Returns null if a whole valid frame starts at `offset`, else the first check that failed. */
function checkFrame(buf: Buffer, offset: number): TornReason | null {
  assert(offset < buf.length, 'checkFrame needs at least one byte');
  const available = buf.length - offset;
  if (available < RECORD_HEADER_BYTES) return 'short-header';
  if (buf[offset] !== RECORD_MAGIC) return 'bad-magic';
  if (buf[offset + 1] !== RECORD_VERSION) return 'bad-version';
  const length = buf.readUInt32BE(offset + 2);
  if (length > RECORD_PAYLOAD_BYTES_MAX) return 'length-over-max';
  if (available - RECORD_HEADER_BYTES < length) return 'short-payload';
  const frame = buf.subarray(offset, offset + RECORD_HEADER_BYTES + length);
  if (frame.readUInt32BE(6) !== frameCrc(frame, length)) return 'crc-mismatch';
  return null;
}

/** CRC-32C of a frame's magic, version, length and payload; the crc field itself is skipped. */
function frameCrc(frame: Buffer, length: number): number {
  assert(frame.length === RECORD_HEADER_BYTES + length, 'frameCrc needs exactly one frame');
  const head = crc32c(frame.subarray(0, 6));
  return crc32c(frame.subarray(RECORD_HEADER_BYTES), head) >>> 0;
}
