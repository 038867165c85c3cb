/**
 * Recovery: reads every segment of a WAL directory in order and returns the payloads of each
 * segment's clean prefix. It cuts a torn tail off the last segment (the normal result of a crash
 * mid-append) and reports corruption anywhere else; it never throws for bad bytes. It does not
 * interpret payloads or decide what the engine does with them.
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
  readonly reason: TornReason;
  /** True when the segment was truncated on disk to `cleanBytes` (only ever the last one). */
  readonly truncated: boolean;
}

export interface Replayed {
  readonly payloads: Uint8Array[];
  readonly cuts: WalCut[];
}

/**
 * Replays `fileIndexes` (ascending) from `dir`. Only the last segment can legitimately be torn:
 * rotate makes a segment durable before the next exists. So a cut there is truncated and logged as
 * info, while a cut in an earlier segment is media corruption: its clean prefix still replays, the
 * later segments still replay (they hold acknowledged records), the damaged bytes stay on disk for
 * inspection until removeUpTo deletes the segment, and a warning is logged.
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
    if (!decoded.torn) continue;
    assert(decoded.reason !== null, 'a torn segment names the failed check');
    assert(decoded.cleanBytes < bytes.length, 'a torn segment has bytes past its clean prefix');
    if (last) await truncateSegment(dir, fileIndex, decoded.cleanBytes, options.fsync);
    const cut: WalCut = {
      fileIndex,
      cleanBytes: decoded.cleanBytes,
      fileBytes: bytes.length,
      reason: decoded.reason,
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
