/**
 * Structured logs: one JSON object per line on stderr, `{"time","level","msg",...fields}`, below a
 * level set once (the server's `--log-level`). The engine and the server share this type; nothing
 * that logs ever receives a key to log (callers pass ids, routes and counts, never credentials).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  /** True when lines of `level` are written: check before building costly fields. */
  enabled(level: LogLevel): boolean;
  write(level: LogLevel, msg: string, fields?: LogFields): void;
}

/** A logger writing JSON lines to `out` (stderr by default) at `level` and above. */
export function jsonLogger(level: LogLevel = 'info', out: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const floor = LOG_LEVELS.indexOf(level);
  return {
    enabled: (at) => LOG_LEVELS.indexOf(at) >= floor,
    write(at, msg, fields) {
      if (LOG_LEVELS.indexOf(at) < floor) return;
      out(`${JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields }, safeValue)}\n`);
    },
  };
}

/** Errors log as their message and code (stacks only when asked for); bigints as text. */
function safeValue(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(code !== undefined && { code }), ...(value.stack && { stack: value.stack }) };
  }
  return typeof value === 'bigint' ? value.toString() : value;
}
