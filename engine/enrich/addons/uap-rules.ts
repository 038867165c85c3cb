/**
 * A reader of uap-core's regexes.yaml (the ua-parser project's shared rule set), following its
 * specification (uap-core/docs/specification.md): first matching regex wins, `$1`..`$9` in a
 * replacement insert groups, results are trimmed and an empty result is absent. It owns loading and
 * matching; mapping to Tally's output fields lives in ua-parser.ts.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parse } from 'yaml';

interface Rule {
  readonly regex: RegExp;
  /** Replacements by output slot; undefined means "take the slot's own group". */
  readonly replacements: readonly (string | undefined)[];
}

export interface UapRules {
  readonly agent: readonly Rule[];
  readonly os: readonly Rule[];
  readonly device: readonly Rule[];
}

/** Family then versions; family is 'Other' when no rule matches, versions null when absent. */
export interface UapMatch {
  readonly family: string;
  readonly versions: readonly (string | null)[];
}

const AGENT_KEYS = ['family_replacement', 'v1_replacement', 'v2_replacement', 'v3_replacement'];
const OS_KEYS = [
  'os_replacement', 'os_v1_replacement', 'os_v2_replacement', 'os_v3_replacement',
  'os_v4_replacement',
];
const DEVICE_KEYS = ['device_replacement'];

/** Reads and compiles regexes.yaml from the installed uap-core package (once, at start). */
export function loadUapRules(): UapRules {
  const require = createRequire(import.meta.url);
  const source = parse(readFileSync(require.resolve('uap-core/regexes.yaml'), 'utf8')) as
    Record<string, Array<Record<string, string>>>;
  return {
    agent: compile(source.user_agent_parsers, AGENT_KEYS),
    os: compile(source.os_parsers, OS_KEYS),
    device: compile(source.device_parsers, DEVICE_KEYS),
  };
}

function compile(entries: Array<Record<string, string>>, keys: readonly string[]): Rule[] {
  return entries.map((entry) => ({
    regex: new RegExp(entry.regex, entry.regex_flag === 'i' ? 'i' : ''),
    replacements: keys.map((key) => entry[key]),
  }));
}

/** Applies the first matching rule; `slots` is how many values to produce (family + versions). */
export function matchRules(rules: readonly Rule[], ua: string, slots: number): UapMatch {
  for (const rule of rules) {
    const match = rule.regex.exec(ua);
    if (match === null) continue;
    const values: (string | null)[] = [];
    for (let slot = 0; slot < slots; slot++) {
      const template = rule.replacements[slot];
      values.push(template === undefined ? group(match, slot + 1) : substitute(template, match));
    }
    return { family: values[0] ?? 'Other', versions: values.slice(1) };
  }
  return { family: 'Other', versions: new Array<null>(slots - 1).fill(null) };
}

function group(match: RegExpExecArray, index: number): string | null {
  const value = match[index];
  if (value === undefined) return null;
  const trimmed = value.trim();
  return trimmed.length === 0 ? null : trimmed;
}

function substitute(template: string, match: RegExpExecArray): string | null {
  const value = template.includes('$')
    ? template.replace(/\$(\d)/g, (_, digit: string) => match[Number(digit)] ?? '')
    : template;
  const trimmed = value.trim();
  return trimmed.length === 0 ? null : trimmed;
}
