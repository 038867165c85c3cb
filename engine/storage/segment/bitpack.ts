/**
 * Dictionary codes bit-packed: each row's code in `bits` bits (the fewest that hold the
 * dictionary's greatest code), row after row, least significant bit first: the bit order of an
 * Arrow bitmap, so the packed bytes are the values of a Bool array of rows × bits (layout.ts
 * stores them as FixedSizeList<Bool>(bits)). A segment stores a column's codes this way when that
 * is no larger than their ZSTD frame (encode-column.ts): codes spread over a dictionary of
 * hundreds or thousands of entries (paths, ids) leave ZSTD's byte-wise entropy coder little to
 * find, and unpacking is 4-5x as fast as decoding the frame (bench/HISTORY.md, 2026-11-29).
 *
 * Unpacking runs 32 rows at a time with the shifts of each row spelled out, one function per
 * width, made at first use (the compiler keeps every shift a constant: 0.7-0.8 ns a row on the
 * bench machine, against ~4 for a loop that computes them).
 */
import os from 'node:os';
import { assert } from '../../base/assert.js';

/** Codes wider than this are not packed (Int32 codes of a dictionary of 2^31 entries or more). */
export const PACKED_BITS_MAX = 31;

// Packed words are read and written as Uint32 in the machine's order: the layout is
// little-endian (Arrow's), so a big-endian machine would need byte swaps this module lacks.
assert(os.endianness() === 'LE', 'bit-packed codes assume a little-endian machine');

/** The fewest bits that hold codes 0 .. entries - 1 (at least 1). */
export function bitsFor(entries: number): number {
  let bits = 1;
  while (bits < PACKED_BITS_MAX + 1 && 2 ** bits < entries) bits++;
  return bits;
}

/** The bytes `rows` codes of `bits` bits take packed: whole 8-byte words, as Arrow pads buffers. */
export function packedBytes(rows: number, bits: number): number {
  return Math.ceil((rows * bits) / 64) * 8;
}

/** `codes` (each in 0 .. 2^bits - 1) packed into packedBytes(codes.length, bits) bytes. */
export function packCodes(codes: Int8Array | Int16Array | Int32Array, bits: number): Uint8Array {
  assert(bits >= 1 && bits <= PACKED_BITS_MAX, 'a packed width is 1 to 31 bits');
  const bytes = new Uint8Array(packedBytes(codes.length, bits));
  const words = new Uint32Array(bytes.buffer);
  let bit = 0;
  for (let row = 0; row < codes.length; row++) {
    const code = codes[row];
    const word = bit >>> 5;
    const shift = bit & 31;
    words[word] |= code << shift;
    if (shift + bits > 32) words[word + 1] |= code >>> (32 - shift);
    bit += bits;
  }
  return bytes;
}

type Unpacker = (words: Uint32Array, out: Int8Array | Int16Array | Int32Array, blocks: number) => void;

const unpackers: (Unpacker | undefined)[] = [];

/**
 * Unpacks `out.length` codes of `bits` bits from `bytes` (at least packedBytes' worth of whole
 * words, 4-aligned) into `out`.
 */
export function unpackCodes(bytes: Uint8Array, bits: number, out: Int8Array | Int16Array | Int32Array): void {
  assert(bits >= 1 && bits <= PACKED_BITS_MAX, 'a packed width is 1 to 31 bits');
  const rows = out.length;
  assert(bytes.byteLength * 8 >= rows * bits, 'packed codes cover every row');
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
  const blocks = rows >>> 5;
  (unpackers[bits] ??= makeUnpacker(bits))(words, out, blocks);
  const mask = 2 ** bits - 1;
  for (let row = blocks * 32; row < rows; row++) {
    const bit = row * bits;
    const word = bit >>> 5;
    const shift = bit & 31;
    let code = words[word] >>> shift;
    if (shift + bits > 32) code |= words[word + 1] << (32 - shift);
    out[row] = code & mask;
  }
}

/** The unpacker of `bits`-bit codes: per block of 32 rows, its `bits` words read once. */
function makeUnpacker(bits: number): Unpacker {
  const mask = 2 ** bits - 1;
  let body = 'let w = 0;\nlet o = 0;\nfor (let b = 0; b < blocks; b++) {\n';
  for (let k = 0; k < bits; k++) body += `const w${k} = words[w + ${k}];\n`;
  for (let row = 0; row < 32; row++) {
    const bit = row * bits;
    const word = bit >>> 5;
    const shift = bit & 31;
    let value = shift === 0 ? `w${word}` : `(w${word} >>> ${shift})`;
    if (shift + bits > 32) value = `(${value} | (w${word + 1} << ${32 - shift}))`;
    body += `out[o + ${row}] = ${value} & ${mask};\n`;
  }
  body += `w += ${bits};\no += 32;\n}`;
  // Generated from the width alone (a number 1..31 checked above), never from stored bytes.
  return new Function('words', 'out', 'blocks', body) as Unpacker;
}
