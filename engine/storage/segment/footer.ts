/**
 * A segment's footer: computing it from a chunk, checking it, and its sidecar codec. The footer
 * lets a scan prune a segment without opening its Arrow file; the sidecar also carries one
 * HyperLogLog per column (sketches.ts). Torn or foreign sidecars are detected by a CRC-32C.
 *
 *   Sidecar => magic:u32 ("TSZ3") crc32c:u32 length:u32 headLength:u32 pairsLength:u32 zstd(Head)
 *              Pairs zstd(Sketches)
 *            | magic:u32 ("TSZ2") crc32c:u32 length:u32 headLength:u32 zstd(Head) zstd(Sketches)
 *            | magic:u32 ("TSZ1") crc32c:u32 length:u32 zstd(Payload)        (integers little-endian)
 *            | magic:u32 ("TSM1") crc32c:u32 length:u32 Payload
 *   Head     => msgpack { version: 2, footer: SegmentFooter, values: { [path]: ValueCounts },
 *                         sketchBytes: uint }
 *   Sketches => msgpack { [path]: bin }
 *   Pairs    => msgpack { [path]: { [path]: bin } }   (pair tables, each a zstd frame: pair-counts.ts)
 *   Payload  => msgpack { version: 1, footer: SegmentFooter, sketches: { [path]: bin },
 *                         values?: { [path]: ValueCounts } }
 *   ValueCounts => { values: (string | number | boolean)[], rows: uint[],
 *                    sums?: { [path]: f64[] }, least?: { [path]: f64[] }, greatest?: { [path]: f64[] } }
 *   values (absent in the oldest sidecars) lists a column's distinct values and their row counts
 *   when it has few (sketches.ts computeDistinct). sums, least and greatest (written since
 *   2026-11-28; optional, so older sidecars and older readers are unaffected) give, per column
 *   of numbers, its sum, least and greatest number over each value's rows (computeGroupStats).
 *   crc32c covers the bytes after the header as stored; length is their count; headLength is
 *   zstd(Head)'s, pairsLength Pairs'.
 *
 * Sidecars are written as TSZ2 since 2026-11-26. The sketches are most of a sidecar (~5 KB of
 * registers a column) and only a distinct count over many values reads them, while the first
 * count filtered by a low-cardinality column reads every segment's value counts: TSZ2 keeps the
 * two apart, and a footer read from it decodes its sketches when they are first asked for (91
 * sidecars of a 2M store: 15-20 ms read whole, 3-6 ms without the sketches). TSZ1 (2026-11-25,
 * zstd: the registers compress ~2.2x) and TSM1 are still read, whole. TSZ3 (2026-11-29) adds the
 * pair tables apart from the head, each compressed alone, read from the file and decoded only by a
 * query that reads them (or by warming; their decoded summaries are kept in the chunk cache,
 * query/exec/value-counts.ts, not with the footer): ~30-60 KB stored a segment of 250,000 rows, which every first query
 * reading footers would otherwise decompress (a 10M run with them in the head: the count over 90
 * days' first run 24.8 ms against 10-20) and the footer cache would hold (100M events: 545
 * footers, 29 MB accounted without them, 64 MB allowed; a 100M run keeping them saw count_unique
 * of 50 values at 232 ms best of 3 against 14). A TSZ2 sidecar reads with none.
 */
import fs from 'node:fs';
import { crc32c } from '@node-rs/crc32';
import { pack, unpack } from 'msgpackr';
import { assert } from '../../base/assert.js';
import {
  TAG_MISSING,
  TAG_NUM,
  TAG_STR,
  type Column,
  type ColumnChunk,
  type ColumnStats,
  type SegmentFooter,
} from '../chunk.js';
import { hashNumber } from '../../sketch/hash.js';
import { HyperLogLog } from '../../sketch/hyperloglog.js';
import { zstdCompress, zstdDecompress } from './arrow.js';
import { sumLoop } from '../cell-sums.js';
import type { ValueCounts } from './sketches.js';

/**
 * A footer as readFooter returns it: with each column's serialized HyperLogLog and, for columns
 * with few distinct values, those values (sketches.ts computeDistinct).
 */
export type FooterWithSketches = SegmentFooter & {
  /** Decoded on first use in a footer read from a TSZ2 sidecar (an enumerable getter). */
  readonly sketches: Record<string, Uint8Array>;
  readonly values: Record<string, ValueCounts>;
  /** What the decoded sketches hold: each one's bytes plus 64 (not enumerable: not the footer's). */
  readonly sketchBytes: number;
  /**
   * Pair tables by column and column (pair-counts.ts), read from the sidecar file each time they
   * are asked for and not kept (not enumerable): a footer cache of hundreds of footers holds none.
   * Empty when the file is gone (the segment was retired since) or the sidecar predates them.
   */
  readonly pairs: PairTables;
};

/** A sidecar's pair tables: pairs[F][G] is the table of F's values by G's strings. */
export type PairTables = Readonly<Record<string, Readonly<Record<string, Uint8Array>>>>;

const SIDECAR_MAGIC = 0x314d5354; // "TSM1" read as a little-endian u32
const SIDECAR_MAGIC_ZSTD = 0x315a5354; // "TSZ1"
const SIDECAR_MAGIC_SPLIT = 0x325a5354; // "TSZ2"
const SIDECAR_MAGIC_PAIRS = 0x335a5354; // "TSZ3"
const SIDECAR_HEADER_BYTES = 12;
const SIDECAR_VERSION = 1;
const SIDECAR_SPLIT_VERSION = 2;

export function computeFooter(chunk: ColumnChunk): SegmentFooter {
  assert(chunk.rows > 0, 'a segment holds at least one row');
  const [tsMin, tsMax] = rangeOf(chunk.ts, chunk.rows);
  const columns: Record<string, ColumnStats> = {};
  for (const [path, column] of chunk.columns) columns[path] = statsOf(column, chunk.rows);
  return {
    rows: chunk.rows,
    tsMin,
    tsMax,
    seqMin: chunk.seq[0],
    seqMax: chunk.seq[chunk.rows - 1],
    columns,
  };
}

function rangeOf(values: Float64Array, rows: number): [number, number] {
  let min = Infinity;
  let max = -Infinity;
  for (let row = 0; row < rows; row++) {
    const value = values[row];
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return [min, max];
}

/** Min/max per kind over the rows that hold it; strings compare by UTF-16 code units (JS `<`). */
function statsOf(column: Column, rows: number): ColumnStats {
  const { tags, num, str, dict } = column;
  let present = 0;
  let numeric = 0;
  let numMin = Infinity;
  let numMax = -Infinity;
  const used = dict === null ? null : new Uint8Array(dict.length);
  for (let row = 0; row < rows; row++) {
    const tag = tags[row];
    if (tag === TAG_MISSING) continue;
    present++;
    if (tag === TAG_NUM) {
      numeric++;
      const value = num![row];
      if (value < numMin) numMin = value;
      if (value > numMax) numMax = value;
    } else if (tag === TAG_STR) used![str![row]] = 1;
  }
  const stats: { -readonly [K in keyof ColumnStats]: ColumnStats[K] } = { present };
  if (numMin <= numMax) {
    stats.numMin = numMin;
    stats.numMax = numMax;
  }
  // Every row a number: its sum as a scan of the whole segment adds it (cell-sums.ts sumLoop);
  // not one that overflows (the manifest is JSON, which has no Infinity: such a segment is scanned).
  if (numeric === rows) {
    const sum = sumLoop(num as Float64Array, rows);
    if (Number.isFinite(sum)) stats.numSum = sum;
  }
  for (let code = 0; used !== null && code < used.length; code++) {
    if (used[code] === 0) continue;
    const value = dict![code];
    if (stats.strMin === undefined || value < stats.strMin) stats.strMin = value;
    if (stats.strMax === undefined || value > stats.strMax) stats.strMax = value;
  }
  return stats;
}

/** Invariants of any footer; checked just before writing and just after reading (the house style: assert invariants at both ends). */
export function assertFooter(footer: SegmentFooter): void {
  assert(Number.isSafeInteger(footer.rows), 'footer rows is an integer');
  assert(footer.rows > 0, 'footer rows is positive');
  assert(footer.tsMin <= footer.tsMax, 'footer tsMin <= tsMax');
  assert(footer.seqMin <= footer.seqMax, 'footer seqMin <= seqMax');
  for (const path of Object.keys(footer.columns)) {
    const stats = footer.columns[path];
    assert(stats.present >= 0, 'column present is not negative');
    assert(stats.present <= footer.rows, 'column present <= rows');
    assert(!(stats.numMin! > stats.numMax!), 'column numMin <= numMax');
    assert(!(stats.strMin! > stats.strMax!), 'column strMin <= strMax');
  }
}

export function encodeSidecar(
  footer: SegmentFooter, sketches: Record<string, Uint8Array>, values: Record<string, ValueCounts> = {},
  pairs: PairTables = {},
): Buffer {
  const head = zstdCompress(pack({ version: SIDECAR_SPLIT_VERSION, footer, values, sketchBytes: bytesOf(sketches) }));
  const middle = pack(pairs);
  const tail = zstdCompress(pack(sketches));
  const length = 8 + head.length + middle.length + tail.length;
  const bytes = Buffer.allocUnsafe(SIDECAR_HEADER_BYTES + length);
  bytes.writeUInt32LE(SIDECAR_MAGIC_PAIRS, 0);
  bytes.writeUInt32LE(length, 8);
  bytes.writeUInt32LE(head.length, SIDECAR_HEADER_BYTES);
  bytes.writeUInt32LE(middle.length, SIDECAR_HEADER_BYTES + 4);
  head.copy(bytes, SIDECAR_HEADER_BYTES + 8);
  middle.copy(bytes, SIDECAR_HEADER_BYTES + 8 + head.length);
  tail.copy(bytes, SIDECAR_HEADER_BYTES + 8 + head.length + middle.length);
  bytes.writeUInt32LE(crc32c(bytes.subarray(SIDECAR_HEADER_BYTES)), 4);
  return bytes;
}

/** Inverse of encodeSidecar; throws an Error naming `file` on any damage. */
export function decodeSidecar(bytes: Buffer, file: string): FooterWithSketches {
  const corrupt = (why: string) => new Error(`segment sidecar ${file} is corrupt: ${why}`);
  if (bytes.length < SIDECAR_HEADER_BYTES) throw corrupt('shorter than its header');
  const magic = bytes.readUInt32LE(0);
  const split = magic === SIDECAR_MAGIC_SPLIT || magic === SIDECAR_MAGIC_PAIRS;
  if (magic !== SIDECAR_MAGIC && magic !== SIDECAR_MAGIC_ZSTD && !split) throw corrupt('bad magic');
  const length = bytes.readUInt32LE(8);
  if (bytes.length !== SIDECAR_HEADER_BYTES + length) throw corrupt('length mismatch (torn?)');
  const stored = bytes.subarray(SIDECAR_HEADER_BYTES);
  if (crc32c(stored) !== bytes.readUInt32LE(4)) throw corrupt('checksum mismatch');
  if (split) {
    // TSZ3 states two frame lengths before the frames, TSZ2 one (it has no pair tables).
    const lengths = magic === SIDECAR_MAGIC_PAIRS ? 8 : 4;
    const headLength = stored.length >= lengths ? stored.readUInt32LE(0) : -1;
    const pairsLength = lengths === 8 && stored.length >= lengths ? stored.readUInt32LE(4) : 0;
    const headEnd = lengths + headLength;
    if (headLength < 0 || headEnd + pairsLength > stored.length) throw corrupt('head past the end');
    const head = unpack(zstdDecompress(stored.subarray(lengths, headEnd))) as {
      version: number; footer: SegmentFooter; values: Record<string, ValueCounts>; sketchBytes: number;
    };
    if (head.version !== SIDECAR_SPLIT_VERSION) throw corrupt(`unknown version ${head.version}`);
    if (!Number.isSafeInteger(head.sketchBytes) || head.sketchBytes < 0) throw corrupt('bad sketch size');
    // Copies: the footer cache keeps them, not the whole file read.
    const tail = Uint8Array.prototype.slice.call(stored, headEnd + pairsLength);
    let sketches: Record<string, Uint8Array> | null = null;
    const pairsAt = SIDECAR_HEADER_BYTES + headEnd;
    return withSketches(head.footer, head.values, head.sketchBytes,
      () => sketches ??= unpack(zstdDecompress(tail)) as Record<string, Uint8Array>,
      () => (pairsLength === 0 ? {} : readPairTables(file, pairsAt, pairsLength, corrupt)));
  }
  const payload = magic === SIDECAR_MAGIC_ZSTD ? zstdDecompress(stored) : stored;
  const decoded = unpack(payload) as {
    version: number;
    footer: SegmentFooter;
    sketches: Record<string, Uint8Array>;
    values?: Record<string, ValueCounts>;
  };
  if (decoded.version !== SIDECAR_VERSION) throw corrupt(`unknown version ${decoded.version}`);
  return withSketches(decoded.footer, decoded.values ?? {}, bytesOf(decoded.sketches), () => decoded.sketches);
}

/**
 * The Pairs section of the sidecar `file`, `length` bytes at `at`: read again on each call (the
 * file is immutable while it exists). {} when the file is gone.
 */
function readPairTables(file: string, at: number, length: number, corrupt: (why: string) => Error): PairTables {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  try {
    const bytes = Buffer.allocUnsafe(length);
    if (fs.readSync(fd, bytes, 0, length, at) !== length) throw corrupt('pair tables past the end');
    return pairTablesOf(unpack(bytes), corrupt);
  } finally {
    fs.closeSync(fd);
  }
}

/** The Pairs section as decoded, checked to be tables by column and column (each a byte string). */
function pairTablesOf(decoded: unknown, corrupt: (why: string) => Error): PairTables {
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isObject(decoded) || !Object.values(decoded).every((tables) => isObject(tables) && Object.values(tables).every((table) => table instanceof Uint8Array))) {
    throw corrupt('bad pair tables');
  }
  return decoded as PairTables;
}

function withSketches(
  footer: SegmentFooter, values: Record<string, ValueCounts>, sketchBytes: number, sketches: () => Record<string, Uint8Array>,
  pairs: () => PairTables = () => ({}),
): FooterWithSketches {
  const out = { ...footer, values } as FooterWithSketches;
  Object.defineProperty(out, 'sketches', { enumerable: true, get: sketches });
  Object.defineProperty(out, 'sketchBytes', { enumerable: false, value: sketchBytes });
  Object.defineProperty(out, 'pairs', { enumerable: false, get: pairs });
  return out;
}

function bytesOf(sketches: Record<string, Uint8Array>): number {
  let bytes = 0;
  for (const sketch of Object.values(sketches)) bytes += sketch.byteLength + 64;
  return bytes;
}

/** Sidecars decoded by warmSidecarDecoding, and how often their sketches are decoded too. */
const WARM_ROUNDS = 60;
const WARM_SKETCH_EVERY = 10;

/**
 * Decodes a sidecar made here, shaped like a segment's (a footer of eight columns, value counts
 * of strings, numbers and booleans, sparse and dense sketches), WARM_ROUNDS times, so that a query
 * worker's first reading of real sidecars runs compiled code: zstd's WebAssembly decoder and
 * msgpack's reader are otherwise compiled on first use, inside the first query that reads value
 * counts (a fresh worker read 45 sidecars of a 2M store in 17-28 ms, 6-8 ms after this; it takes
 * ~20-30 ms at start). Returns the footer it decoded last.
 */
export function warmSidecarDecoding(): FooterWithSketches {
  const columns: Record<string, ColumnStats> = {};
  const values: Record<string, ValueCounts> = {};
  const sketches: Record<string, Uint8Array> = {};
  for (let c = 0; c < 8; c++) {
    const path = `column${c}`;
    const distinct = c < 6 ? 5 + 40 * c : 20_000 * c;
    columns[path] = { present: distinct, numMin: 0, numMax: distinct - 1, strMin: 'a', strMax: 'z' };
    if (c < 6) {
      const kinds = [(i: number) => `value ${i}`, (i: number) => i * 0.25, (i: number) => i % 2 === 0];
      values[path] = {
        values: Array.from({ length: c % 3 === 2 ? 2 : distinct }, (_, i) => kinds[c % 3](i)),
        rows: Array.from({ length: c % 3 === 2 ? 2 : distinct }, (_, i) => 1 + i * 7),
      };
    }
    const sketch = new HyperLogLog();
    for (let i = 0; i < distinct; i++) sketch.add(hashNumber(i, c + 1));
    sketches[path] = sketch.serialize();
  }
  const bytes = encodeSidecar({ rows: 1_000_000, tsMin: 0, tsMax: 1, seqMin: 0, seqMax: 999_999, columns }, sketches, values);
  let footer: FooterWithSketches | null = null;
  for (let round = 0; round < WARM_ROUNDS; round++) {
    footer = decodeSidecar(bytes, 'warm-up');
    if (round % WARM_SKETCH_EVERY === 0) void footer.sketches;
  }
  return footer!;
}
