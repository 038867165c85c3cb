/**
 * Makes Arrow IPC body compression with LZ4_FRAME work in this process, using lz4-napi (a
 * prebuilt binary; spec/enrichment.md "Engine dependencies") to encode and lz4-frame.ts to decode.
 * Segment writer and reader import this module; nothing else needs to. It owns only the codec.
 */
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { compressFrameSync } from 'lz4-napi';
import { decompressFrame } from './lz4-frame.js';

/** Arrow's compression codec for LZ4_FRAME; re-exported so writers name it in one place. */
export const SEGMENT_COMPRESSION = CompressionType.LZ4_FRAME;

/**
 * Arrow's decoder hands the returned bytes to typed-array views (Float64Array, BigInt64Array),
 * which throw on an unaligned byteOffset; a native Buffer is not promised to be 8-aligned.
 */
function aligned(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset % 8 === 0) return bytes;
  return bytes.slice();
}

/** lz4-napi's sync calls take a Buffer; this wraps the same memory without copying. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// The one module-level side effect in the engine (STYLE.md §2): apache-arrow looks codecs up in
// its own global `compressionRegistry` and offers no per-writer or per-reader codec option, so
// registration must happen once, at import, before any segment is written or read.
compressionRegistry.set(CompressionType.LZ4_FRAME, {
  encode: (data: Uint8Array) => compressFrameSync(asBuffer(data)),
  decode: (data: Uint8Array) => aligned(decompressFrame(asBuffer(data))),
});
