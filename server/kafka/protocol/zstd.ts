/**
 * Zstandard frames (RFC 8878) inflated by @toondepauw/node-zstd, the native binding of libzstd
 * the engine already uses for segments, within a bound settled before it runs (compression.ts
 * says how): frame and block headers are walked here, and a frame that could pass the bound has
 * its exact content size read from its literals headers and its sequences' match lengths first.
 */
import { Decoder as ZstdDecoder } from '@toondepauw/node-zstd';
import { ZSTD_WINDOW_BYTES_MAX } from '../../common/limits.js';
import { DecompressError, declaredTooLarge, need, tooLarge } from './decompress-error.js';

const ZSTD_MAGIC = 0xfd2fb528;
const ZSTD_BLOCK_MAX = 128 * 1024;

const zstdDecoder = new ZstdDecoder();

interface ZstdFrame {
  bytes: Buffer;
  contentSize: number | null;
  /** Offset in `bytes` of the first block header. */
  blocksAt: number;
  /** The most the frame's blocks can hold: raw and RLE blocks their stated size, others a block maximum. */
  contentBound: number;
}

/**
 * Zstandard frames (RFC 8878): each frame's header and block headers are read here to find its
 * end and check it against the bound before libzstd sees it; then each frame is inflated alone by
 * the native binding, whose decoder has no output limit. It needs none when the frame's blocks
 * cannot hold more than the room left (libzstd refuses a block that inflates past the frame's block
 * maximum); otherwise the exact content size is read first, without inflating anything
 * (zstdContent), and the frame is refused at the block that passes the bound. The binding's output
 * lives outside V8's heap and is freed only on a later turn of the event loop (see
 * engine/storage/segment/arrow.ts); each batch's is bounded, and a produce request keeps its
 * batches' events until its turn ends anyway.
 */
export function unzstd(input: Buffer, outputBytesMax: number): Buffer {
  const frames = zstdFrames(input, outputBytesMax);
  const parts: Buffer[] = [];
  let total = 0;
  for (const frame of frames) {
    const room = outputBytesMax - total;
    if (frame.contentSize !== null && frame.contentSize > room) throw declaredTooLarge(frame.contentSize, room);
    if (frame.contentBound > room) zstdContent(frame, total, outputBytesMax);
    const out = zstdDecoder.decodeSync(frame.bytes);
    total += out.length;
    if (total > outputBytesMax) throw tooLarge(total, outputBytesMax);
    parts.push(out);
  }
  // One frame (every client's batch) is returned as the binding made it, without a copy.
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}

function zstdFrames(input: Buffer, outputBytesMax: number): ZstdFrame[] {
  const frames: ZstdFrame[] = [];
  let at = 0;
  // Bounded by the input: each turn consumes a frame header or a 3-byte block header.
  while (at < input.length) {
    const start = at;
    need(input, at, 4, 'zstd frame');
    const magic = input.readUInt32LE(at);
    if ((magic & 0xfffffff0) === 0x184d2a50) { // skippable frame
      need(input, at, 8, 'zstd skippable frame');
      at += 8 + input.readUInt32LE(at + 4);
      if (at > input.length) throw new DecompressError('truncated zstd skippable frame');
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw new DecompressError(`zstd frame magic 0x${magic.toString(16)}`);
    need(input, at, 5, 'zstd frame header');
    const fhd = input[at + 4]!;
    const fcsFlag = fhd >> 6;
    const singleSegment = (fhd & 0x20) !== 0;
    const checksum = (fhd & 0x04) !== 0;
    const dictBytes = [0, 1, 2, 4][fhd & 0x03]!;
    const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : 1 << fcsFlag;
    at += 5;
    let window = 0;
    if (!singleSegment) {
      need(input, at, 1, 'zstd frame header');
      const descriptor = input[at]!;
      const base = 2 ** (10 + (descriptor >> 3));
      window = base + (base / 8) * (descriptor & 0x07);
      at += 1;
    }
    at += dictBytes;
    need(input, at, fcsBytes, 'zstd frame header');
    let contentSize: number | null = null;
    if (fcsBytes > 0) {
      let size = 0;
      for (let i = fcsBytes - 1; i >= 0; i--) size = size * 256 + input[at + i]!;
      if (fcsBytes === 2) size += 256;
      contentSize = size;
      at += fcsBytes;
    }
    if (singleSegment) window = contentSize!;
    // libzstd allocates the window (or the declared content, when smaller) to inflate into:
    // refuse either past its bound before it does.
    if (contentSize !== null && contentSize > outputBytesMax) throw declaredTooLarge(contentSize, outputBytesMax);
    if (window > ZSTD_WINDOW_BYTES_MAX) {
      throw new DecompressError(`zstd window of ${window} bytes > ${ZSTD_WINDOW_BYTES_MAX}`);
    }
    const blockMax = Math.min(window, ZSTD_BLOCK_MAX);
    const blocksAt = at - start;
    let contentBound = 0;
    for (let last = false; !last;) {
      need(input, at, 3, 'zstd block header');
      const header = input[at]! | (input[at + 1]! << 8) | (input[at + 2]! << 16);
      at += 3;
      last = (header & 1) === 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      if (type === 3) throw new DecompressError('zstd reserved block type');
      // Raw and RLE sizes are the inflated size, compressed ones the input size: both at most
      // the block maximum, which libzstd also holds a compressed block's output to.
      if (size > blockMax) throw new DecompressError(`zstd block of ${size} bytes > ${blockMax}`);
      contentBound += type === 2 ? blockMax : size;
      at += type === 1 ? 1 : size;
      if (at > input.length) throw new DecompressError('truncated zstd block');
    }
    if (checksum) at += 4;
    if (at > input.length) throw new DecompressError('truncated zstd checksum');
    frames.push({ bytes: input.subarray(start, at), contentSize, blocksAt, contentBound });
  }
  return frames;
}

/**
 * The content size of one frame, block by block, without inflating it: raw and RLE blocks state
 * theirs; a compressed block's is its literals' regenerated size (in the literals header) plus the
 * match lengths of its sequences, which are read off the sequences' FSE bitstream (RFC 8878
 * §3.1.1.3.2) without decoding literals or copying anything. Throws tooLarge, with the total after
 * the block that passes `outputBytesMax` (where a streaming decoder would stop), or a
 * DecompressError for a malformed block; returns `total` plus the frame's content when that fits.
 * The frame's headers were checked by zstdFrames.
 */
function zstdContent(frame: ZstdFrame, total: number, outputBytesMax: number): number {
  const src = frame.bytes;
  const tables: SequenceTables = { ll: null, of: null, ml: null };
  let at = frame.blocksAt;
  for (let last = false; !last;) {
    const header = src[at]! | (src[at + 1]! << 8) | (src[at + 2]! << 16);
    at += 3;
    last = (header & 1) === 1;
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    total += type === 2 ? compressedBlockContent(src, at, at + size, tables) : size;
    if (total > outputBytesMax) throw tooLarge(total, outputBytesMax);
    at += type === 1 ? 1 : size;
  }
  return total;
}

/** The content size of zstd frames as the bound check reads it, without inflating (for its tests). */
export function zstdContentSize(input: Buffer): number {
  let total = 0;
  for (const frame of zstdFrames(input, Number.MAX_SAFE_INTEGER)) total = zstdContent(frame, total, Number.MAX_SAFE_INTEGER);
  return total;
}

/** A literals section (§3.1.1.3.1.1): its regenerated size and where it ends. */
function literalsSection(src: Buffer, at: number, end: number): [literals: number, literalsEnd: number] {
  // Literals section header (§3.1.1.3.1.1): type (2 bits), size format (2), then the sizes.
  if (at >= end) throw new DecompressError('zstd block without a literals section');
  const b0 = src[at]!;
  const literalsType = b0 & 3;
  const sizeFormat = (b0 >> 2) & 3;
  let literals: number;
  let literalsEnd: number;
  if (literalsType < 2) { // raw or RLE: regenerated size only
    const headerBytes = (sizeFormat & 1) === 0 ? 1 : sizeFormat === 1 ? 2 : 3;
    if (at + headerBytes > end) throw new DecompressError('zstd literals header past its block');
    literals = headerBytes === 1 ? b0 >> 3
      : headerBytes === 2 ? (b0 >> 4) + (src[at + 1]! << 4)
        : (b0 >> 4) + (src[at + 1]! << 4) + (src[at + 2]! << 12);
    literalsEnd = at + headerBytes + (literalsType === 0 ? literals : 1);
  } else { // Huffman-compressed: regenerated and compressed sizes of 10, 10, 14 or 18 bits
    const sizeBits = sizeFormat < 2 ? 10 : sizeFormat === 2 ? 14 : 18;
    const headerBytes = (4 + 2 * sizeBits) / 8;
    if (at + headerBytes > end) throw new DecompressError('zstd literals header past its block');
    let word = 0;
    for (let i = headerBytes - 1; i >= 0; i--) word = word * 256 + src[at + i]!;
    const sizes = Math.floor(word / 16);
    literals = sizes % 2 ** sizeBits;
    literalsEnd = at + headerBytes + Math.floor(sizes / 2 ** sizeBits);
  }
  if (literalsEnd > end) throw new DecompressError('zstd literals past their block');
  return [literals, literalsEnd];
}

/** The content size of a compressed block of `src[at, end)`. */
function compressedBlockContent(src: Buffer, at: number, end: number, tables: SequenceTables): number {
  const [literals, literalsEnd] = literalsSection(src, at, end);

  // Sequences section header (§3.1.1.3.2.1): the number of sequences, then the table modes.
  at = literalsEnd;
  if (at >= end) throw new DecompressError('zstd block without a sequences section');
  const s0 = src[at]!;
  let sequences: number;
  if (s0 < 128) {
    sequences = s0;
    at += 1;
  } else if (s0 < 255) {
    if (at + 2 > end) throw new DecompressError('zstd sequences header past its block');
    sequences = ((s0 - 128) << 8) + src[at + 1]!;
    at += 2;
  } else {
    if (at + 3 > end) throw new DecompressError('zstd sequences header past its block');
    sequences = src[at + 1]! + (src[at + 2]! << 8) + 0x7f00;
    at += 3;
  }
  if (sequences === 0) return literals; // tables are kept for the next block as they are
  if (at >= end) throw new DecompressError('zstd sequences header past its block');
  const modes = src[at++]!;
  if ((modes & 3) !== 0) throw new DecompressError('zstd sequences header reserved bits');
  let table: FseTable;
  [table, at] = sequenceTable(src, at, end, modes >> 6, tables.ll, LL_PREDEFINED, LL_CODE_MAX, LL_LOG_MAX);
  const ll = tables.ll = table;
  [table, at] = sequenceTable(src, at, end, (modes >> 4) & 3, tables.of, OF_PREDEFINED, OF_CODE_MAX, OF_LOG_MAX);
  const of = tables.of = table;
  [table, at] = sequenceTable(src, at, end, (modes >> 2) & 3, tables.ml, ML_PREDEFINED, ML_CODE_MAX, ML_LOG_MAX);
  const ml = tables.ml = table;

  // The bitstream is read backwards from its last byte, whose highest set bit ends it (§4.1).
  if (at >= end || src[end - 1] === 0) throw new DecompressError('zstd sequences bitstream');
  const origin = at * 8;
  let bit = (end - 1 - at) * 8 + 31 - Math.clz32(src[end - 1]!);
  const read = (bits: number): number => {
    bit -= bits;
    if (bit < 0) throw new DecompressError('zstd sequences bitstream overrun');
    if (bits === 0) return 0;
    const p = origin + bit;
    const i = p >> 3;
    return (((src[i]! | (src[i + 1]! << 8) | (src[i + 2]! << 16)) >>> (p & 7)) & ((1 << bits) - 1));
  };
  let llState = read(ll.log);
  let ofState = read(of.log);
  let mlState = read(ml.log);
  let matched = 0;
  let literalsUsed = 0;
  for (let n = 1; ; n++) {
    const llCode = ll.symbol[llState]!;
    const mlCode = ml.symbol[mlState]!;
    // Offset, match length and literal length extra bits, in that order; the offset's are skipped.
    bit -= of.symbol[ofState]!;
    if (bit < 0) throw new DecompressError('zstd sequences bitstream overrun');
    matched += ML_BASE[mlCode]! + read(ML_BITS[mlCode]!);
    literalsUsed += LL_BASE[llCode]! + read(LL_BITS[llCode]!);
    if (n === sequences) break;
    llState = ll.base[llState]! + read(ll.bits[llState]!);
    mlState = ml.base[mlState]! + read(ml.bits[mlState]!);
    ofState = of.base[ofState]! + read(of.bits[ofState]!);
  }
  if (literalsUsed > literals) throw new DecompressError('zstd sequences use more literals than their block holds');
  return literals + matched;
}

/** An FSE decoding table (RFC 8878 §4.1.1): per state its symbol, and how to reach the next state. */
interface FseTable { log: number; symbol: Uint8Array; bits: Uint8Array; base: Uint16Array }
/** The literal length, offset and match length tables a later block may repeat (Repeat_Mode). */
interface SequenceTables { ll: FseTable | null; of: FseTable | null; ml: FseTable | null }

const LL_CODE_MAX = 35;
const ML_CODE_MAX = 52;
const OF_CODE_MAX = 31;
const LL_LOG_MAX = 9;
const ML_LOG_MAX = 9;
const OF_LOG_MAX = 8;
const LL_BITS = [...Array<number>(16).fill(0), 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
const ML_BITS = [...Array<number>(32).fill(0), 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
const LL_BASE = baselines(LL_BITS, 0);
const ML_BASE = baselines(ML_BITS, 3);
// Predefined distributions (§3.1.1.3.2.2); -1 is a probability "less than 1".
const LL_PREDEFINED = fseTable([
  4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
  -1, -1, -1, -1,
], 6);
const ML_PREDEFINED = fseTable([
  1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
], 6);
const OF_PREDEFINED = fseTable([
  1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
], 5);

/** Each code's baseline: the first is `first`, each next one past the values of the previous code's extra bits. */
function baselines(bits: number[], first: number): number[] {
  const out: number[] = [];
  for (const extra of bits) {
    out.push(first);
    first += 2 ** extra;
  }
  return out;
}

/** The table a sequences section asks for by its 2-bit mode, and where the section goes on. */
function sequenceTable(
  src: Buffer, at: number, end: number, mode: number, previous: FseTable | null,
  predefined: FseTable, codeMax: number, logMax: number,
): [FseTable, number] {
  switch (mode) {
    case 0: // Predefined_Mode
      return [predefined, at];
    case 1: { // RLE_Mode: one symbol, no state bits
      if (at >= end) throw new DecompressError('zstd sequences header past its block');
      const symbol = src[at]!;
      if (symbol > codeMax) throw new DecompressError(`zstd sequence code ${symbol} > ${codeMax}`);
      return [{ log: 0, symbol: Uint8Array.of(symbol), bits: Uint8Array.of(0), base: Uint16Array.of(0) }, at + 1];
    }
    case 2: // FSE_Compressed_Mode
      return readFseTable(src, at, end, codeMax, logMax);
    default: // Repeat_Mode
      if (previous === null) throw new DecompressError('zstd sequences repeat a table before any');
      return [previous, at];
  }
}

/** An FSE table description (§4.1.1): accuracy log, then each symbol's normalized count. */
function readFseTable(src: Buffer, at: number, end: number, codeMax: number, logMax: number): [FseTable, number] {
  if (at >= end) throw new DecompressError('zstd FSE table past its block');
  const log = (src[at]! & 15) + 5;
  if (log > logMax) throw new DecompressError(`zstd FSE accuracy log ${log} > ${logMax}`);
  const peek = (bit: number, bits: number): number => {
    const i = bit >> 3;
    const word = (i < end ? src[i]! : 0) | (i + 1 < end ? src[i + 1]! << 8 : 0) | (i + 2 < end ? src[i + 2]! << 16 : 0);
    return (word >>> (bit & 7)) & ((1 << bits) - 1);
  };
  const counts: number[] = [];
  let bit = at * 8 + 4;
  let remaining = (1 << log) + 1;
  let threshold = 1 << log;
  let bits = log + 1;
  while (remaining > 1) {
    if (counts.length > codeMax) throw new DecompressError('zstd FSE table of too many symbols');
    const value = peek(bit, bits);
    const max = 2 * threshold - 1 - remaining;
    let count: number;
    if ((value & (threshold - 1)) < max) {
      count = value & (threshold - 1);
      bit += bits - 1;
    } else {
      count = value >= threshold ? value - max : value;
      bit += bits;
    }
    count -= 1;
    remaining -= Math.abs(count);
    counts.push(count);
    if (count === 0) { // a 2-bit repeat flag: that many more zeros, again while it is 3
      for (let repeat = 3; repeat === 3;) {
        repeat = peek(bit, 2);
        bit += 2;
        for (let i = 0; i < repeat; i++) counts.push(0);
      }
    }
    while (remaining < threshold) {
      bits -= 1;
      threshold >>= 1;
    }
  }
  const next = (bit + 7) >> 3;
  if (remaining !== 1 || counts.length > codeMax + 1 || next > end) throw new DecompressError('zstd FSE table');
  return [fseTable(counts, log), next];
}

/** The decoding table of normalized counts summing to 2^log (§4.1.1, "FSE decoding"). */
function fseTable(counts: number[], log: number): FseTable {
  const size = 1 << log;
  const symbol = new Uint8Array(size);
  const bits = new Uint8Array(size);
  const base = new Uint16Array(size);
  const next = new Uint16Array(counts.length);
  let high = size - 1;
  for (let s = 0; s < counts.length; s++) {
    if (counts[s] === -1) {
      symbol[high--] = s;
      next[s] = 1;
    } else {
      next[s] = counts[s]!;
    }
  }
  const step = (size >> 1) + (size >> 3) + 3;
  let position = 0;
  for (let s = 0; s < counts.length; s++) {
    for (let i = 0; i < counts[s]!; i++) {
      symbol[position] = s;
      do position = (position + step) & (size - 1); while (position > high);
    }
  }
  if (position !== 0) throw new DecompressError('zstd FSE table');
  for (let state = 0; state < size; state++) {
    const n = next[symbol[state]!]!++;
    bits[state] = log - (31 - Math.clz32(n));
    base[state] = (n << bits[state]!) - size;
  }
  return { log, symbol, bits, base };
}

