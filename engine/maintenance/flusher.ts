/**
 * Flush and compaction: when buffered rows go to segments, when small segments are merged, and
 * when writes wait for room. One flush runs at a time; compaction and delete rewrites run inside
 * it, so they never overlap. The WAL files a flush replaces are deleted only after the segments
 * and the manifest that list their rows are durable.
 */
import type { Logger } from '../base/logger.js';
import { collectGarbage } from '../base/memory.js';
import {
  BUDGET_CHECK_ROWS, COMPACTION_QUERY_IDLE_MS, FLUSH_ERROR_LOG_MS, QUIET_COLLECT_ROWS, WRITE_QUIET_MS,
} from '../base/limits.js';
import type { CollectionStore, FlushPlan } from '../storage/collection.js';
import type { SegmentRef } from '../storage/chunk.js';
import type { SegmentPool } from './segment-pool.js';
import type { StoreSet } from '../storage/store-set.js';
import type { Wal } from '../wal/wal.js';

export interface FlusherDeps {
  readonly stores: StoreSet;
  readonly wal: Wal;
  readonly segmentPool: SegmentPool;
  /** The write path: appends in flight, and when the last one started (performance.now()). */
  readonly writes: { readonly busy: boolean; readonly lastWriteMs: number; readonly rowsInFlight: number; settled(): Promise<void> };
  /** Milliseconds since the last query ran (compaction waits for a pause). */
  readonly queriesIdleMs: () => number;
  /** One step of the background delete rewrites (deletes/manager.ts). */
  readonly rewriteDeletes: () => Promise<void>;
  /** Segment files a compaction replaced: dropped from the log view's cache, then retired. */
  readonly replaced: (files: readonly string[]) => void;
  /** Segments a flush or a merge has just listed in the manifest (the query caches warm them). */
  readonly published?: (segments: readonly SegmentRef[]) => void;
  /** Awaited before the WAL files of a flush are deleted (EventService.beforeWalRemove). */
  readonly beforeWalRemove: () => Promise<void>;
  /** Lets the ingest workers collect their garbage once writes stop. */
  readonly writesStopped: () => void;
  readonly logger: Logger;
  /** The write buffers' share of the memory budget, in bytes. */
  readonly bufferBytes: number;
  /** Buffered rows past which writes wait for a flush. */
  readonly backlogRows: number;
  readonly isClosed: () => boolean;
}

export class Flusher {
  private flushing: Promise<void> | null = null;
  /** A flush was asked for while one ran: the running one goes round once more. */
  private flushWanted = false;
  /** The last flush failed (reportError); the next one that writes its segments clears it. */
  private failing = false;
  private errorLoggedAt = -Infinity;
  /** Rows appended since the buffers' bytes were last added up. */
  private rowsSinceBudgetCheck = 0;
  /** Writes waiting for room in the write buffers (roomForWrites), woken after each flush. */
  private readonly roomWaiters: (() => void)[] = [];
  private timers: NodeJS.Timeout[] = [];
  /** A merge due while queries ran: the flush that runs it once they pause (compactStep). */
  private compactTimer: NodeJS.Timeout | null = null;
  /** Callers of idle() waiting for the flush to reach a point where the stores are consistent. */
  private readonly idleWaiters: (() => void)[] = [];
  failures = 0;
  writesHeldBack = 0;

  /** Milliseconds merges and delete rewrites have stood still for queries (base/query-activity.ts). */
  get backgroundPausedMs(): number {
    return this.deps.segmentPool.pausedMs;
  }

  constructor(private readonly deps: FlusherDeps) {}

  /** Flushes every `intervalMs`, and as soon as writes stop after a load (flushIfQuiet). */
  start(intervalMs: number): void {
    this.timers = [setInterval(() => this.flushInBackground(), intervalMs), setInterval(() => this.flushIfQuiet(), WRITE_QUIET_MS)];
    for (const timer of this.timers) timer.unref();
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    if (this.compactTimer !== null) clearTimeout(this.compactTimer);
  }

  /**
   * Flushes now. Someone waits for it (engine.flush(), a close), so its merges and rewrites do not
   * pause for queries, nor does one under way (base/query-activity.ts).
   */
  flush(): Promise<void> {
    this.deps.segmentPool.urge();
    return this.flushSoon();
  }

  private flushSoon(): Promise<void> {
    if (this.flushing !== null) {
      this.flushWanted = true;
      return this.flushing;
    }
    this.flushing = (async () => {
      do {
        this.flushWanted = false;
        await this.flushNow();
        await this.letIdleWaitersRun();
      } while (this.flushWanted);
    })().finally(() => {
      this.flushing = null;
      this.deps.segmentPool.relax();
      this.wakeWriters();
      for (const wake of this.idleWaiters.splice(0)) wake();
    });
    return this.flushing;
  }

  /**
   * A flush whose failure is reported (logged, counted, retried by the next), not thrown. Timers
   * ask for it: no one waits, so a merge under way keeps pausing for queries.
   */
  flushInBackground(): void {
    void this.flushSoon().catch(this.reportError);
  }

  /**
   * Resolves when no flush step (writing buffers, a merge, a delete rewrite) is running; the
   * caller's synchronous code then runs before the next step starts. A flush that goes round
   * again (writes kept coming) or merges one segment after another stops between steps for the
   * callers waiting here, so a steady load never holds them back for more than one step.
   */
  async idle(): Promise<void> {
    if (this.flushing === null) return;
    this.deps.segmentPool.urge();
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Between two steps: wakes the callers of idle() and lets their continuations (microtasks) run
   * before the next step starts (a macrotask later).
   */
  private async letIdleWaitersRun(): Promise<void> {
    if (this.idleWaiters.length === 0) return;
    for (const wake of this.idleWaiters.splice(0)) wake();
    await new Promise((resolve) => setImmediate(resolve));
  }

  /** A buffer is full (BUFFER_ROWS_MAX): flushed now, before merges that pause for queries. */
  bufferFull(): void {
    this.deps.segmentPool.urge();
    this.flushInBackground();
  }

  /** Flushes when the write buffers together pass their share of the memory budget. */
  rowsAdded(rows: number): void {
    this.rowsSinceBudgetCheck += rows;
    if (this.rowsSinceBudgetCheck < BUDGET_CHECK_ROWS) return;
    this.rowsSinceBudgetCheck = 0;
    if (this.deps.stores.bufferedBytes() > this.deps.bufferBytes) this.bufferFull();
  }

  /**
   * Null when the write buffers have room; otherwise a flush is asked for and the promise resolves
   * after it, and the caller tries again. The buffers fill past BUFFER_ROWS_MAX only while a flush
   * waits behind a merge on the segment worker; without this a load kept writing into them and the
   * write thread's memory grew by the merge's duration times the ingest rate (bench/scale, 50M
   * events: its heap and arrays reached 1.1 GB). Writes are not held back while flushes fail (a
   * full disk): they would only retry a failing flush. Rows on their way through the WAL count as
   * buffered: when a flush ends, the writes it woke go in one after another until they reach the
   * limit again, rather than all at once (each would see the buffers empty).
   */
  roomForWrites(): Promise<void> | null {
    if (this.failing || this.deps.isClosed()) return null;
    if (this.deps.stores.bufferedRows() + this.deps.writes.rowsInFlight < this.deps.backlogRows) return null;
    this.writesHeldBack++;
    this.deps.segmentPool.urge(); // writes wait: a merge under way stops pausing for queries
    this.flushInBackground();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  private wakeWriters(): void {
    for (const wake of this.roomWaiters.splice(0)) wake();
  }

  private readonly reportError = (error: unknown): void => {
    this.failures++;
    this.failing = true;
    this.wakeWriters();
    const now = Date.now();
    if (now - this.errorLoggedAt < FLUSH_ERROR_LOG_MS) return;
    this.errorLoggedAt = now;
    const code = (error as { code?: unknown })?.code;
    this.deps.logger.write('error', 'flush failed: rows stay in the WAL and the buffers; retried every flush', {
      error: typeof code === 'string' ? `${code}: ${(error as Error).message}` : (error as Error)?.stack ?? String(error),
      failures: this.failures,
    });
  };

  /**
   * Rotates the WAL, waits until every append written to the closed files is in a buffer, writes
   * the buffers as segments (on the segment worker, while writes go on), swaps them in, commits the
   * manifest, and only then deletes the closed WAL files. Then one compaction step, if any is due.
   */
  private async flushNow(): Promise<void> {
    await this.flushBuffers();
    // After flushBuffers has returned, so that nothing of its frame (the flushed chunks'
    // dictionaries) is still reachable when the collection runs.
    this.releaseQuietBuffers();
    await this.compactStep();
    if (!this.deps.isClosed()) await this.deps.rewriteDeletes();
  }

  private async flushBuffers(): Promise<void> {
    const { stores, wal, writes } = this.deps;
    if (!writes.busy && stores.bufferedRows() === 0) return;
    const closedIndex = await wal.rotate();
    await writes.settled();
    const plans: { store: CollectionStore; plan: FlushPlan }[] = [];
    for (const store of [...stores.values()]) {
      const plan = await store.planFlush();
      if (plan !== null) plans.push({ store, plan });
    }
    const footers = await Promise.all(plans.map(({ plan }) =>
      this.deps.segmentPool.run({ op: 'write', chunk: plan.chunk, parts: plan.parts, schema: plan.schema })));
    plans.forEach(({ store, plan }, i) => store.finishFlush(plan, footers[i]));
    stores.commitManifest();
    this.deps.published?.(plans.flatMap(({ plan }, i) => plan.parts.map((part, p) => ({ file: part.file, footer: footers[i][p] }))));
    this.failing = false;
    this.wakeWriters();
    // What was derived from the records' tags (the Kafka producer state) is made durable before
    // the records go; a failure leaves the WAL files for the next flush.
    await this.deps.beforeWalRemove();
    await wal.removeUpTo(closedIndex);
  }

  /**
   * Flushes as soon as writes stop, when the buffers hold a load's worth of rows, rather than at
   * the next tick of the flush timer: the rows go to segments and the buffers' memory is let go
   * (releaseQuietBuffers) before the queries that follow a load fill their caches.
   */
  private flushIfQuiet(): void {
    const { writes } = this.deps;
    if (this.deps.isClosed() || writes.busy) return;
    if (performance.now() - writes.lastWriteMs < WRITE_QUIET_MS) return;
    if (this.deps.stores.bufferedRows() >= QUIET_COLLECT_ROWS) this.flushInBackground();
  }

  /**
   * Once writes stop, the buffers' arrays and the strings of the rows they held (a load's worth,
   * hundreds of MB at 200,000 events/s) are garbage, but V8 returns the memory only at its next
   * full collection, which on a quiet write thread may come many seconds later: meanwhile queries
   * fill their caches on top of it (bench/scale, 10M: the peak RSS came right there). So the first
   * flush that leaves the buffers empty lets their arrays go and collects at once.
   */
  private releaseQuietBuffers(): void {
    if (this.deps.writes.busy) return;
    let rows = 0;
    for (const store of this.deps.stores.values()) rows += store.buffer.trim();
    if (rows < QUIET_COLLECT_ROWS) return;
    collectGarbage();
    this.deps.writesStopped();
  }

  /**
   * Merges small segments, one partition at a time, until none is due; a merge runs only once no
   * query has run for COMPACTION_QUERY_IDLE_MS, so compaction takes the cores only when queries
   * leave them. Runs within a flush, so flushes and merges never overlap. While queries run it
   * does not wait inside the flush (a delete waits for the flush to end: it would wait as long as
   * queries kept coming) but ends it, and a timer flushes again when the queries may have paused.
   */
  private async compactStep(): Promise<void> {
    for (;;) {
      // A delete waiting in idle() goes before each merge (it may drop the store planned here).
      await this.letIdleWaitersRun();
      if (this.deps.isClosed() || this.flushWanted) return; // a flush asked for meanwhile goes first
      const due = [...this.deps.stores.values()].find((store) => store.planCompaction() !== null);
      if (due === undefined) return;
      const idle = this.deps.queriesIdleMs();
      if (idle < COMPACTION_QUERY_IDLE_MS) return this.compactLater(COMPACTION_QUERY_IDLE_MS - idle);
      const plan = due.planCompaction();
      if (plan === null) continue;
      const [footer] = await this.deps.segmentPool.run({ op: 'compact', ...plan });
      const replaced = due.finishCompaction(plan, footer);
      this.deps.stores.commitManifest();
      // Removed once no query or extraction that listed them is still reading.
      this.deps.replaced(replaced);
      this.deps.published?.([{ file: plan.file, footer }]);
      // Writes waiting for a flush (a full buffer) go first.
      if (this.deps.writes.busy || this.flushWanted) return;
    }
  }

  /** A flush (its compaction step) in `ms`, unless one is already timed. */
  private compactLater(ms: number): void {
    if (this.compactTimer !== null || this.deps.isClosed()) return;
    this.compactTimer = setTimeout(() => {
      this.compactTimer = null;
      this.flushInBackground();
    }, ms);
    this.compactTimer.unref();
  }
}
