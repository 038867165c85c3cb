/**
 * Checks made before the server writes or binds anything, and the one-line messages for what
 * stops a start: a data directory others can read, a port that is taken or not allowed.
 */
import fs from 'node:fs';
import path from 'node:path';

/** A start that cannot go on; the message is one line that says what to change. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/** `value` as one shell word. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Refuses an existing data directory that group or others can enter (the organization key, every
 * project's keys and the events are in it), as PostgreSQL refuses its data directory; a missing
 * one is created 0700 by the engine.
 */
export function checkDataDir(dataDir: string): void {
  const dir = path.resolve(dataDir);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      createDataDir(dir);
      return;
    }
    throw new StartupError(`cannot use data directory ${dir}: ${reason(error)}; choose another with --data`);
  }
  if (!stat.isDirectory()) throw new StartupError(`--data ${dir} is not a directory; choose another with --data`);
  const mode = stat.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new StartupError(`data directory ${dir} has mode ${mode.toString(8).padStart(4, '0')}: group or others can `
      + `read its keys and events; it must be the owner's only (0700); run: chmod 700 ${shellWord(dir)}`);
  }
}

/** Creates a missing data directory, the owner's only; what stops it is one sentence with the fix. */
function createDataDir(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new StartupError(`cannot create data directory ${dir}: ${reason(error)}; `
      + `create it (owned by this user, mode 700) or choose another with --data`);
  }
}

/** A file system error as a few words: "permission denied", "not a directory", ... */
function reason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const words: Record<string, string> = {
    EACCES: 'permission denied', EPERM: 'operation not permitted', ENOTDIR: 'a part of the path is not a directory',
    EROFS: 'read-only file system', ENOSPC: 'no space left on the device', EEXIST: 'a file of that name exists',
  };
  return (code !== undefined && words[code]) || (error as Error).message;
}

/**
 * The one-line message for a listener that could not bind `host:port`, naming the flag to change;
 * null when `error` is not a bind error.
 */
export function listenError(error: unknown, flag: string, host: string, port: number): StartupError | null {
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return new StartupError(`port ${port} on ${host} is in use (another Tally?); choose another with --${flag}`);
    case 'EACCES':
      return new StartupError(`no permission to listen on port ${port} on ${host} (ports below 1024 need privileges); `
        + `choose another with --${flag}`);
    case 'EADDRNOTAVAIL':
      return new StartupError(`cannot listen on ${host}: no such address on this machine; choose another with --host`);
    default:
      return null;
  }
}
