/**
 * One process per data directory. Opening the engine first creates `tally.pid` in the directory
 * with O_EXCL (before any other file is written) and records who holds it; close() removes it.
 * Two processes appending to the same WAL and manifest lose acknowledged writes, so a second open
 * fails with DataDirError naming the holder, and writes nothing.
 *
 * A lock left by a process that died (kill -9, power loss) is taken over, as PostgreSQL does with
 * postmaster.pid: the recorded process is gone when, on the same host, the machine has rebooted
 * since (boot id), no process has its pid (kill(pid, 0) → ESRCH), or the process with that pid
 * started at another time (a reused pid). A lock recorded on another host (a shared volume) cannot
 * be checked and is never taken over: the message says which file to remove.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LOCK_HALF_WRITTEN_STALE_MS } from './limits.js';

export const LOCK_FILE = 'tally.pid';

/** A data directory that cannot be used (in use, unsafe permissions); the message says what to do. */
export class DataDirError extends Error {
  override name = 'DataDirError';
}

interface Holder {
  readonly pid: number;
  readonly host: string;
  /** /proc/sys/kernel/random/boot_id; '' where there is none. */
  readonly boot: string;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat); '' where unknown. */
  readonly start: string;
}

export interface DataDirLock {
  /** Removes the lock file if it is still this lock's; idempotent. */
  release(): void;
}

/** Lock files (absolute) this process holds, removed at exit even without close(). */
const held = new Set<string>();
let exitHook = false;

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

function startTicks(pid: number): string {
  const stat = readText(`/proc/${pid}/stat`);
  // Field 22; the command name (field 2) is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? '';
}

function me(): Holder {
  return { pid: process.pid, host: os.hostname(), boot: readText('/proc/sys/kernel/random/boot_id'), start: startTicks(process.pid) };
}

function parseHolder(text: string): Holder | null {
  try {
    const value = JSON.parse(text) as Partial<Holder>;
    if (!Number.isInteger(value.pid) || (value.pid as number) <= 0) return null;
    return { pid: value.pid!, host: String(value.host ?? ''), boot: String(value.boot ?? ''), start: String(value.start ?? '') };
  } catch {
    return null;
  }
}

/** False when the holder is known to be gone; true when it runs or that cannot be told. */
function alive(holder: Holder): boolean {
  const self = me();
  if (holder.host !== self.host) return true;
  if (holder.boot !== '' && self.boot !== '' && holder.boot !== self.boot) return false;
  if (holder.pid === process.pid) return false; // not this process's (held is checked first): a previous life of this pid
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const start = startTicks(holder.pid);
  return !(holder.start !== '' && start !== '' && start !== holder.start);
}

function inUse(dir: string, file: string, holder: Holder | null): DataDirError {
  if (holder === null) {
    return new DataDirError(`data directory ${dir} is being locked by another process (${file} exists with no pid yet); `
      + 'try again, or remove that file if no Tally uses the directory');
  }
  const where = holder.host === os.hostname() ? '' : ` on host ${holder.host}`;
  const advice = where === ''
    ? 'stop it first, or choose another directory with --data'
    : `if no Tally runs there any more, remove ${file}`;
  return new DataDirError(`data directory ${dir} is in use by pid ${holder.pid}${where} (another Tally?); ${advice}`);
}

/**
 * Takes the lock on `dir` (which must exist) or throws DataDirError. Writes nothing in `dir`
 * unless the lock is taken.
 */
export function lockDataDir(dir: string): DataDirLock {
  const file = path.join(dir, LOCK_FILE);
  if (held.has(file)) {
    throw new DataDirError(`data directory ${dir} is already open in this process (pid ${process.pid}); close that engine first`);
  }
  const self = me();
  const content = JSON.stringify(self) + '\n';
  for (let attempt = 0; attempt < 5; attempt++) {
    let fd: number;
    try {
      fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const text = readText(file);
      const holder = parseHolder(text);
      if (holder === null) {
        let age = 0;
        try {
          age = Date.now() - fs.statSync(file).mtimeMs;
        } catch {
          continue; // removed meanwhile: try again
        }
        if (age < LOCK_HALF_WRITTEN_STALE_MS) throw inUse(dir, file, null);
      } else if (alive(holder)) {
        throw inUse(dir, file, holder);
      }
      takeOver(file, text);
      continue;
    }
    try {
      fs.writeSync(fd, content);
      fs.fsyncSync(fd);
    } catch (error) {
      fs.closeSync(fd);
      fs.rmSync(file, { force: true }); // a full disk: leave no empty lock behind
      throw error;
    }
    fs.closeSync(fd);
    held.add(file);
    if (!exitHook) {
      exitHook = true;
      process.on('exit', () => {
        for (const lock of held) removeIfOurs(lock, content);
      });
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        held.delete(file);
        removeIfOurs(file, content);
      },
    };
  }
  throw new DataDirError(`data directory ${dir}: cannot take ${file} (other processes keep taking it)`);
}

/**
 * Removes a stale lock file whose content was `stale`. It is renamed away first, so that of two
 * processes taking over the same stale lock only one removes it; if what was renamed turns out to
 * be a lock taken meanwhile, it is put back.
 */
function takeOver(file: string, stale: string): void {
  const aside = `${file}.stale-${process.pid}`;
  try {
    fs.renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (readText(aside) !== stale) {
    try {
      fs.linkSync(aside, file);
    } catch {
      // a third process took the lock meanwhile; it is the holder now
    }
  }
  fs.rmSync(aside, { force: true });
}

/**
 * For tests that simulate a crash inside one process: this process forgets that it holds the lock
 * on `dir`, and the file stays as kill -9 leaves it, so the next open takes it over as stale.
 */
export function abandonDataDirLock(dir: string): void {
  held.delete(path.join(path.resolve(dir), LOCK_FILE));
}

function removeIfOurs(file: string, content: string): void {
  try {
    if (fs.readFileSync(file, 'utf8') === content) fs.rmSync(file, { force: true });
  } catch {
    // gone already
  }
}
