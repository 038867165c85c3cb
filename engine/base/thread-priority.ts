/**
 * A thread's scheduling priority. On Linux a nice value belongs to a thread, not to its process:
 * setpriority(PRIO_PROCESS, tid) (os.setPriority with the thread's id) changes the calling thread
 * alone, so a worker thread can yield the cores to the thread that serves requests when both want
 * them. Elsewhere, or when the system refuses, nothing changes.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The calling thread's id (Linux: /proc/thread-self is `<pid>/task/<tid>`), or null. */
export function threadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isSafeInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/** Sets the calling thread's nice value (higher: it yields more); false when it could not. */
export function niceThread(nice: number): boolean {
  const tid = threadId();
  if (tid === null) return false;
  try {
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}

/** The calling thread's nice value, or null where it cannot be read. */
export function threadNice(): number | null {
  const tid = threadId();
  if (tid === null) return null;
  try {
    return getPriority(tid);
  } catch {
    return null;
  }
}

/**
 * A thread that does work of two kinds: work others wait for at its own nice value, background
 * work `step` higher, so that it yields the cores to the query threads (maintenance/segment-
 * worker.ts: merges). Switching back needs the right to lower a nice value (root, CAP_SYS_NICE or
 * RLIMIT_NICE), tried once at the start (raised by one and back); a thread without it stays as
 * it is (at most one above its value, if the second half of that try was refused).
 */
export class NiceSwitch {
  private readonly base: number | null;
  private background = false;

  constructor(private readonly step: number) {
    const nice = threadNice();
    this.base = nice !== null && nice < 19 && niceThread(nice + 1) && niceThread(nice) ? nice : null;
  }

  /** Whether this thread can switch (see above). */
  get switches(): boolean {
    return this.base !== null;
  }

  /** Background work from now (true) or work someone waits for (false). */
  set(background: boolean): void {
    if (this.base === null || background === this.background) return;
    if (niceThread(background ? Math.min(19, this.base + this.step) : this.base)) this.background = background;
  }
}
