/**
 * Decompression of RecordBatch payloads by attribute bits 0–2: 1 gzip (zlib), 2 snappy (raw
 * block as librdkafka writes it, or xerial framing as the Java client does), 3 lz4 (LZ4 frame,
 * lz4-napi), 4 zstd (fzstd, pure JS). Compression is only gzip: outbound batches are plain or gzip (kafkajs
 * decodes nothing else). Every output is bounded by `outputBytesMax` to stop decompression bombs.
 */
import zlib from 'node:zlib';
import { decompressFrameSync } from 'lz4-napi';
import { decompress as zstdDecompress } from 'fzstd';
import snappy from 'snappyjs';
import { Reader } from './reader.js';

export const Compression = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;

export class DecompressError extends Error {
  override name = 'DecompressError';
}
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
      return decompressFrameSync(input);
    case Compression.zstd: {
      const out = zstdDecompress(input);
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    }
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

export function gzip(input: Buffer): Buffer {
  return zlib.gzipSync(input, { level: 1 });
}
