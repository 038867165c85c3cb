#!/usr/bin/env node
/**
 * Rewrites .eslint-size-exceptions.json from the current tree: every production file over 400
 * lines and every function over 70 (eslint.config.mjs) with its count today. Run it after
 * shrinking an excepted file or function, so its recorded limit follows it down (what now fits
 * the plain limit leaves the list).
 *
 * It never raises a recorded number, nor adds an entry, unless given --allow-growth: then it lists
 * what grew and writes nothing, exit 1. (A renamed function is a new entry.)
 *
 *   node scripts/size-exceptions.mjs                 shrink / drop entries
 *   node scripts/size-exceptions.mjs --allow-growth  also raise or add them (say why in the commit)
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ESLint } from 'eslint';
import { EXCEPTIONS_FILE, readExceptions, sizeConfig } from '../eslint.config.mjs';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const COMMENT = 'Production files and functions over the size limits of eslint.config.mjs, with '
  + 'their line counts when recorded: each is its own limit and may only shrink. Written by '
  + 'scripts/size-exceptions.mjs; do not raise a number by hand.';

const { values } = parseArgs({ options: { 'allow-growth': { type: 'boolean', default: false } } });

/** Today's sizes over the plain limits: { 'max-lines': {file: n}, 'max-lines-per-function': {file: {name: n}} }. */
async function measure() {
  const eslint = new ESLint({
    cwd: ROOT,
    overrideConfigFile: true,
    overrideConfig: [{ ignores: ['dist/', 'node_modules/'] }, ...sizeConfig({})],
  });
  const files = {};
  const functions = {};
  const other = [];
  for (const result of await eslint.lintFiles(['engine', 'server'])) {
    const file = path.relative(ROOT, result.filePath).split(path.sep).join('/');
    for (const message of result.messages) {
      const fn = /^(.+) has too many lines \((\d+)\)/.exec(message.message);
      const whole = /^File has too many lines \((\d+)\)/.exec(message.message);
      if (message.ruleId === 'max-lines' && whole) {
        files[file] = Number(whole[1]);
      } else if (message.ruleId === 'size/max-lines-per-function' && fn) {
        (functions[file] ??= {})[fn[1]] = Number(fn[2]);
      } else {
        other.push(`  ${file}:${message.line}: ${message.message}`);
      }
    }
  }
  if (other.length > 0) {
    // A parse error or a stray directive: the counts would be incomplete, so nothing is written.
    console.error(`${EXCEPTIONS_FILE} not written: ESLint said more than sizes:\n${other.join('\n')}`);
    process.exit(1);
  }
  return { 'max-lines': files, 'max-lines-per-function': functions };
}

/** [where, recorded or undefined, now] for every entry of `now` that is new or larger than in `old`. */
function growth(old, now) {
  const grown = [];
  for (const [file, n] of Object.entries(now['max-lines'])) {
    const was = old['max-lines']?.[file];
    if (was === undefined || n > was) grown.push([file, was, n]);
  }
  for (const [file, byName] of Object.entries(now['max-lines-per-function'])) {
    for (const [name, n] of Object.entries(byName)) {
      const was = old['max-lines-per-function']?.[file]?.[name];
      if (was === undefined || n > was) grown.push([`${file}: ${name}`, was, n]);
    }
  }
  return grown;
}

/** The same object with keys in order at every level, so the file diffs cleanly. */
function sorted(value) {
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sorted(value[key])]));
}

const old = readExceptions();
const now = await measure();
const grown = growth(old, now);
if (grown.length > 0 && !values['allow-growth']) {
  console.error(`${EXCEPTIONS_FILE} not written: these are new or larger than recorded.`);
  for (const [where, was, n] of grown) console.error(`  ${where}: ${was ?? 'not listed'} -> ${n}`);
  console.error('Shrink them, or run again with --allow-growth and say why in the commit.');
  process.exit(1);
}
for (const [where, was, n] of growth(now, old)) console.log(`  ${where}: ${n} -> ${was ?? 'fits the limit'}`);
const out = { _comment: COMMENT, ...sorted(now) };
writeFileSync(path.join(ROOT, EXCEPTIONS_FILE), `${JSON.stringify(out, null, 2)}\n`);
const count = (e) => Object.keys(e['max-lines'] ?? {}).length
  + Object.values(e['max-lines-per-function'] ?? {}).reduce((sum, byName) => sum + Object.keys(byName).length, 0);
console.log(`${EXCEPTIONS_FILE}: ${count(now)} exceptions (was ${count(old)})`
  + (grown.length > 0 ? `, ${grown.length} new or grown (--allow-growth)` : ''));
