/**
 * Size limits for the production code (engine/, server/), checked by `npm run check` after
 * dependency-cruiser: a file has at most 400 lines and a function at most 70, blank and
 * comment-only lines not counted. No other rule: this config keeps the code's shape, not its style.
 *
 * What was larger when the limits came is listed in .eslint-size-exceptions.json with its size
 * then, and that number is its limit: an excepted file or function may shrink, never grow. After
 * shrinking one, `node scripts/size-exceptions.mjs` writes the smaller numbers (and drops what now
 * fits); it refuses to raise a number or add an entry unless given --allow-growth.
 *
 * Inline `eslint-disable` comments have no effect here (noInlineConfig): the exceptions file is
 * the one place a limit is relaxed, so every exception is in one reviewed list.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tsParser from '@typescript-eslint/parser';
import { builtinRules } from 'eslint/use-at-your-own-risk';

const ROOT = path.dirname(fileURLToPath(import.meta.url));

/** The limits, and the files they apply to (production code; test/ and bench/ are not held to them). */
export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 70;
export const FILES = ['engine/**/*.{ts,cjs}', 'server/**/*.{ts,cjs}'];
export const EXCEPTIONS_FILE = '.eslint-size-exceptions.json';

const COUNTING = { skipBlankLines: true, skipComments: true };

/**
 * ESLint's max-lines-per-function, with a limit per excepted function. The core rule takes one
 * limit per file; this runs it at the common limit and lets a listed function through while it is
 * no longer than its recorded count. A function is known by the core rule's name for it ("Method
 * 'append'", "Arrow function 'flush'"); a name that exceeds the limit twice in one file gets " #2",
 * " #3" in source order.
 */
const maxLinesPerFunction = {
  meta: {
    type: 'suggestion',
    docs: { description: 'max-lines-per-function with per-function recorded exceptions' },
    schema: [{
      type: 'object',
      properties: {
        max: { type: 'integer', minimum: 0 },
        exceptions: { type: 'object' },
      },
      additionalProperties: false,
    }],
    messages: {
      exceed: '{{key}} has too many lines ({{lineCount}}). Maximum allowed is {{max}}.',
      grew: '{{key}} has too many lines ({{lineCount}}). Maximum allowed is {{max}}; its recorded '
        + 'exception is {{recorded}} (' + EXCEPTIONS_FILE + '), which it may not exceed.',
    },
  },
  create(context) {
    const { max, exceptions = {} } = context.options[0] ?? {};
    const file = path.relative(ROOT, context.filename).split(path.sep).join('/');
    const recordedForFile = exceptions[file] ?? {};
    const seen = new Map();
    const core = builtinRules.get('max-lines-per-function');
    const report = (descriptor) => {
      const { name, lineCount } = descriptor.data;
      const n = (seen.get(name) ?? 0) + 1;
      seen.set(name, n);
      const key = n === 1 ? name : `${name} #${n}`;
      const recorded = recordedForFile[key];
      if (recorded !== undefined && lineCount <= recorded) return;
      context.report({
        node: descriptor.node,
        messageId: recorded === undefined ? 'exceed' : 'grew',
        data: { key, lineCount, max, recorded },
      });
    };
    return core.create(Object.create(context, {
      options: { value: [{ max, ...COUNTING }] },
      report: { value: report },
    }));
  },
};

/** The config for the given exceptions ({} gives the plain limits, as scripts/size-exceptions.mjs measures). */
export function sizeConfig(exceptions) {
  const fileExceptions = exceptions['max-lines'] ?? {};
  return [
    {
      files: FILES,
      languageOptions: { parser: tsParser },
      linterOptions: { noInlineConfig: true, reportUnusedDisableDirectives: 'off' },
      plugins: { size: { rules: { 'max-lines-per-function': maxLinesPerFunction } } },
      rules: {
        'max-lines': ['error', { max: MAX_FILE_LINES, ...COUNTING }],
        'size/max-lines-per-function': ['error', {
          max: MAX_FUNCTION_LINES,
          exceptions: exceptions['max-lines-per-function'] ?? {},
        }],
      },
    },
    // An excepted file's limit is its recorded count.
    ...Object.entries(fileExceptions).map(([file, count]) => ({
      files: [file],
      rules: { 'max-lines': ['error', { max: count, ...COUNTING }] },
    })),
  ];
}

/** The recorded exceptions; none when the file is absent. */
export function readExceptions() {
  try {
    return JSON.parse(readFileSync(path.join(ROOT, EXCEPTIONS_FILE), 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return {};
    throw error;
  }
}

export default [
  { ignores: ['dist/', 'node_modules/', '.cache/', '.tap/', 'data/'] },
  ...sizeConfig(readExceptions()),
];
