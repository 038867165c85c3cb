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
 * For a thread that does background work `step` nice values above its own while queries run
 * (base/query-activity.ts): its id, its own value and the niced one. Null when the thread could
 * not go back to its own value: that needs the right to lower a nice value (root, CAP_SYS_NICE or
 * RLIMIT_NICE), tried once here (raised by one and back; a thread refused the second half stays
 * one above its value).
 */
export function backgroundNice(step: number): { readonly tid: number; readonly own: number; readonly niced: number } | null {
  const tid = threadId();
  const own = threadNice();
  if (tid === null || own === null || own >= 19 || !niceThread(own + 1) || !niceThread(own)) return null;
  return { tid, own, niced: Math.min(19, own + step) };
}
