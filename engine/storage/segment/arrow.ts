/**
 * Makes Arrow IPC body compression work in this process. Segments are written with ZSTD (level 1),
 * through @toondepauw/node-zstd (a prebuilt N-API binding of the reference zstd library, MIT),
 * and LZ4_FRAME is still read (segments written before ZSTD) through lz4-napi and lz4-frame.ts.
 * ZSTD level 1 over LZ4 on the 10M-event workload of bench/scale (2026-11-25): Arrow files 36.2 ->
 * 22.7 bytes an event with the same columns; levels 3 to 12 were no smaller on the sorted,
 * fixed-width dictionaries (arrow-data.ts) and 3x to 20x slower to write. Segment writer and
 * reader import this module; nothing else needs to. It owns only the codecs.
 */
import { decompress as wasmDecompress, init as initWasmZstd } from '@bokuweb/zstd-wasm';
import { Decoder, Encoder } from '@toondepauw/node-zstd';
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { compressFrameSync } from 'lz4-napi';
import { NATIVE_BYTES_PER_TURN, ZSTD_WASM_CONTENT_BYTES_MAX } from '../../base/limits.js';
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

// The WebAssembly build of the same zstd library (MIT, the .wasm in the package): instantiated
// once per thread, at import, before any segment is read.
await initWasmZstd();

/**
 * The content of one ZSTD frame, in memory V8 allocated, decoded by zstd's WebAssembly build:
 * for sidecars and apache-arrow's reader (segment columns: zstdDecompressColumn).
 * The native binding returns external buffers that Node frees only on a later turn of the event
 * loop, so a query or compaction that decodes a whole store's columns in one synchronous job held
 * every decoded byte twice until it ended (a loop decoding 180 frames, 125 MB, grew RSS by 160 MB
 * a pass; 10M events in bench/scale: ~200 MB of RSS no heap counted). The WebAssembly decoder
 * works in its own memory, reused from frame to frame, and returns one copy: 330-350 MB/s
 * against the binding's 480-610 on those frames, with RSS flat. It needs room for the content
 * up front, and the binding's frames do not state their content size: frameContentBound reads it
 * off the block headers. A frame it cannot read that way, or whose bound is past
 * ZSTD_WASM_CONTENT_BYTES_MAX, goes to the binding.
 */
export function zstdDecompress(frame: Uint8Array): Uint8Array {
  const bound = frameContentBound(frame);
  if (bound >= 0 && bound <= ZSTD_WASM_CONTENT_BYTES_MAX) return wasmDecompress(frame, { defaultHeapSize: Math.max(1, bound) });
  const native = decoder.decodeSync(asBuffer(frame));
  const out = new Uint8Array(native.byteLength);
  out.set(native);
  return out;
}

/**
 * The content of one ZSTD frame of a segment column that is kept as decoded: dictionary codes and
 * dictionary values (ipc-read.ts readField). The native binding decodes segment buffers 2-4x as
 * fast as the WebAssembly build (10M events of bench/scale, 990 column frames, 223 MB: 174-374 ms
 * against 734-854), and its output is returned as the binding made it (no copy). But that memory
 * is external: once garbage, Node frees it only on a later turn of the event loop (zstdDecompress's
 * note), and a query or merge that decodes more than the caches keep runs as one synchronous job.
 * Decoding every buffer natively, a loop decoding those 223 MB and keeping 40 peaked at 445-499 MB
 * of RSS against 266-295 with WebAssembly, and at 50M events the server's peak rose from 754-783
 * MB to 1,023; bounded as below, to 905. So only buffers kept as they are come here, and a thread
 * decodes natively at most NATIVE_BYTES_PER_TURN between two turns of its event loop, with the
 * WebAssembly decoder past that; buffers that are converted (numbers, times) always use WebAssembly.
 */
export function zstdDecompressColumn(frame: Uint8Array): Uint8Array {
  if (nativeBytesThisTurn >= NATIVE_BYTES_PER_TURN) return zstdDecompress(frame);
  const out = decoder.decodeSync(asBuffer(frame));
  nativeBytesThisTurn += out.byteLength;
  if (!turnResetScheduled) {
    turnResetScheduled = true;
    setImmediate(() => {
      nativeBytesThisTurn = 0;
      turnResetScheduled = false;
    });
  }
  return out;
}

/** Bytes this thread has decoded natively since its event loop last turned (reader tests). */
export function nativeBytesDecodedThisTurn(): number {
  return nativeBytesThisTurn;
}

// Per-thread bookkeeping of zstdDecompressColumn (each worker has its own module instance).
let nativeBytesThisTurn = 0;
let turnResetScheduled = false;

const ZSTD_MAGIC = 0xfd2fb528;
const BLOCK_CONTENT_MAX = 128 * 1024;
const FCS_BYTES = [0, 2, 4, 8];
const DICTIONARY_ID_BYTES = [0, 1, 2, 4];

/**
 * An upper bound of the content size of ZSTD frames from their block headers (RFC 8878 §3.1.1):
 * raw and RLE blocks state their content size, a compressed block holds at most 128 KB. `data`
 * may hold several frames one after another (a blocked dictionary, dict-blocks.ts), whose content
 * is theirs concatenated. -1 when `data` is not a sequence of well-formed frames.
 */
export function frameContentBound(data: Uint8Array): number {
  let bound = 0;
  let at = 0;
  do {
    const frame = oneFrame(data, at);
    if (frame === null) return -1;
    bound += frame.bound;
    at = frame.end;
  } while (at < data.byteLength);
  return bound;
}

/** The content bound and end of the ZSTD frame at `start` of `data`, or null when it is not one. */
function oneFrame(data: Uint8Array, start: number): { bound: number; end: number } | null {
  const length = data.byteLength;
  if (length - start < 6) return null;
  const magic = (data[start] | (data[start + 1] << 8) | (data[start + 2] << 16) | (data[start + 3] << 24)) >>> 0;
  if (magic !== ZSTD_MAGIC) return null;
  const descriptor = data[start + 4];
  const fcsFlag = descriptor >> 6;
  const singleSegment = (descriptor & 0x20) !== 0;
  if ((descriptor & 0x08) !== 0) return null; // reserved bit
  let at = start + 5 + (singleSegment ? 0 : 1) + DICTIONARY_ID_BYTES[descriptor & 3] +
    (fcsFlag === 0 && singleSegment ? 1 : FCS_BYTES[fcsFlag]);
  let bound = 0;
  for (;;) {
    if (at + 3 > length) return null;
    const header = data[at] | (data[at + 1] << 8) | (data[at + 2] << 16);
    at += 3;
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3) return null; // reserved
    if (type === 2 && size < 2) return null; // a compressed block holds at least its literals header
    bound += type === 2 ? BLOCK_CONTENT_MAX : size;
    at += type === 1 ? 1 : size;
    if ((header & 1) !== 0) break;
  }
  if ((descriptor & 0x04) !== 0) at += 4; // content checksum
  return at <= length ? { bound, end: at } : null;
}

/**
 * Arrow's decoder hands the returned bytes to typed-array views (Float64Array, BigInt64Array),
 * which throw on an unaligned byteOffset; a native Buffer is not promised to be 8-aligned.
 */
function aligned(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset % 8 === 0) return bytes;
  return bytes.slice();
}

/**
 * Frames a segment writer chose for buffers before handing them to apache-arrow, whose writer
 * compresses every buffer itself (codec.encode) and stores one raw when its frame is no smaller:
 * a buffer preset to null is stored raw (bit-packed codes, read as they are), one preset to a
 * frame gets that frame (made once to weigh the two, not twice). Keyed by the buffer's memory;
 * a preset is used only for exactly the bytes it was made for, and only once.
 */
const presets = new WeakMap<ArrayBufferLike, { byteOffset: number; byteLength: number; frame: Uint8Array | null }>();

/** Sets what the ZSTD codec gives for exactly `bytes`: `frame`, or (null) the bytes themselves, stored raw. */
export function presetCompression(bytes: Uint8Array, frame: Uint8Array | null): void {
  presets.set(bytes.buffer, { byteOffset: bytes.byteOffset, byteLength: bytes.byteLength, frame });
}

/**
 * The preset for exactly `data`, used once: dropped as it is taken, so memory reused for other
 * bytes (a pooled buffer, say) could never be written with a frame made for what it held before.
 */
function presetFrame(data: Uint8Array): Uint8Array | undefined {
  const preset = presets.get(data.buffer);
  if (preset === undefined || preset.byteOffset !== data.byteOffset || preset.byteLength !== data.byteLength) return undefined;
  presets.delete(data.buffer);
  return preset.frame ?? data;
}

/** Called before each buffer the ZSTD codec compresses, while withCompressionPause runs. */
let beforeCompress: (() => void) | null = null;

/**
 * Runs `write` (an Arrow writer compressing its buffers) with `pause` called before each buffer:
 * a background job's pause points (base/query-activity.ts) inside the writer's one long call.
 */
export function withCompressionPause<T>(pause: (() => void) | null, write: () => T): T {
  const outer = beforeCompress;
  beforeCompress = pause;
  try {
    return write();
  } finally {
    beforeCompress = outer;
  }
}

/** The native calls take a Buffer; this wraps the same memory without copying. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// The one module-level side effect in the engine (the house style: one side effect per module, said where it is): apache-arrow looks codecs up in
// its own global `compressionRegistry` and offers no per-writer or per-reader codec option, so
// registration must happen once, at import, before any segment is written or read.
compressionRegistry.set(CompressionType.LZ4_FRAME, {
  encode: (data: Uint8Array) => compressFrameSync(asBuffer(data)),
  decode: (data: Uint8Array) => aligned(decompressFrame(asBuffer(data))),
});
compressionRegistry.set(CompressionType.ZSTD, {
  encode: (data: Uint8Array) => {
    beforeCompress?.();
    return presetFrame(data) ?? zstdCompress(data);
  },
  decode: (data: Uint8Array) => aligned(zstdDecompress(data)),
});
