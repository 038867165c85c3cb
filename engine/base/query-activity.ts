/**
 * Queries running now, counted in memory every thread sees (a SharedArrayBuffer), so background
 * work on another thread can stand aside while one runs. A merge or a delete rewrite on the
 * segment worker pauses at its next step while any query runs (QueryPause): on two cores a merge
 * at nice 0 took about half of the cores a query's workers (nice 5) would have had, and right
 * after a load every day's segments are still to merge. The step under way when a query arrives
 * runs on, so the thread running it is also niced for as long as queries run (the first query
 * in renices it, the last one out renices it back: setpriority works on another thread's id),
 * where the thread may lower its value again (thread-priority.ts NiceSwitch); otherwise a
 * background job competes at its own value as before. Merges do not yield to other work:
 * between queries they run at the thread's own value.
 *
 * Work someone waits for is not held back: writes waiting for room, a delete, a flush asked for
 * or a close `urge` the flush under way, whose merges then run without pausing, at the thread's
 * own value (the segment pool keeps them urged until the flush ends). A job pauses for at most
 * its budget in all, so merges still finish under a steady stream of overlapping queries.
 */
import { setPriority } from 'node:os';

const RUNNING = 0;
const URGENT = 1;
/** The id of the thread running a background job now (0: none), and its two nice values. */
const BACKGROUND_TID = 2;
const OWN_NICE = 3;
const NICED = 4;
const CELLS = 5;

/** Sets thread `tid`'s nice value; false when the system refused (or the thread is gone). */
function renice(tid: number, nice: number): boolean {
  try {
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}

/** The main thread's side: queries enter and leave; waiters urge. */
export class QueryActivity {
  readonly shared = new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT);
  private readonly cells = new Int32Array(this.shared);

  enter(): void {
    if (Atomics.add(this.cells, RUNNING, 1) === 0 && Atomics.load(this.cells, URGENT) === 0) this.renice(NICED);
  }

  leave(): void {
    if (Atomics.sub(this.cells, RUNNING, 1) === 1) {
      this.renice(OWN_NICE);
      Atomics.notify(this.cells, RUNNING);
    }
  }

  /** The background job under way is waited for: it stops pausing, as does any until calm(). */
  urge(): void {
    Atomics.store(this.cells, URGENT, 1);
    this.renice(OWN_NICE);
    Atomics.notify(this.cells, RUNNING);
  }

  /** A new background job starts: it may pause again. */
  calm(): void {
    Atomics.store(this.cells, URGENT, 0);
  }

  /** The thread running a background job, if one is, to its nice value in cell `which`. */
  private renice(which: number): void {
    const tid = Atomics.load(this.cells, BACKGROUND_TID);
    if (tid !== 0) renice(tid, Atomics.load(this.cells, which));
  }
}

/** The worker's side: a background job's pause points. */
export class QueryPause {
  private readonly cells: Int32Array;
  private budgetLeftMs = 0;
  /** Milliseconds this thread has stood still for queries, over all its jobs. */
  pausedMs = 0;

  constructor(shared: SharedArrayBuffer) {
    this.cells = new Int32Array(shared);
  }

  /** A job starts: it may pause for `budgetMs` in all. */
  begin(budgetMs: number): void {
    this.budgetLeftMs = budgetMs;
  }

  /**
   * A background job starts on thread `tid` (the caller), whose own nice value is `own`: while
   * queries run and no one urges it, it runs at `niced` (QueryActivity renices it as queries
   * come and go; this sets the value they left it at).
   */
  beginBackground(tid: number, own: number, niced: number): void {
    Atomics.store(this.cells, OWN_NICE, own);
    Atomics.store(this.cells, NICED, niced);
    Atomics.store(this.cells, BACKGROUND_TID, tid);
    const quiet = Atomics.load(this.cells, RUNNING) <= 0 || Atomics.load(this.cells, URGENT) !== 0;
    renice(tid, quiet ? own : niced);
  }

  /** The background job ended: the thread is back at its own value (a flush may follow). */
  endBackground(): void {
    const tid = Atomics.exchange(this.cells, BACKGROUND_TID, 0);
    if (tid !== 0) renice(tid, Atomics.load(this.cells, OWN_NICE));
  }

  /** Blocks this thread while a query runs, unless urged, within the job's budget. */
  readonly point = (): void => {
    for (;;) {
      const running = Atomics.load(this.cells, RUNNING);
      if (running <= 0 || Atomics.load(this.cells, URGENT) !== 0 || this.budgetLeftMs <= 0) return;
      const started = performance.now();
      Atomics.wait(this.cells, RUNNING, running, this.budgetLeftMs);
      const waited = performance.now() - started;
      this.budgetLeftMs -= waited;
      this.pausedMs += waited;
    }
  };
}
