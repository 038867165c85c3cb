/**
 * Reads byte ranges of segment files on libuv's thread pool while the thread that asked goes on
 * decoding, so that the synchronous reads a scan makes next (ipc-read.ts) find the pages in the
 * page cache. A cold scan otherwise waits for the disk at each column of each segment, one read
 * at a time, with its CPU idle: at 100M events a query worker's first run spent about a quarter
 * of its time in synchronous reads. The bytes read are thrown away: every read of this thread's
 * read-ahead goes into one scratch buffer, so it holds no memory per file. Best effort: a file
 * gone or unreadable is skipped (the scan's own read reports the error).
 */
import fs from 'node:fs';
import { READ_AHEAD_FILES_MAX, READ_AHEAD_READ_BYTES } from '../../base/limits.js';

interface Pending {
  readonly file: string;
  /** [position, length] pairs. */
  readonly ranges: readonly number[];
}

export class ReadAhead {
  private readonly queue: Pending[] = [];
  private readonly scratch = Buffer.allocUnsafe(READ_AHEAD_READ_BYTES);
  private active = 0;
  /** Files whose reads have ended (or failed): how much work was done. */
  filesRead = 0;
  bytesRead = 0;

  /** Files asked for and not yet read to their end. */
  get pending(): number {
    return this.active + this.queue.length;
  }

  /** Reads `ranges` ([position, length] pairs) of `file` soon, in order, with the bytes thrown away. */
  request(file: string, ranges: readonly number[]): void {
    if (ranges.length === 0) return;
    this.queue.push({ file, ranges });
    this.pump();
  }

  private pump(): void {
    while (this.active < READ_AHEAD_FILES_MAX && this.queue.length > 0) {
      const next = this.queue.shift()!;
      this.active++;
      this.readFile(next);
    }
  }

  private readFile({ file, ranges }: Pending): void {
    const done = () => {
      this.active--;
      this.filesRead++;
      this.pump();
    };
    fs.open(file, 'r', (openError, fd) => {
      if (openError !== null) return done();
      let range = 0;
      let at = ranges[0];
      const step = (error: NodeJS.ErrnoException | null, count: number): void => {
        if (error !== null) return fs.close(fd, done);
        this.bytesRead += count;
        at += count;
        const end = ranges[range] + ranges[range + 1];
        if (at >= end || count === 0) {
          range += 2;
          if (range >= ranges.length) return fs.close(fd, done);
          at = ranges[range];
        }
        const length = Math.min(READ_AHEAD_READ_BYTES, ranges[range] + ranges[range + 1] - at);
        fs.read(fd, this.scratch, 0, length, at, step);
      };
      fs.read(fd, this.scratch, 0, Math.min(READ_AHEAD_READ_BYTES, ranges[1]), at, step);
    });
  }
}
