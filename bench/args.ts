/**
 * The benchmarks' flags, parsed by node:util's parseArgs (strict) as server/config.ts parses the
 * server's: `--name value`, `--name=value` and boolean `--name`; a value that starts with a dash
 * goes after `=`. A flag the script does not know, a missing value or a bad one stops the script
 * before it starts: one sentence naming the flag, then its usage, on stderr, and exit code 2.
 */
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A flag: `arg` names the value it takes (shown in the usage); without it, the flag is boolean. */
export interface FlagSpec {
  readonly arg?: string;
}

export interface BenchArgsOptions {
  /** Names of the positional arguments the script takes, in order (each optional). */
  readonly positionals?: readonly string[];
  /** Called with the sentence of a bad argument; the default prints it and the usage and exits. */
  readonly fail?: (message: string) => never;
  /** The script's name in the usage line; default: the running file's, as `dist/bench/NAME.js`. */
  readonly script?: string;
}

export class BenchArgs {
  constructor(
    private readonly values: Readonly<Record<string, string | boolean | undefined>>,
    private readonly given: readonly string[],
    private readonly fail: (message: string) => never,
  ) {}

  /** Whether boolean `--name` was given. */
  flag(name: string): boolean {
    return this.values[name] === true;
  }

  /** Whether `--name` was given, with or without a value. */
  has(name: string): boolean {
    return this.values[name] !== undefined;
  }

  /** The value of `--name`, or `fallback`. */
  string(name: string, fallback: string): string;
  string(name: string): string | undefined;
  string(name: string, fallback?: string): string | undefined {
    const value = this.values[name];
    return typeof value === 'string' ? value : fallback;
  }

  /** `--name` as an integer of at least `min` (a value like 1e6 is one), or `fallback`. */
  integer(name: string, fallback: number, min = 1): number {
    return this.checkInteger(`--${name}`, this.string(name), fallback, min);
  }

  /** `--name` as a number above 0 (seconds may be fractional), or `fallback`. */
  positive(name: string, fallback: number): number {
    return this.checkPositive(`--${name}`, this.string(name), fallback);
  }

  /** Positional argument `index` (named `name` in sentences) as an integer of at least `min`, or `fallback`. */
  positionalInteger(index: number, name: string, fallback: number, min = 1): number {
    return this.checkInteger(name, this.given[index], fallback, min);
  }

  /** Positional argument `index` as a number above 0, or `fallback`. */
  positionalPositive(index: number, name: string, fallback: number): number {
    return this.checkPositive(name, this.given[index], fallback);
  }

  /** `--name`'s value, which must be one of `choices`, or `fallback`. */
  choice<T extends string>(name: string, choices: readonly T[], fallback: T): T {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!(choices as readonly string[]).includes(raw)) this.fail(`--${name} must be ${oneOf(choices)}, got "${raw}"`);
    return raw as T;
  }

  /** `--name`'s comma-separated list, each item one of `choices`; null when not given. */
  list<T extends string>(name: string, choices: readonly T[]): T[] | null {
    const raw = this.string(name);
    if (raw === undefined) return null;
    const items = raw.split(',');
    const bad = items.find((item) => !(choices as readonly string[]).includes(item));
    if (bad !== undefined) this.fail(`--${name} takes a comma-separated list of ${choices.join(', ')}, got "${bad}"`);
    return items as T[];
  }

  private checkInteger(name: string, raw: string | undefined, fallback: number, min: number): number {
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isSafeInteger(value) || value < min) {
      this.fail(`${name} must be an integer of at least ${min}, got "${raw}"`);
    }
    return value;
  }

  private checkPositive(name: string, raw: string | undefined, fallback: number): number {
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value) || value <= 0) this.fail(`${name} must be a number above 0, got "${raw}"`);
    return value;
  }
}

function oneOf(choices: readonly string[]): string {
  return choices.length === 1 ? choices[0]! : `${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}`;
}

/** The usage line made from the flags: `usage: node dist/bench/x.js [--events N] [--keep] [rows]`. */
export function usageLine(script: string, flags: Readonly<Record<string, FlagSpec>>, positionals: readonly string[] = []): string {
  const parts = Object.entries(flags).map(([name, spec]) => `[--${name}${spec.arg ? ` ${spec.arg}` : ''}]`);
  return ['usage: node', script, ...parts, ...positionals.map((p) => `[${p}]`)].join(' ');
}

/** Parses `argv` against `flags`; a bad argument goes to `options.fail` as one sentence naming it. */
export function parseBenchArgs(
  argv: readonly string[], flags: Readonly<Record<string, FlagSpec>>, options: BenchArgsOptions = {},
): BenchArgs {
  const positionals = options.positionals ?? [];
  const fail = options.fail ?? ((message: string): never => {
    const script = options.script ?? `dist/bench/${path.basename(process.argv[1] ?? 'bench.js')}`;
    process.stderr.write(`${message}\n${usageLine(script, flags, positionals)}\n`);
    process.exit(2);
  });
  const config: ParseArgsConfig['options'] = {};
  for (const [name, spec] of Object.entries(flags)) config[name] = { type: spec.arg ? 'string' : 'boolean' };
  let parsed: { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: config, strict: true, allowPositionals: positionals.length > 0 });
  } catch (error) {
    return fail(flagError(error, flags));
  }
  if (parsed.positionals.length > positionals.length) {
    fail(`unexpected argument "${parsed.positionals[positionals.length]}"`);
  }
  const values: Record<string, string | boolean | undefined> = {};
  for (const [name, value] of Object.entries(parsed.values)) values[name] = Array.isArray(value) ? value.at(-1) : value;
  return new BenchArgs(values, parsed.positionals, fail);
}

/** parseArgs' error in server/config.ts's words, naming the flag. */
function flagError(error: unknown, flags: Readonly<Record<string, FlagSpec>>): string {
  const code = (error as { code?: string }).code;
  const message = (error as Error).message;
  const named = /'(-{1,2}[\w-]+)/.exec(message)?.[1] ?? '';
  const spec = named.startsWith('--') ? flags[named.slice(2)] : undefined;
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown flag ${named}`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument "${/'([^']*)'/.exec(message)?.[1] ?? ''}"`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return spec?.arg
        ? `${named} needs a value (${spec.arg}); a value starting with "-" goes after "=" (${named}=VALUE)`
        : `${named} takes no value`;
    default:
      return message;
  }
}

/** The running script's flags (process.argv); a bad one prints a sentence and the usage, and exits 2. */
export function benchArgs(flags: Readonly<Record<string, FlagSpec>>, options: BenchArgsOptions = {}): BenchArgs {
  return parseBenchArgs(process.argv.slice(2), flags, options);
}
