/**
 * Reads byte ranges of segment files on libuv's thread pool while the thread that asked goes on
 * decoding, so that the synchronous reads a scan makes next (ipc-read.ts) find the pages in the
 * page cache. A cold scan otherwise waits for the disk at each column of each segment, one read
 * at a time, with its CPU idle: at 100M events with the page cache dropped, a query worker's first
 * run of a filtered group_by spent ~0.8 of its ~2.3 s in synchronous reads, half of them of
 * footers and message headers, half of column buffers.
 *
 * A file is read in rounds (ReadPlan): what to read next is known only once the bytes read before
 * are there (a segment: its footer, then the message headers it points at, then the columns'
 * buffers those place; reader.ts segmentReadPlan). All reads of a round are issued at once, into
 * one scratch buffer whose bytes are thrown away, so read-ahead holds no memory per file. A round
 * starts from the callbacks of the one before, so the asking thread's event loop must turn for a
 * file to go on (query/exec/worker.ts turns it between segments while `pending`). Best effort: a
 * file gone or unreadable is dropped (the scan's own read reports the error).
 */
import fs from 'node:fs';
import { READ_AHEAD_FILES_MAX, READ_AHEAD_READ_BYTES } from '../../base/limits.js';

/**
 * What to read of the open file `fd` in round `round` (0, 1, ...), called once the reads of the
 * round before have ended: [position, length] pairs, or null when the file is done.
 */
export type ReadPlan = (round: number, fd: number) => readonly number[] | null;

export class ReadAhead {
  private readonly queue: { readonly file: string; readonly plan: ReadPlan }[] = [];
  private readonly scratch = Buffer.allocUnsafe(READ_AHEAD_READ_BYTES);
  private active = 0;
  /** Files read to the end of their plan, or dropped. */
  filesRead = 0;
  bytesRead = 0;

  /** Files asked for and not yet done. */
  get pending(): number {
    return this.active + this.queue.length;
  }

  /** Reads what `plan` names of `file`, round by round, with the bytes thrown away. */
  request(file: string, plan: ReadPlan): void {
    this.queue.push({ file, plan });
    this.pump();
  }

  private pump(): void {
    while (this.active < READ_AHEAD_FILES_MAX && this.queue.length > 0) {
      const { file, plan } = this.queue.shift()!;
      this.active++;
      let fd: number;
      try {
        fd = fs.openSync(file, 'r');
      } catch {
        this.done(null);
        continue;
      }
      this.round(fd, plan, 0);
    }
  }

  private done(fd: number | null): void {
    if (fd !== null) fs.close(fd, () => undefined);
    this.active--;
    this.filesRead++;
    this.pump();
  }

  /** Issues round `round`'s reads of `fd` at once, in pieces of at most the scratch buffer. */
  private round(fd: number, plan: ReadPlan, round: number): void {
    let ranges: readonly number[] | null;
    try {
      ranges = plan(round, fd);
    } catch {
      ranges = null;
    }
    if (ranges === null) return this.done(fd);
    let outstanding = 0;
    let failed = false;
    const ended = (error: NodeJS.ErrnoException | null, count: number) => {
      if (error !== null) failed = true;
      else this.bytesRead += count;
      if (--outstanding > 0) return;
      if (failed) this.done(fd);
      else this.round(fd, plan, round + 1);
    };
    for (let r = 0; r < ranges.length; r += 2) {
      for (let at = ranges[r], end = ranges[r] + ranges[r + 1]; at < end; at += READ_AHEAD_READ_BYTES) {
        outstanding++;
        fs.read(fd, this.scratch, 0, Math.min(READ_AHEAD_READ_BYTES, end - at), at, ended);
      }
    }
    if (outstanding === 0) this.round(fd, plan, round + 1);
  }
}
