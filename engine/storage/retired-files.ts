/**
 * Segment files a compaction or a delete rewrite replaced stay on disk until every reader that
 * could still name them is done. A reader (a query, an extraction job) takes a lease before it
 * lists a collection's segments and releases it when it has read them; files retired after a
 * lease was taken are removed once that lease and every older one are released. So a query never
 * meets a missing file, however long it runs, and a reader that decodes a cached segment's
 * columns lazily (segment/reader.ts) can always open the file again.
 *
 * A crash before removal leaves files the manifest does not name: StoreSet.load (storage/store-set.ts) removes them at open.
 */
export class RetiredFiles {
  /** Retirements so far: a lease remembers the count when it was taken. */
  private epoch = 0;
  private nextLease = 1;
  /** Open leases: id → the epoch when taken. */
  private readonly leases = new Map<number, number>();
  /** Retired files in retirement order, with the epoch their retirement began. */
  private readonly pending: { epoch: number; files: readonly string[] }[] = [];

  constructor(private readonly remove: (file: string) => void) {}

  /** A lease on the files now live; the returned function releases it (more calls do nothing). */
  lease(): () => void {
    const id = this.nextLease++;
    this.leases.set(id, this.epoch);
    return () => {
      if (this.leases.delete(id)) this.sweep();
    };
  }

  /** `files` are no longer named by any collection: removed when no older lease is open. */
  retire(files: readonly string[]): void {
    if (files.length === 0) return;
    this.epoch++;
    this.pending.push({ epoch: this.epoch, files });
    this.sweep();
  }

  /** Files retired but still on disk for an open lease. */
  get waiting(): number {
    return this.pending.reduce((count, entry) => count + entry.files.length, 0);
  }

  /** Removes every retired file now (the engine is closing: no reader is left). */
  close(): void {
    this.leases.clear();
    this.sweep();
  }

  private sweep(): void {
    let oldest = Infinity;
    for (const epoch of this.leases.values()) oldest = Math.min(oldest, epoch);
    // A lease taken at epoch e listed files before retirement e + 1: it keeps e + 1 and later.
    while (this.pending.length > 0 && this.pending[0].epoch <= oldest) {
      for (const file of this.pending.shift()!.files) this.remove(file);
    }
  }
}
