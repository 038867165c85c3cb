#!/usr/bin/env node
/**
 * The test reporter of `npm test` (.taprc runs it with tap's raw TAP on stdin): one line per test
 * file as it finishes (ok or FAIL, assertions, seconds), the names of failed assertions under it,
 * each failure's diagnostics (tap's YAML block: the message, the stack's first lines, the values
 * compared; a few lines each), and a short summary at the end. The full TAP goes to
 * .tap/last-run.tap. The summary ends with tap's own line, `# { total: N, pass: P, fail: F }`,
 * which .ci/run reads. Exits non-zero when anything failed (tap also does).
 */
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const FULL = path.join('.tap', 'last-run.tap');
fs.mkdirSync(path.dirname(FULL), { recursive: true });
const full = fs.createWriteStream(FULL);

const startedMs = Date.now();
let files = 0;
let failedFiles = 0;
let summary = '';
/** Names of failed assertions inside the file being run, innermost subtests first. */
let failures = [];
/** Subtest names currently open, by indent depth. */
const open = [];
const failedNames = [];
/** Lines of a failure's YAML diagnostics printed under its name, and failures so detailed a file. */
const DIAG_LINES_MAX = 24;
const DIAG_FAILURES_MAX = 5;
/** The failure whose diagnostics block is being read: its indent and the lines kept so far. */
let diag = null;

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of input) {
  full.write(`${line}\n`);
  if (/^# \{ total: \d+/.test(line)) summary = line;
  if (diag !== null) {
    if (line === `${diag.indent}  ---`) continue;
    if (line === `${diag.indent}  ...` || !line.startsWith(`${diag.indent}  `)) {
      diag = null;
    } else {
      if (diag.lines.length < DIAG_LINES_MAX) diag.lines.push(line.slice(diag.indent.length + 2));
      continue;
    }
  }
  const subtest = /^( *)# Subtest: (.*)$/.exec(line);
  if (subtest) {
    open[subtest[1].length / 4] = subtest[2];
    continue;
  }
  const result = /^( *)(not ok|ok) \d+ - (.*?)(?: # (time=[\d.]+ms|TODO.*|SKIP.*))?$/.exec(line);
  if (!result) continue;
  const depth = result[1].length / 4;
  const ok = result[2] === 'ok';
  if (depth === 0) {
    files++;
    const seconds = ((Number(/time=([\d.]+)ms/.exec(line)?.[1] ?? 0)) / 1000).toFixed(1);
    if (ok) {
      process.stdout.write(`ok    ${result[3]} (${seconds} s)\n`);
    } else {
      failedFiles++;
      process.stdout.write(`FAIL  ${result[3]} (${seconds} s)\n`);
      for (const [i, failure] of failures.entries()) {
        process.stdout.write(`        ${failure.name}\n`);
        if (i < DIAG_FAILURES_MAX) for (const l of failure.lines) process.stdout.write(`            ${l}\n`);
      }
      failedNames.push(...failures.map((failure) => `${result[3]}: ${failure.name}`));
    }
    failures = [];
  } else if (!ok && !/ # TODO/.test(line)) {
    // A failed assertion (or a subtest that failed because of one): name it with its subtests.
    const name = [...open.slice(1, depth).filter(Boolean), result[3]].join(' › ');
    // A subtest that failed because an assertion inside it did is named by that assertion already.
    if (!failures.some((earlier) => earlier.name.startsWith(`${name} › `))) {
      const failure = { name, lines: [] };
      failures.push(failure);
      diag = { indent: result[1], lines: failure.lines };
    }
  }
}
full.end();
const minutes = ((Date.now() - startedMs) / 60_000).toFixed(1);
process.stdout.write(`\n${files} test files in ${minutes} min, ${failedFiles} failed. Full TAP: ${FULL}\n`);
if (failedNames.length > 0) {
  process.stdout.write('Failed:\n');
  for (const name of failedNames.slice(0, 50)) process.stdout.write(`  ${name}\n`);
}
if (summary !== '') process.stdout.write(`${summary}\n`);
process.exitCode = failedFiles > 0 || /fail: [1-9]/.test(summary) ? 1 : 0;
