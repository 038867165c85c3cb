/**
 * Durable file primitives: write-to-temp, fsync, rename, fsync the directory. A reader never sees a
 * half-written file under the final name; a crash leaves at most a `.tmp` that open() removes.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * Replaces `file` with `data` crash-safely. On a failure (a full disk) the old file stays as it
 * was and the partial `.tmp` is removed, so a failed write gives its space back at once.
 */
export function writeFileDurable(file: string, data: string | Uint8Array): void {
  const tmp = `${file}.tmp`;
  writeSynced(tmp, typeof data === 'string' ? Buffer.from(data) : data);
  try {
    fs.renameSync(tmp, file);
  } catch (error) {
    fs.rmSync(tmp, { force: true });
    throw error;
  }
  fsyncDir(path.dirname(file));
}

/** Writes `file` whole and fsyncs it; on a failure the partial file is removed (a full disk gets its space back). */
export function writeSynced(file: string, bytes: Uint8Array): void {
  try {
    const fd = fs.openSync(file, 'w');
    try {
      writeAll(fd, bytes);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch (error) {
    fs.rmSync(file, { force: true });
    throw error;
  }
}

/** Writes every byte; a regular file may take fewer than asked near a full disk. */
function writeAll(fd: number, bytes: Uint8Array): void {
  let written = 0;
  // Bounded by bytes.length: each write makes progress or throws.
  while (written < bytes.length) written += fs.writeSync(fd, bytes, written, bytes.length - written);
}

function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export function readJsonIfExists<T>(file: string): T | undefined {
  if (!fs.existsSync(file)) return undefined;
  return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
}
