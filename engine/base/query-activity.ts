/**
 * Queries running now, counted in memory every thread sees (a SharedArrayBuffer), so background
 * work on another thread can stand aside while one runs. A merge or a delete rewrite on the
 * segment worker pauses at its next step while any query runs (QueryPause): on two cores a merge
 * at nice 0 took about half of the cores a query's workers (nice 5) would have had, and right
 * after a load every day's segments are still to merge.
 *
 * Work someone waits for is not held back: writes waiting for room, a delete, a flush asked for
 * or a close `urge` the flush under way, whose merges then run without pausing (the segment
 * pool keeps them urged until the flush ends). A job pauses for at most its budget in all, so
 * merges still finish under a steady stream of overlapping queries.
 */
const RUNNING = 0;
const URGENT = 1;

/** The main thread's side: queries enter and leave; waiters urge. */
export class QueryActivity {
  readonly shared = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  private readonly cells = new Int32Array(this.shared);

  enter(): void {
    Atomics.add(this.cells, RUNNING, 1);
  }

  leave(): void {
    if (Atomics.sub(this.cells, RUNNING, 1) === 1) Atomics.notify(this.cells, RUNNING);
  }

  /** The background job under way is waited for: it stops pausing, as does any until calm(). */
  urge(): void {
    Atomics.store(this.cells, URGENT, 1);
    Atomics.notify(this.cells, RUNNING);
  }

  /** A new background job starts: it may pause again. */
  calm(): void {
    Atomics.store(this.cells, URGENT, 0);
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
