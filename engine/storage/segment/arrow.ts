/**
 * Makes Arrow IPC body compression work in this process. Segments are written with ZSTD (level 1),
 * through @toondepauw/node-zstd (a prebuilt N-API binding of the reference zstd library, MIT),
 * and LZ4_FRAME is still read (segments written before ZSTD) through lz4-napi and lz4-frame.ts.
 * ZSTD level 1 over LZ4 on the 10M-event workload of bench/scale (2026-11-25): Arrow files 36.2 ->
 * 22.7 bytes an event with the same columns; levels 3 to 12 were no smaller on the sorted,
 * fixed-width dictionaries (arrow-data.ts) and 3x to 20x slower to write. Segment writer and
 * reader import this module; nothing else needs to. It owns only the codecs.
 */
import { Decoder, Encoder } from '@toondepauw/node-zstd';
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { compressFrameSync } from 'lz4-napi';
import { decompressFrame } from './lz4-frame.js';

/** Arrow's compression codec for segments; re-exported so writers name it in one place. */
export const SEGMENT_COMPRESSION = CompressionType.ZSTD;

const ZSTD_LEVEL = 1;
const encoder = new Encoder(ZSTD_LEVEL);
const decoder = new Decoder();

/** One ZSTD frame of `data`. */
export function zstdCompress(data: Uint8Array): Buffer {
  return encoder.encodeSync(asBuffer(data));
}

/**
 * The content of one ZSTD frame, in memory V8 allocated. The binding returns an external buffer
 * that V8 does not count and Node frees only on a later turn of the event loop (a loop decoding
 * 400 frames of 4 MB without yielding reached 2.5 GB of RSS; lz4-napi's buffers stay at 0.1 GB).
 * A copy V8 counts leaves the binding's buffer unreferenced at once, so it is freed when the
 * job that decoded it ends; copying costs ~1 ms for 4 MB against ~6 ms to decode them.
 */
export function zstdDecompress(frame: Uint8Array): Uint8Array {
  const native = decoder.decodeSync(asBuffer(frame));
  const out = new Uint8Array(native.byteLength);
  out.set(native);
  return out;
}

/**
 * Arrow's decoder hands the returned bytes to typed-array views (Float64Array, BigInt64Array),
 * which throw on an unaligned byteOffset; a native Buffer is not promised to be 8-aligned.
 */
function aligned(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset % 8 === 0) return bytes;
  return bytes.slice();
}

/** The native calls take a Buffer; this wraps the same memory without copying. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// The one module-level side effect in the engine (STYLE.md §2): apache-arrow looks codecs up in
// its own global `compressionRegistry` and offers no per-writer or per-reader codec option, so
// registration must happen once, at import, before any segment is written or read.
compressionRegistry.set(CompressionType.LZ4_FRAME, {
  encode: (data: Uint8Array) => compressFrameSync(asBuffer(data)),
  decode: (data: Uint8Array) => aligned(decompressFrame(asBuffer(data))),
});
compressionRegistry.set(CompressionType.ZSTD, {
  encode: (data: Uint8Array) => zstdCompress(data),
  decode: (data: Uint8Array) => aligned(zstdDecompress(data)),
});
