/**
 * The write-ahead log: durable, ordered appends of opaque payloads to numbered segment files, with
 * group commit (appends that arrive while a group's synchronized write is in flight share the next
 * one: one write and, the segment being O_DSYNC, one fdatasync in the same system call; up to
 * WAL_GROUPS_IN_FLIGHT_MAX groups are in flight, acknowledged in order).
 * It owns ordering and durability; frames live in record.ts, files in segment-file.ts and recovery
 * in replay.ts. It never looks inside a payload.
 *
 * Failure model: after a failed write or fdatasync (a full disk, an I/O error) the state of the
 * bytes past the last durable group is unknown (a retry of fsync can falsely succeed), so the WAL
 * becomes failed: that group and every append or rotate queued behind it reject with the same
 * 503 ApiError. Recovery needs no restart: the first append or rotate at least WAL_RECOVER_AFTER_MS
 * after the failure truncates the segment back to its last durable byte and fdatasyncs it; when
 * both succeed (space came back), appends go on from there, so nothing of a rejected group can
 * replay later and every acknowledged record stays. While that fails, appends reject at once.
 *
 * Zeroed room: with fsync, after starting a small group the WAL zeroes the next
 * WAL_ZERO_CHUNK_BYTES past the reserved bytes (segment-file.ts zeroFill) when little zeroed room
 * is left, so that later groups overwrite bytes the file already holds and their synchronized
 * writes skip the journal commit a growing file needs. Zeroing never overlaps a group's bytes: a
 * group that would reach into a chunk being zeroed waits for it. A failed zeroing only costs speed
 * (it is tried again WAL_RECOVER_AFTER_MS later). Rotate and close cut the room off, so only the
 * last segment can end in zeros: replay reads them there as a clean end (record.ts) and as lost
 * frames in any other segment (replay.ts).
 */
import { rm, type FileHandle } from 'node:fs/promises';
import { assert } from '../base/assert.js';
import { ApiError } from '../base/errors.js';
import {
  WAL_GROUP_BYTES_MAX, WAL_GROUPS_IN_FLIGHT_MAX, WAL_RECOVER_AFTER_MS, WAL_ZERO_AHEAD_BYTES, WAL_ZERO_CHUNK_BYTES,
  WAL_ZERO_GROUP_BYTES_MAX,
} from '../base/limits.js';
import { encodeRecord } from './record.js';
import { replaySegments, type WalCut, type WalLog } from './replay.js';
import { createSegment, listSegments, removeSegments, segmentPath, zeroFill } from './segment-file.js';

export type { WalCut, WalLog } from './replay.js';

/** The 503 a failed write answers with: what happened, that nothing was stored, what to do. */
function walFailure(what: string, cause: unknown): ApiError {
  const code = (cause as { code?: unknown } | null)?.code;
  const message = code === 'ENOSPC' || code === 'EDQUOT'
    ? `The disk is full: Tally could not ${what}. The events were not stored; writes resume by themselves once space is freed.`
    : `Tally could not ${what} (${typeof code === 'string' ? code : String((cause as Error)?.message ?? cause)}). The events were not stored; retry later.`;
  return new ApiError('ServiceUnavailableError', message, { cause });
}

export interface WalOptions {
  /** fdatasync each group and fsync the directory on create/remove; false only for tests/dev. */
  readonly fsync: boolean;
  /** Receives recovery reports; defaults to stderr. */
  readonly log?: WalLog;
  /** Test seam: runs before each fdatasync (a group's synchronized write, or a recovery's sync); a throw simulates a failed sync. */
  readonly beforeSync?: () => void | Promise<void>;
  /** Test seam: runs after each group's synchronized write; a throw simulates a write whose bytes reached the file but whose sync failed. */
  readonly afterWrite?: () => void | Promise<void>;
  /** Test seam: runs before each chunk of room is zeroed (a delay makes later groups reach into it). */
  readonly beforeZero?: () => void | Promise<void>;
}

export interface WalStats {
  /** Appends acknowledged (durable). */
  appends: number;
  /** Failed writes, syncs or rotates, and recoveries from them. */
  failures: number;
  recoveries: number;
  /** Group commits written, one write each. */
  groups: number;
  /** fdatasyncs of segment files: a group's synchronized write (O_DSYNC) or a recovery's fdatasync. */
  syncs: number;
  /** Frame bytes written. */
  bytes: number;
  /** Bytes of room zeroed ahead of the writes. */
  zeroedBytes: number;
}

export interface WalOpened {
  readonly wal: Wal;
  /** Payloads of every segment's clean prefix, in append order. */
  readonly replay: Uint8Array[];
  /** The segments that were replayed, ascending; all are closed (appends go to a new segment). */
  readonly fileIndexes: number[];
  /** Segments that did not decode to their end; empty after a clean shutdown. */
  readonly cuts: WalCut[];
}

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}
type Entry =
  | ({ kind: 'append'; frame: Buffer } & Waiter<void>)
  | ({ kind: 'rotate' } & Waiter<number>)
  | ({ kind: 'close' } & Waiter<void>);

export class Wal {
  readonly stats: WalStats = { appends: 0, groups: 0, syncs: 0, bytes: 0, failures: 0, recoveries: 0, zeroedBytes: 0 };
  /** Called with the seconds of each fdatasync, a group's synchronized write included (the metrics' histogram). */
  onSync: ((seconds: number) => void) | null = null;
  readonly #dir: string;
  readonly #options: WalOptions;
  /** Entries in call order; only #drain takes from the front. */
  readonly #queue: Entry[] = [];
  /** Segments that are fully durable and no longer written, ascending. */
  #closedIndexes: number[];
  #handle: FileHandle;
  #currentIndex: number;
  /** Bytes of the current segment that have been written; the next write's position. */
  #currentBytes = 0;
  /** Where the next group's bytes go: past those of the groups in flight. */
  #reservedBytes = 0;
  /** Where the current segment's zeroed room ends (segment-file.ts zeroFill). */
  #zeroedBytes = 0;
  /** Where the last zeroing started would end: the file may hold bytes up to here (a failed zeroing some of them). */
  #roomEnd = 0;
  /** The chunk being zeroed, from `from` on; `done` never rejects. */
  #zeroing: { readonly from: number; readonly done: Promise<void> } | null = null;
  #zeroFailedAt = 0;
  /** The commits in flight, oldest first; each settles (never rejects) after the one before it. */
  readonly #inFlight: Promise<void>[] = [];
  #draining = false;
  /** Wakes the drain loop waiting with room for a group (an append arrived); null when it waits for none. */
  #wake: (() => void) | null = null;
  #closing = false;
  #failure: ApiError | null = null;
  #failedAt = 0;

  private constructor(dir: string, options: WalOptions, opened: Opened) {
    this.#dir = dir;
    this.#options = options;
    this.#closedIndexes = opened.closedIndexes;
    this.#handle = opened.handle;
    this.#currentIndex = opened.currentIndex;
  }

  /** Replays `dir` (creating it if missing) and opens a fresh segment after the last one found. */
  static async open(dir: string, options: WalOptions): Promise<WalOpened> {
    const log = options.log ?? logToStderr;
    const fileIndexes = await listSegments(dir);
    // Replay (and its truncation) finishes before the new segment exists: were it the other way,
    // a crash in between would leave the torn segment as a non-last one and it would never be cut.
    const replayed = await replaySegments(dir, fileIndexes, { fsync: options.fsync, log });
    // A fresh segment keeps every replayed segment closed, so removeUpTo can drop them all once
    // the engine has flushed the replay, and no append ever lands behind a truncated tail.
    const currentIndex = (fileIndexes.at(-1) ?? 0) + 1;
    const handle = await createSegment(dir, currentIndex, options.fsync);
    const wal = new Wal(dir, options, { closedIndexes: [...fileIndexes], handle, currentIndex });
    return { wal, replay: replayed.payloads, fileIndexes, cuts: replayed.cuts };
  }

  /** The segment that appends currently go to. */
  get currentIndex(): number {
    return this.#currentIndex;
  }

  /** Resolves once the payload is written and fdatasync'ed, after every earlier append. */
  append(payload: Uint8Array): Promise<void> {
    return this.appendFrame(encodeRecord(payload));
  }

  /**
   * As append, for a payload written after RECORD_HEADER_BYTES of room (record.ts frameInPlace);
   * the WAL holds `frame` until the promise settles, then the caller may reuse it.
   */
  appendFrame(frame: Buffer): Promise<void> {
    assert(!this.#closing, 'append after close');
    return this.#enqueue<void>((waiter) => ({ kind: 'append', frame, ...waiter }));
  }

  /**
   * Starts a new segment for later appends and resolves with the index of the one it closed, once
   * every append queued before the rotate is durable.
   */
  rotate(): Promise<number> {
    assert(!this.#closing, 'rotate after close');
    return this.#enqueue<number>((waiter) => ({ kind: 'rotate', ...waiter }));
  }

  /** Deletes closed segments with index <= fileIndex and resolves with the indexes removed. */
  async removeUpTo(fileIndex: number): Promise<number[]> {
    assert(fileIndex < this.#currentIndex, 'removeUpTo must not reach the current segment');
    const removed = this.#closedIndexes.filter((index) => index <= fileIndex);
    // Taken from the list before any await, so overlapping calls never unlink a file twice.
    this.#closedIndexes = this.#closedIndexes.filter((index) => index > fileIndex);
    await removeSegments(this.#dir, removed, this.#options.fsync);
    return removed;
  }

  /** Waits for queued appends, then closes the current segment. */
  close(): Promise<void> {
    assert(!this.#closing, 'close called twice');
    this.#closing = true;
    return this.#enqueue<void>((waiter) => ({ kind: 'close', ...waiter }));
  }

  #enqueue<T>(make: (waiter: Waiter<T>) => Entry): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(make({ resolve, reject }));
      if (!this.#draining) void this.#drain();
      else this.#wake?.();
    });
  }

  /**
   * The single consumer of the queue: starts group commits, up to WAL_GROUPS_IN_FLIGHT_MAX at once
   * (the next group's write need not wait for the previous one's sync: two synchronized writes
   * overlap on the device), and runs control entries with no group in flight.
   */
  async #drain(): Promise<void> {
    assert(!this.#draining, 'only one drain loop may run');
    this.#draining = true;
    // Bound: each pass starts a group, runs a control entry or waits for the oldest group to
    // settle; appends made meanwhile extend the loop.
    while (this.#queue.length > 0 || this.#inFlight.length > 0) {
      const head = this.#queue[0];
      if (head === undefined || this.#mustWait(head)) {
        // Until the oldest group settles or, with room for a group, an append arrives.
        await new Promise<void>((resolve) => {
          this.#wake = head === undefined ? resolve : null;
          void this.#inFlight[0]!.then(resolve);
        });
        this.#wake = null;
        continue;
      }
      if (head.kind === 'append') {
        const count = this.#groupCount();
        const zeroing = this.#zeroing;
        if (zeroing !== null && this.#groupStart() + this.#bytesOf(count) > zeroing.from) {
          await zeroing.done;
          continue;
        }
        // One splice, not a shift per entry: a deep queue would make shifting quadratic.
        this.#start(this.#queue.splice(0, count) as Extract<Entry, { kind: 'append' }>[]);
      } else {
        this.#queue.shift();
        await this.#zeroing?.done;
        await this.#control(head);
      }
    }
    this.#draining = false;
  }

  /** Whether `head` waits for a group in flight: a control entry, a recovery, or no room for another group. */
  #mustWait(head: Entry): boolean {
    if (this.#inFlight.length === 0) return false;
    return head.kind !== 'append' || this.#failure !== null || this.#inFlight.length >= WAL_GROUPS_IN_FLIGHT_MAX;
  }

  /** Where the next group's bytes go: after those in flight, or (none in flight) after the durable ones. */
  #groupStart(): number {
    // After a rejected group, its room is free again.
    return this.#inFlight.length === 0 ? this.#currentBytes : this.#reservedBytes;
  }

  /** Starts one group's commit after the bytes of those in flight; it settles after them, in order. */
  #start(group: Extract<Entry, { kind: 'append' }>[]): void {
    const previous = this.#inFlight.at(-1) ?? null;
    this.#reservedBytes = this.#groupStart();
    let length = 0;
    for (const entry of group) length += entry.frame.length;
    const position = this.#reservedBytes;
    this.#reservedBytes += length;
    const done = this.#commit(group, position, length, previous).then(() => {
      this.#inFlight.shift(); // this group: the ones before it settled first
    });
    this.#inFlight.push(done);
    if (length <= WAL_ZERO_GROUP_BYTES_MAX) this.#zeroAhead();
  }

  /** Zeroes the next chunk past the reserved bytes when little zeroed room is left (see the file comment). */
  #zeroAhead(): void {
    if (!this.#options.fsync || this.#zeroing !== null || this.#failure !== null) return;
    if (this.#reservedBytes + WAL_ZERO_AHEAD_BYTES <= this.#zeroedBytes) return;
    if (Date.now() - this.#zeroFailedAt < WAL_RECOVER_AFTER_MS) return;
    const from = Math.max(this.#zeroedBytes, this.#reservedBytes);
    const handle = this.#handle;
    this.#roomEnd = from + WAL_ZERO_CHUNK_BYTES;
    const zeroed = async () => {
      await this.#options.beforeZero?.();
      await zeroFill(handle, from, WAL_ZERO_CHUNK_BYTES);
    };
    const done = zeroed().then(() => {
      this.#zeroedBytes = from + WAL_ZERO_CHUNK_BYTES;
      this.stats.zeroedBytes += WAL_ZERO_CHUNK_BYTES;
    }, () => {
      this.#zeroFailedAt = Date.now();
    }).finally(() => {
      this.#zeroing = null;
    });
    this.#zeroing = { from, done };
  }

  /** Frame bytes of the first `count` queued appends. */
  #bytesOf(count: number): number {
    let bytes = 0;
    for (let k = 0; k < count; k++) bytes += (this.#queue[k] as Extract<Entry, { kind: 'append' }>).frame.length;
    return bytes;
  }

  /** How many leading appends the next group takes: up to WAL_GROUP_BYTES_MAX (but always at least one). */
  #groupCount(): number {
    let count = 0;
    let bytes = 0;
    // Bound: WAL_GROUP_BYTES_MAX bytes, or a single frame if that alone is larger.
    for (const entry of this.#queue) {
      if (entry.kind !== 'append') break;
      if (count > 0 && bytes + entry.frame.length > WAL_GROUP_BYTES_MAX) break;
      count += 1;
      bytes += entry.frame.length;
    }
    assert(count > 0, 'a group holds at least one append');
    return count;
  }

  /**
   * One write and one fdatasync for the whole group, at `position`; all of it resolves or all of it
   * rejects, once `previous` (the group before, in flight) has settled. A group is acknowledged only
   * if every group before it was: after a failure the groups behind it reject too, even one whose
   * own write succeeded, since recovery cuts the segment back to the last acknowledged byte.
   */
  async #commit(group: Extract<Entry, { kind: 'append' }>[], position: number, length: number, previous: Promise<void> | null): Promise<void> {
    if (previous === null && this.#failure !== null && !(await this.#recover())) return rejectAll(group, this.#failure);
    const frames = group.map((e) => e.frame);
    assert(group.length === 1 || length <= WAL_GROUP_BYTES_MAX, 'group over its bound');
    let cause: unknown = null;
    try {
      await this.#syncedWrite(frames, length, position);
    } catch (error) {
      cause = error ?? new Error('WAL write failed');
    }
    if (previous !== null) await previous;
    if (cause !== null && this.#failure === null) this.#fail(walFailure('write its log', cause));
    if (this.#failure !== null) {
      rejectAll(group, this.#failure);
      // The last group in flight (none can start behind it while the WAL is failed): cut the
      // refused bytes off now, so that a crash before recovery does not replay them. Recovery and
      // close cut again and sync.
      if (this.#inFlight.length === 1) await this.#handle.truncate(this.#currentBytes).catch(() => {});
      return;
    }
    assert(position === this.#currentBytes, 'groups are acknowledged in the order of their bytes');
    this.#currentBytes = position + length;
    this.stats.groups += 1;
    this.stats.appends += group.length;
    this.stats.bytes += length;
    for (const entry of group) entry.resolve();
  }

  /**
   * The group's one write, durable when it returns: with fsync the segment is O_DSYNC
   * (segment-file.ts createSegment), so the write is the group's fdatasync as well, and the
   * metrics time it as one.
   */
  async #syncedWrite(frames: readonly Buffer[], length: number, position: number): Promise<void> {
    if (!this.#options.fsync) return writeFully(this.#handle, frames, length, position);
    const started = process.hrtime.bigint();
    await this.#options.beforeSync?.();
    await writeFully(this.#handle, frames, length, position);
    await this.#options.afterWrite?.();
    this.stats.syncs += 1;
    this.onSync?.(Number(process.hrtime.bigint() - started) / 1e9);
  }

  /** An fdatasync of its own, for what is not a group's write (a recovery's truncation). */
  async #sync(): Promise<void> {
    const started = process.hrtime.bigint();
    await this.#options.beforeSync?.();
    await this.#handle.datasync();
    this.stats.syncs += 1;
    this.onSync?.(Number(process.hrtime.bigint() - started) / 1e9);
  }

  #fail(error: ApiError): void {
    this.#failure = error;
    this.#failedAt = Date.now();
    this.stats.failures += 1;
  }

  /** The failure a write would meet now, or null: lets a caller refuse before doing any work. */
  get failure(): ApiError | null {
    return this.#failure !== null && Date.now() - this.#failedAt < WAL_RECOVER_AFTER_MS ? this.#failure : null;
  }

  /**
   * Cuts the current segment back to its last durable byte and syncs it; true when the WAL is
   * healthy again. Tried at most once per WAL_RECOVER_AFTER_MS, so a full disk costs a syscall or two
   * per interval rather than per append.
   */
  async #recover(): Promise<boolean> {
    if (Date.now() - this.#failedAt < WAL_RECOVER_AFTER_MS) return false;
    await this.#zeroing?.done;
    this.#zeroedBytes = this.#currentBytes; // what lies past it is cut off
    try {
      await this.#handle.truncate(this.#currentBytes);
      if (this.#options.fsync) await this.#sync();
      this.#roomEnd = this.#currentBytes;
    } catch (cause) {
      this.#fail(walFailure('write its log', cause));
      return false;
    }
    this.#failure = null;
    this.stats.recoveries += 1;
    return true;
  }

  async #control(entry: Exclude<Entry, { kind: 'append' }>): Promise<void> {
    // close still releases the handle of a failed WAL, so the engine can reopen the directory. A
    // failed trim leaves the room to the next open, which cuts it off the last segment.
    if (entry.kind === 'close') {
      return this.#trimRoom().catch(() => {}).then(() => this.#handle.close()).then(entry.resolve, entry.reject);
    }
    if (this.#failure !== null && !(await this.#recover())) return entry.reject(this.#failure);
    try {
      entry.resolve(await this.#switchSegment());
    } catch (cause) {
      this.#fail(walFailure('start a new log file', cause));
      entry.reject(this.#failure);
    }
  }

  /**
   * Cuts the current segment back to its last acknowledged byte and syncs it: the zeroed room, so
   * that a closed segment ends at its last frame and zeros found in one on replay are reported
   * (replay.ts), and after a failure the bytes of refused groups, which may have reached the file
   * (a failed O_DSYNC write, or a group written behind a failed one) and would otherwise replay as
   * stored events that a client was told were not. Every group is settled here: it runs as a
   * control entry.
   */
  async #trimRoom(): Promise<void> {
    if (this.#roomEnd <= this.#currentBytes && this.#failure === null) return;
    await this.#handle.truncate(this.#currentBytes);
    if (this.#options.fsync) await this.#sync();
    this.#roomEnd = this.#currentBytes;
    this.#zeroedBytes = this.#currentBytes;
  }

  /** Every earlier group is already durable here, because #drain runs entries strictly in order. */
  async #switchSegment(): Promise<number> {
    const closedIndex = this.#currentIndex;
    assert((this.#closedIndexes.at(-1) ?? 0) < closedIndex, 'closed segments stay ascending');
    // Before the next segment exists: a crash in between leaves the room on the last segment.
    await this.#trimRoom();
    let handle: FileHandle;
    try {
      handle = await createSegment(this.#dir, closedIndex + 1, this.#options.fsync);
    } catch (error) {
      // Created but not made durable (a full disk can fail the directory sync): gone, so a later
      // rotate can create it again.
      await rm(segmentPath(this.#dir, closedIndex + 1), { force: true }).catch(() => {});
      throw error;
    }
    await this.#handle.close();
    this.#handle = handle;
    this.#currentIndex = closedIndex + 1;
    this.#currentBytes = 0;
    this.#reservedBytes = 0;
    this.#zeroedBytes = 0;
    this.#roomEnd = 0;
    this.#closedIndexes.push(closedIndex);
    return closedIndex;
  }
}

interface Opened {
  closedIndexes: number[];
  handle: FileHandle;
  currentIndex: number;
}

function rejectAll(group: Waiter<void>[], error: unknown): void {
  for (const entry of group) entry.reject(error);
}

/**
 * Writes the frames back to back with one positional writev (a group is not copied into one
 * buffer first) and finishes short writes, which a regular file may return near ENOSPC.
 */
async function writeFully(handle: FileHandle, frames: readonly Buffer[], length: number, position: number): Promise<void> {
  let written = 0;
  let pending = frames;
  // Bound: each pass writes at least one byte or throws, so at most `length` passes.
  while (written < length) {
    const result = await handle.writev(pending, position + written);
    // Not an assertion: a stuck device is an I/O failure, not a bug in this code.
    if (result.bytesWritten === 0) throw new Error('WAL write made no progress');
    written += result.bytesWritten;
    if (written < length) pending = unwritten(frames, written);
  }
}

/** The frames' bytes from offset `from` on, as views (a short write's remainder). Exported for tests. */
export function unwritten(frames: readonly Buffer[], from: number): Buffer[] {
  const rest: Buffer[] = [];
  let offset = 0;
  for (const frame of frames) {
    const end = offset + frame.length;
    if (end > from) rest.push(offset >= from ? frame : frame.subarray(from - offset));
    offset = end;
  }
  return rest;
}

function logToStderr(level: string, message: string, fields: Record<string, unknown>): void {
  console.error(`[${level}] ${message} ${JSON.stringify(fields)}`);
}
