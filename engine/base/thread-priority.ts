/**
 * A thread's scheduling priority. On Linux a nice value belongs to a thread, not to its process:
 * setpriority(PRIO_PROCESS, tid) (os.setPriority with the thread's id) changes the calling thread
 * alone, so a worker thread can yield the cores to the thread that serves requests when both want
 * them. Elsewhere, or when the system refuses, nothing changes.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

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
