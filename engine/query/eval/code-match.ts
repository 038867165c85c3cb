/**
 * The filter loop over a string column's codes, for the rows whose code a match table marks
 * (filter-eval.ts applyStrings, when every row is a string), and that filter fused with a count.
 */
import { COUNT_LANES_ENTRIES_MAX } from '../../base/limits.js';
import type { Codes } from '../../storage/chunk.js';

/**
 * The rows (`rows`, or 0..n-1 when null) whose code `match` marks, branch-free: every candidate
 * is written, and the cursor moves past the matches. One copy per code width, since V8 keeps type
 * feedback per function: one loop fed Int8, Int16 and Int32 codes (devices, paths, ids) compiles a
 * polymorphic element load.
 */
export function matchCodes8(str: Int8Array, match: Uint8Array, rows: Int32Array | null, dst: Int32Array, n: number): number {
  let w = 0;
  if (rows === null) for (let i = 0; i < n; i++) { dst[w] = i; w += match[str[i]]; }
  else for (let k = 0; k < n; k++) { const i = rows[k]; dst[w] = i; w += match[str[i]]; }
  return w;
}

/** matchCodes8 for Int16 codes. */
export function matchCodes16(str: Int16Array, match: Uint8Array, rows: Int32Array | null, dst: Int32Array, n: number): number {
  let w = 0;
  if (rows === null) for (let i = 0; i < n; i++) { dst[w] = i; w += match[str[i]]; }
  else for (let k = 0; k < n; k++) { const i = rows[k]; dst[w] = i; w += match[str[i]]; }
  return w;
}

/** matchCodes8 for Int32 codes. */
export function matchCodes32(str: Int32Array, match: Uint8Array, rows: Int32Array | null, dst: Int32Array, n: number): number {
  let w = 0;
  if (rows === null) for (let i = 0; i < n; i++) { dst[w] = i; w += match[str[i]]; }
  else for (let k = 0; k < n; k++) { const i = rows[k]; dst[w] = i; w += match[str[i]]; }
  return w;
}

type CountKernel = (filter: Codes, group: Codes, match: Uint8Array, counts: Int32Array, n: number) => void;

const countKernels = new Map<string, CountKernel>();

/**
 * Four rows a turn, each into its own lane of counts (code * 4 + lane): a run of one code (a
 * popular path) is then four chains of additions, not one, each waiting on its own last store.
 */
const COUNT_LANES_SOURCE = `let i = 0;
for (; i + 4 <= n; i += 4) {
  counts[group[i] << 2] += match[filter[i]];
  counts[(group[i + 1] << 2) | 1] += match[filter[i + 1]];
  counts[(group[i + 2] << 2) | 2] += match[filter[i + 2]];
  counts[(group[i + 3] << 2) | 3] += match[filter[i + 3]];
}
for (; i < n; i++) counts[group[i] << 2] += match[filter[i]];`;

const COUNT_SOURCE = 'for (let i = 0; i < n; i++) counts[group[i]] += match[filter[i]];';

/**
 * Per code of `group`, the rows 0..n-1 whose `filter` code `match` marks, into `counts` (zeroed by
 * the caller, `entries` of `group`'s dictionary, 4 × entries long when entries is at most
 * COUNT_LANES_ENTRIES_MAX), then summed into counts[0 .. entries): a filter and a count grouped by
 * a string column fused into one branch-free pass over the stored codes, with no row index written
 * or read (execute.ts CodeCounts.countMatching). One kernel per pair of code widths, each its own
 * function (so its own type feedback, as above): a constant source compiled once per pair.
 */
export function countMatching(filter: Codes, group: Codes, match: Uint8Array, counts: Int32Array, n: number, entries: number): void {
  const lanes = entries <= COUNT_LANES_ENTRIES_MAX;
  const key = `${filter.BYTES_PER_ELEMENT}:${group.BYTES_PER_ELEMENT}:${lanes}`;
  let kernel = countKernels.get(key);
  if (kernel === undefined) {
    // Source text from the constants above only: no stored byte or request value reaches it.
    kernel = new Function('filter', 'group', 'match', 'counts', 'n', lanes ? COUNT_LANES_SOURCE : COUNT_SOURCE) as CountKernel;
    countKernels.set(key, kernel);
  }
  kernel(filter, group, match, counts, n);
  if (!lanes) return;
  for (let code = 0; code < entries; code++) {
    const at = code << 2;
    counts[code] = counts[at] + counts[at + 1] + counts[at + 2] + counts[at + 3];
  }
}
