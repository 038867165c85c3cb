/** The threads of this process as Linux shows them in /proc. */
import fs from 'node:fs';

/** Nice value of each thread of this process, by thread id. */
export function niceOfThreads(): Map<number, number> {
  const nice = new Map<number, number>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nice.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return nice;
}
