/**
 * Recovery: reads every segment of a WAL directory in order and returns the payloads of each
 * segment's clean prefix. It cuts a torn tail, or the room zeroed ahead of the writes, off the last
 * segment (the normal results of a crash mid-append) and reports corruption anywhere else; it never
 * throws for bad bytes. It does not interpret payloads or decide what the engine does with them.
 */
import { readFile } from 'node:fs/promises';
import { assert } from '../base/assert.js';
import { decodeRecords, type TornReason } from './record.js';
import { segmentPath, truncateSegment } from './segment-file.js';

export type WalLogLevel = 'info' | 'warn';
/** Injected logger; the WAL reports recoveries here instead of printing or throwing. */
export type WalLog = (level: WalLogLevel, message: string, fields: Record<string, unknown>) => void;

/** One segment whose bytes did not decode to the end. */
export interface WalCut {
  readonly fileIndex: number;
  /** Bytes of the segment that replayed. */
  readonly cleanBytes: number;
  /** Bytes of the segment as found. */
  readonly fileBytes: number;
  /**
   * The failed check; 'zeroed-room' for a closed segment that ends in zeros. Rotation trims the
   * room off (wal.ts), so there the zeros are where acknowledged frames were: a write the device
   * lost (or a segment closed by Tally before rotation trimmed, whose prefix is then whole).
   */
  readonly reason: TornReason | 'zeroed-room';
  /** True when the segment was truncated on disk to `cleanBytes` (only ever the last one). */
  readonly truncated: boolean;
}

export interface Replayed {
  readonly payloads: Uint8Array[];
  readonly cuts: WalCut[];
}

/**
 * Replays `fileIndexes` (ascending) from `dir`. Only the last segment can legitimately be torn or
 * end in zeroed room: rotate makes a segment durable, its room trimmed, before the next exists. So
 * a cut there is truncated and logged as info (its zeroed room is truncated silently: the segment
 * is closed from now on), while a cut in an earlier segment is media corruption: its clean prefix
 * still replays, the later segments still replay (they hold acknowledged records), the damaged
 * bytes stay on disk for inspection until removeUpTo deletes the segment, and a warning is logged.
 */
export async function replaySegments(
  dir: string,
  fileIndexes: readonly number[],
  options: { fsync: boolean; log: WalLog },
): Promise<Replayed> {
  const payloads: Uint8Array[] = [];
  const cuts: WalCut[] = [];
  // Bound: the segment files found in the directory.
  for (let i = 0; i < fileIndexes.length; i++) {
    const fileIndex = fileIndexes[i]!;
    const last = i === fileIndexes.length - 1;
    const bytes = await readFile(segmentPath(dir, fileIndex));
    const decoded = decodeRecords(bytes);
    // Bound: the frames of one segment; push(...spread) could overflow the stack on huge segments.
    for (const payload of decoded.payloads) payloads.push(payload);
    if (!decoded.torn && decoded.roomBytes === 0) continue;
    assert(decoded.cleanBytes < bytes.length, 'a cut segment has bytes past its clean prefix');
    if (last) await truncateSegment(dir, fileIndex, decoded.cleanBytes, options.fsync);
    if (!decoded.torn && last) continue;
    const cut: WalCut = {
      fileIndex,
      cleanBytes: decoded.cleanBytes,
      fileBytes: bytes.length,
      reason: decoded.reason ?? 'zeroed-room',
      truncated: last,
    };
    cuts.push(cut);
    if (last) options.log('info', 'WAL: truncated torn tail of last segment', { ...cut });
    else options.log('warn', 'WAL: corrupt record in closed segment; replaying its clean prefix', {
      ...cut,
    });
  }
  return { payloads, cuts };
}
