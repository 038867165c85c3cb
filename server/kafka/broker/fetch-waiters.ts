/**
 * Parked long-poll Fetches, keyed by project and collection, woken by the engine's onAppend.
 * A waiter resolves once: on an append to any collection it watches, on its deadline, or on cancel.
 */
export class FetchWaiters {
  private readonly byKey = new Map<string, Set<() => void>>();

  /** Resolves on an append to one of `collections`, after `waitMs`, or when `signal` aborts. */
  wait(projectId: string, collections: readonly string[], waitMs: number, signal: AbortSignal):
    Promise<void> {
    return new Promise((resolve) => {
      const keys = collections.map((c) => keyOf(projectId, c));
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        for (const key of keys) {
          const set = this.byKey.get(key);
          set?.delete(done);
          if (set?.size === 0) this.byKey.delete(key);
        }
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      if (signal.aborted) return done();
      signal.addEventListener('abort', done);
      for (const key of keys) {
        let set = this.byKey.get(key);
        if (!set) this.byKey.set(key, (set = new Set()));
        set.add(done);
      }
    });
  }

  notify(projectId: string, collection: string): void {
    const set = this.byKey.get(keyOf(projectId, collection));
    if (!set) return;
    for (const done of [...set]) done();
  }

  /** Wakes every waiter (shutdown). */
  wakeAll(): void {
    for (const set of [...this.byKey.values()]) for (const done of [...set]) done();
  }
}

function keyOf(projectId: string, collection: string): string {
  return `${projectId}\u0000${collection}`;
}
