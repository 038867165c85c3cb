/**
 * Uniqueness tokens of one collection (seed: duplicate prevention within 31 days of the first
 * receipt). Tokens of flushed rows are appended to `tokens.log` (one JSON line `[ms, token]`, fsynced
 * before the manifest names the rows flushed); tokens of unflushed rows are rebuilt from WAL replay.
 * A torn last line after a crash is skipped: its rows are still in the WAL.
 */
import fs from 'node:fs';
import { UNIQUENESS_WINDOW_MS } from '../base/limits.js';

export class TokenIndex {
  private readonly seen = new Map<string, number>();
  private pending: [number, string][] = [];

  constructor(private readonly file: string, nowMs: number) {
    if (!fs.existsSync(file)) return;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (line.length === 0) continue;
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        continue; // a torn line from a crash mid-append; its rows replay from the WAL
      }
      if (!Array.isArray(entry) || typeof entry[0] !== 'number' || typeof entry[1] !== 'string') continue;
      if (nowMs - entry[0] < UNIQUENESS_WINDOW_MS) this.remember(entry[1], entry[0]);
    }
  }

  /** True when `token` was received within the window before nowMs. */
  has(token: string, nowMs: number): boolean {
    const at = this.seen.get(token);
    return at !== undefined && nowMs - at < UNIQUENESS_WINDOW_MS;
  }

  /** Records a token of an accepted event; `persist` queues it for the next flush. */
  add(token: string, receivedMs: number, persist: boolean): void {
    if (!this.has(token, receivedMs)) this.seen.set(token, receivedMs);
    if (persist) this.pending.push([receivedMs, token]);
  }

  /** Drops a token added at `receivedMs` whose event was not stored after all (a failed WAL write). */
  forget(token: string, receivedMs: number): void {
    if (this.seen.get(token) === receivedMs) this.seen.delete(token);
  }

  private remember(token: string, receivedMs: number): void {
    const at = this.seen.get(token);
    if (at === undefined || receivedMs < at) this.seen.set(token, receivedMs);
  }

  /** Appends queued tokens to the file and fsyncs it; called by the flush before the manifest. */
  persist(): void {
    if (this.pending.length === 0) return;
    const text = this.pending.map((entry) => JSON.stringify(entry)).join('\n') + '\n';
    const fd = fs.openSync(this.file, 'a');
    try {
      fs.writeSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    this.pending = [];
  }
}
