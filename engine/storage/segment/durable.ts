/**
 * Crash-safe file replacement: write `file.tmp`, fsync it, rename over `file`, fsync the
 * directory. A reader then sees either no file or the whole file, never a torn one. The caller
 * orders several such writes; this module owns only the single-file protocol.
 */
import fs from 'node:fs';
import path from 'node:path';
import { assert } from '../../base/assert.js';
import { writeSynced } from '../files.js';

export const TMP_SUFFIX = '.tmp';

/** Writes and fsyncs `file + '.tmp'`; returns the tmp path for `commitFile`. */
export function stageFile(file: string, bytes: Uint8Array): string {
  assert(file.length > 0, 'file is named');
  const tmp = file + TMP_SUFFIX;
  writeSynced(tmp, bytes);
  return tmp;
}

/** Renames the staged tmp over `file` and fsyncs the directory so the rename survives a crash. */
export function commitFile(file: string): void {
  fs.renameSync(file + TMP_SUFFIX, file);
  syncDirectory(path.dirname(file));
}

function syncDirectory(directory: string): void {
  const fd = fs.openSync(directory, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads a whole file into memory that starts on an 8-byte boundary (Arrow views need it). */
export function readAligned(file: string): Uint8Array {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const bytes = new Uint8Array(size);
    let read = 0;
    // Bounded by size: a read of 0 bytes means the file shrank, which we report.
    while (read < size) {
      const count = fs.readSync(fd, bytes, read, size - read, read);
      if (count === 0) throw new Error(`segment file ${file} shrank while being read`);
      read += count;
    }
    return bytes;
  } finally {
    fs.closeSync(fd);
  }
}
