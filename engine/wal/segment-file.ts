/**
 * Names, lists, creates and truncates the numbered segment files of one WAL directory
 * (`000001.wal`, `000002.wal`, ...). It owns the file system calls and their durability (directory
 * fsyncs), not frames or replay order.
 */
import { constants } from 'node:fs';
import { mkdir, open, readdir, truncate, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { assert } from '../base/assert.js';
import { WAL_ZERO_CHUNK_BYTES } from '../base/limits.js';

/** Digits of a segment name; wider indexes still parse, they just stop sorting as text. */
const SEGMENT_NAME_DIGITS = 6;
const SEGMENT_NAME = /^(\d+)\.wal$/;

export function segmentPath(dir: string, fileIndex: number): string {
  assert(Number.isSafeInteger(fileIndex), 'segment index must be an integer');
  assert(fileIndex >= 1, 'segment indexes start at 1');
  return join(dir, `${String(fileIndex).padStart(SEGMENT_NAME_DIGITS, '0')}.wal`);
}

/** Indexes of the segment files in `dir` (created if missing), ascending; others are ignored. */
export async function listSegments(dir: string): Promise<number[]> {
  await mkdir(dir, { recursive: true });
  const indexes: number[] = [];
  // Bound: one entry per file; rotate + removeUpTo keep the directory to a handful of segments.
  for (const name of await readdir(dir)) {
    const match = SEGMENT_NAME.exec(name);
    if (match !== null && Number(match[1]) >= 1) indexes.push(Number(match[1]));
  }
  return indexes.sort((a, b) => a - b);
}

/**
 * Creates a new, empty segment. O_EXCL refuses to clobber an existing file: a name collision means
 * our index bookkeeping is wrong, and overwriting would destroy acknowledged records. With `fsync`
 * the file is opened O_DSYNC: each write returns only once its bytes (and the file size that
 * reaches them) are on disk, as a write followed by fdatasync would, in one system call and one
 * trip through the thread pool rather than two.
 */
export async function createSegment(
  dir: string,
  fileIndex: number,
  fsync: boolean,
): Promise<FileHandle> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (fsync ? constants.O_DSYNC : 0);
  const handle = await open(segmentPath(dir, fileIndex), flags);
  // A new file's directory entry is not made durable by fdatasync on the file itself.
  if (fsync) await syncDir(dir);
  return handle;
}

/** The zeros zeroFill writes, allocated on first use. */
let zeroChunk: Buffer | null = null;

/**
 * Writes `length` (at most WAL_ZERO_CHUNK_BYTES) zero bytes at `position`: room that later writes
 * of the segment overwrite without growing the file (wal.ts). On an O_DSYNC segment it is durable
 * when it returns, size included.
 */
export async function zeroFill(handle: FileHandle, position: number, length: number): Promise<void> {
  assert(length > 0 && length <= WAL_ZERO_CHUNK_BYTES, 'one zeroed chunk at a time');
  zeroChunk ??= Buffer.alloc(WAL_ZERO_CHUNK_BYTES);
  let written = 0;
  // Bound: each pass writes at least one byte or throws.
  while (written < length) {
    const { bytesWritten } = await handle.write(zeroChunk, 0, length - written, position + written);
    if (bytesWritten === 0) throw new Error('zeroing WAL room made no progress');
    written += bytesWritten;
  }
}

/** Cuts a segment to its clean prefix so the next open sees no torn bytes. */
export async function truncateSegment(
  dir: string,
  fileIndex: number,
  cleanBytes: number,
  fsync: boolean,
): Promise<void> {
  assert(cleanBytes >= 0, 'clean prefix cannot be negative');
  const path = segmentPath(dir, fileIndex);
  if (!fsync) return truncate(path, cleanBytes);
  const handle = await open(path, 'r+');
  try {
    await handle.truncate(cleanBytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function removeSegments(
  dir: string,
  fileIndexes: readonly number[],
  fsync: boolean,
): Promise<void> {
  // Bound: the closed segments the caller holds, a handful between flushes.
  for (const fileIndex of fileIndexes) await unlink(segmentPath(dir, fileIndex));
  // Without it a crash could bring a removed segment back and replay it twice.
  if (fsync && fileIndexes.length > 0) await syncDir(dir);
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
