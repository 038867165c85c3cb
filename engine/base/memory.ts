/**
 * The memory budget: one number (EngineOptions.memoryBudgetBytes, the server's --memory-budget)
 * split among everything that grows with the data or the traffic, so RSS stays flat as the store
 * grows. What it does not cover is fixed: Node and V8 themselves, the add-on databases, the code.
 *
 *   decoded segments   half, split evenly among the query workers' caches (chunk-cache.ts)
 *   footers, sketches  a tenth, per query worker share (chunk-cache.ts)
 *   write buffers      a quarter: past it the buffers are flushed (maintenance/flusher.ts), whatever their rows
 *   the log view       the rest: decoded segments the outbound Kafka readers are reading (log/reader.ts)
 *
 * Nothing per event lives for the life of the process: rows are in the write buffer until the
 * next flush, then only on disk and, while a query or a consumer reads them, in these caches.
 */
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';

const MIB = 1024 * 1024;
/** What planMemory works with at the least (tests try budgets far below the flag's minimum). */
const PLAN_BYTES_MIN = MIB;

export interface MemoryPlan {
  readonly budgetBytes: number;
  /** Per query worker (or the in-process cache when there are none). */
  readonly chunkCacheBytes: number;
  /** Per query worker: footers and their HyperLogLog sketches. */
  readonly footerCacheBytes: number;
  /** All write buffers together. */
  readonly bufferBytes: number;
  readonly logCacheBytes: number;
}

/**
 * The default: a thirty-second of the machine's memory, between 256 MiB and 2 GiB (768 MiB on 24
 * GiB). What the budget does not cover (V8 heaps of five threads, code, the write thread's garbage
 * between collections) comes to ~250 MB at 200,000 events/s, so on the 24 GiB machine the server
 * stays under 1 GB (bench/scale: a sixteenth, 1.5 GiB, let the query workers' caches reach 640 MB
 * at 50M events and the whole server 1.37 GB).
 */
export function defaultMemoryBudget(totalBytes = os.totalmem()): number {
  return Math.min(2048 * MIB, Math.max(256 * MIB, Math.floor(totalBytes / 32)));
}

export function planMemory(budgetBytes: number, queryWorkers: number): MemoryPlan {
  const budget = Math.max(PLAN_BYTES_MIN, budgetBytes);
  const caches = Math.max(1, queryWorkers);
  return {
    budgetBytes: budget,
    chunkCacheBytes: Math.floor((budget * 0.5) / caches),
    footerCacheBytes: Math.floor((budget * 0.1) / caches),
    bufferBytes: Math.floor(budget * 0.25),
    logCacheBytes: Math.floor(budget * 0.15),
  };
}

/** "1g", "512m", "800M", "2GiB", "1073741824" → bytes; NaN when it is none of those. */
export function parseBytes(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(text);
  if (match === null) return NaN;
  const power = ' kmgt'.indexOf(match[2].toLowerCase() || ' ');
  return Math.floor(Number(match[1]) * 1024 ** power);
}

let fullCollection: (() => void) | null | undefined;

/**
 * A full garbage collection of this thread's heap, now: for the moments the engine knows a large
 * amount of memory just became garbage and nothing will soon allocate enough to make V8 collect
 * it (maintenance/flusher.ts, when writes stop). Node gives no such call without --expose-gc, so the flag is
 * set at first use and the collector taken from a new context (V8 installs `gc` in contexts
 * created after the flag; an embedding process's later vm contexts see a `gc` global too). Does
 * nothing when that is not possible.
 */
export function collectGarbage(): void {
  if (fullCollection === undefined) {
    fullCollection = null;
    const existing = (globalThis as { gc?: () => void }).gc;
    if (typeof existing === 'function') {
      fullCollection = existing;
    } else {
      try {
        v8.setFlagsFromString('--expose-gc');
        const collector: unknown = vm.runInNewContext('gc');
        if (typeof collector === 'function') fullCollection = collector as () => void;
      } catch {
        // No collector: V8 collects in its own time.
      }
    }
  }
  fullCollection?.();
}
