/**
 * The seed's number range is exact: -2^63 .. 2^63 - 1, judged from the number as written. A double
 * cannot tell 9223372036854775807 (in range) from 9223372036854775808 (out of range): both parse
 * to 2^63. So before JSON.parse, a text holding a run of 19 or more digits (a cheap test: ~2% of
 * the parse's time) has every number literal with such a run checked exactly, with BigInt, and an
 * out-of-range one rewritten to `1e400`, which parses to Infinity and is refused by the value check
 * like any other number out of range. Texts without such a run are not touched. Literals in
 * exponent form without 19 digits in a row (9.3e18) are judged by the double they parse to.
 */

/** 19 digits in a row, unrolled: V8 scans this several times faster than \d{19}. */
const LONG_DIGITS = /\d\d\d\d\d\d\d\d\d\d\d\d\d\d\d\d\d\d\d/;
/** A JSON string (skipped whole, escapes included) or a number literal. */
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
const LITERAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
const MAX = 2n ** 63n - 1n;
const MIN_MAGNITUDE = 2n ** 63n;
/** Past this exponent a non-zero literal is out of range whatever its digits. */
const EXPONENT_CAP = 40;

/** `text` with its out-of-range number literals written as ±1e400 (Infinity once parsed). */
export function markOutOfRangeNumbers(text: string): string {
  if (!LONG_DIGITS.test(text)) return text;
  return text.replace(TOKEN, (token) => (token.charCodeAt(0) !== 0x22 && token.length >= 19 && outOfRange(token)
    ? (token.charCodeAt(0) === 0x2d ? '-1e400' : '1e400')
    : token));
}

/** True when the literal's exact value lies outside -2^63 .. 2^63 - 1. */
export function outOfRange(literal: string): boolean {
  const match = LITERAL.exec(literal);
  if (match === null) return false;
  const negative = match[1] === '-';
  const fraction = match[3] ?? '';
  const digits = BigInt(match[2]! + fraction);
  if (digits === 0n) return false;
  const exponent = Number(match[4] ?? 0) - fraction.length;
  const bound = negative ? MIN_MAGNITUDE : MAX;
  if (exponent >= 0) return exponent > EXPONENT_CAP || digits * 10n ** BigInt(exponent) > bound;
  if (exponent < -EXPONENT_CAP - fraction.length) return false; // a tiny number
  return digits > bound * 10n ** BigInt(-exponent);
}
