/**
 * The filter loop over a string column's codes, for the rows whose code a match table marks
 * (filter-eval.ts applyStrings, when every row is a string).
 */

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
