/**
 * Decompression of RecordBatch payloads by attribute bits 0–2: 1 gzip (zlib), 2 snappy (raw
 * block as librdkafka writes it, or xerial framing as the Java client does), 3 lz4 (LZ4 frame,
 * lz4-napi), 4 zstd (@toondepauw/node-zstd, the native binding of libzstd the engine already uses
 * for segments). Compression is only gzip: outbound batches are plain or gzip (kafkajs decodes
 * nothing else).
 *
 * Every output is bounded by `outputBytesMax` to stop decompression bombs (a few KB that inflate
 * to gigabytes), and the bound holds *while* decoding, never only after it:
 * - gzip: zlib's maxOutputLength stops inflating at the bound.
 * - snappy: each block's declared length is checked before it is inflated.
 * - lz4: the LZ4 frame is walked here block by block (each at most the frame's declared block
 *   maximum, 4 MB at most); each block is inflated alone by lz4-napi's block decoder into a
 *   buffer of that maximum (linked blocks get the previous 64 KB as dictionary), and decoding
 *   stops as soon as the running total passes the bound.
 * - zstd: the binding's decoder has no output limit and no streaming interface, so the bound is
 *   settled before it runs. The frames and their block headers are walked here first (no
 *   inflating): a frame whose window or declared content size is past the bound is refused. A
 *   frame whose blocks cannot hold more than the room left (raw and RLE blocks state their size;
 *   libzstd refuses a compressed block that inflates past the frame's block maximum, 128 KB at
 *   most) is inflated at once. Any other frame has its exact content size read first, block by
 *   block, from the literals headers and the sequences' match lengths (no literal is decoded and
 *   nothing is allocated for the output), and is refused at the block that passes the bound.
 */
import zlib from 'node:zlib';
import { uncompressSync as lz4BlockUncompress } from 'lz4-napi';
import snappy from 'snappyjs';
import { DecompressError, declaredTooLarge, need, tooLarge } from './decompress-error.js';
import { Reader } from './reader.js';
import { unzstd } from './zstd.js';

export { DecompressError } from './decompress-error.js';

export const Compression = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;

export class UnsupportedCompressionError extends Error {
  override name = 'UnsupportedCompressionError';
}

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);

export function decompress(codec: number, input: Buffer, outputBytesMax: number): Buffer {
  let output: Buffer;
  try {
    output = decompressUnchecked(codec, input, outputBytesMax);
  } catch (error) {
    if (error instanceof UnsupportedCompressionError) throw error;
    if (error instanceof DecompressError) throw error;
    throw new DecompressError(`codec ${codec}: ${(error as Error).message}`, { cause: error });
  }
  if (output.length > outputBytesMax) {
    throw new DecompressError(`decompressed ${output.length} bytes > ${outputBytesMax}`);
  }
  return output;
}

function decompressUnchecked(codec: number, input: Buffer, outputBytesMax: number): Buffer {
  switch (codec) {
    case Compression.gzip:
      return zlib.gunzipSync(input, { maxOutputLength: outputBytesMax });
    case Compression.snappy:
      return input.subarray(0, 8).equals(XERIAL_MAGIC)
        ? unsnappyXerial(input, outputBytesMax)
        : unsnappyRaw(input, outputBytesMax);
    case Compression.lz4:
      return unlz4(input, outputBytesMax);
    case Compression.zstd:
      return unzstd(input, outputBytesMax);
    default:
      throw new UnsupportedCompressionError(`compression codec ${codec}`);
  }
}

/** Raw snappy starts with the uncompressed length as a uvarint: checked before inflating. */
function unsnappyRaw(input: Buffer, outputBytesMax: number): Buffer {
  const declared = new Reader(input).uvarint();
  if (declared > outputBytesMax) throw new DecompressError(`snappy block of ${declared} bytes`);
  return Buffer.from(snappy.uncompress(input) as Uint8Array);
}

/** Xerial: magic(8) version int32, compat int32, then [int32 length, raw snappy block]*. */
function unsnappyXerial(input: Buffer, outputBytesMax: number): Buffer {
  const reader = new Reader(input, 16);
  const parts: Buffer[] = [];
  let total = 0;
  // Bounded by the input: each block consumes at least its 4-byte length.
  while (reader.remaining > 0) {
    const block = unsnappyRaw(reader.raw(reader.int32()), outputBytesMax - total);
    total += block.length;
    parts.push(block);
  }
  return Buffer.concat(parts, total);
}


const LZ4_MAGIC = 0x184d2204;
const LZ4_WINDOW = 64 * 1024;

/**
 * LZ4 frame format (lz4_Frame_format.md): magic, FLG, BD, [content size 8], [dict id 4], HC;
 * blocks [uint32 LE size, high bit = stored uncompressed][data][block checksum 4]; end mark 0;
 * [content checksum 4]. Frames may follow each other; skippable frames are skipped. Checksums
 * are not verified: the batch CRC32C already covers these bytes.
 */
function unlz4(input: Buffer, outputBytesMax: number): Buffer {
  const parts: Buffer[] = [];
  let total = 0;
  let at = 0;
  // Bounded by the input: each turn consumes at least a frame header or a block size word.
  while (at < input.length) {
    need(input, at, 8, 'lz4 frame header');
    const magic = input.readUInt32LE(at);
    if ((magic & 0xfffffff0) === 0x184d2a50) { // skippable frame
      at += 8 + input.readUInt32LE(at + 4);
      if (at > input.length) throw new DecompressError('truncated lz4 skippable frame');
      continue;
    }
    if (magic !== LZ4_MAGIC) throw new DecompressError(`lz4 frame magic 0x${magic.toString(16)}`);
    const flg = input[at + 4]!;
    const bd = input[at + 5]!;
    if (flg >> 6 !== 1) throw new DecompressError(`lz4 frame version ${flg >> 6}`);
    const independent = (flg & 0x20) !== 0;
    const blockChecksums = (flg & 0x10) !== 0;
    const contentSize = (flg & 0x08) !== 0;
    const contentChecksum = (flg & 0x04) !== 0;
    const dictId = (flg & 0x01) !== 0;
    const sizeCode = (bd >> 4) & 0x07;
    if (sizeCode < 4) throw new DecompressError(`lz4 block maximum size code ${sizeCode}`);
    const blockMax = 1 << (8 + 2 * sizeCode); // 64 KB, 256 KB, 1 MB, 4 MB
    at += 6;
    if (contentSize) {
      need(input, at, 8, 'lz4 frame header');
      const declared = input.readBigUInt64LE(at);
      if (declared > BigInt(outputBytesMax - total)) throw declaredTooLarge(declared, outputBytesMax - total);
      at += 8;
    }
    if (dictId) throw new DecompressError('lz4 frame with a dictionary id');
    at += 1; // header checksum
    let window: Buffer = Buffer.alloc(0);
    for (;;) {
      need(input, at, 4, 'lz4 block');
      const word = input.readUInt32LE(at);
      at += 4;
      if (word === 0) break; // end mark
      const size = word & 0x7fffffff;
      if (size > blockMax) throw new DecompressError(`lz4 block of ${size} bytes > ${blockMax}`);
      need(input, at, size + (blockChecksums ? 4 : 0), 'lz4 block');
      const data = input.subarray(at, at + size);
      at += size + (blockChecksums ? 4 : 0);
      let block: Buffer;
      if (word >>> 31 === 1) {
        block = Buffer.from(data);
      } else {
        // lz4-napi's block decoder takes the output capacity as a 4-byte LE prefix and fails if
        // the block inflates past it: at most blockMax (4 MB) is ever allocated per block.
        const prefixed = Buffer.allocUnsafe(4 + size);
        prefixed.writeUInt32LE(blockMax, 0);
        data.copy(prefixed, 4);
        try {
          block = independent ? lz4BlockUncompress(prefixed) : lz4BlockUncompress(prefixed, window);
        } catch (error) {
          throw new DecompressError(`lz4 block: ${(error as Error).message}`, { cause: error });
        }
      }
      total += block.length;
      if (total > outputBytesMax) throw tooLarge(total, outputBytesMax);
      parts.push(block);
      if (!independent) {
        window = block.length >= LZ4_WINDOW
          ? block.subarray(block.length - LZ4_WINDOW)
          : Buffer.concat([window, block]).subarray(-LZ4_WINDOW);
      }
    }
    if (contentChecksum) at += 4;
    if (at > input.length) throw new DecompressError('truncated lz4 content checksum');
  }
  return Buffer.concat(parts, total);
}

export function gzip(input: Buffer): Buffer {
  return zlib.gzipSync(input, { level: 1 });
}
