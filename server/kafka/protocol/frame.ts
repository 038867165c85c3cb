/**
 * Kafka framing: `int32 size` + payload, both ways. FrameSplitter turns a byte stream into whole
 * payloads and rejects a size above FRAME_BYTES_MAX (or negative) *before* buffering it, so a
 * TLS ClientHello on a plaintext port (size ≈ 0x16030100) costs nothing. It parses no payloads.
 */
import { FRAME_BYTES_MAX } from '../../common/limits.js';

export class FrameError extends Error {
  override name = 'FrameError';
}

export class FrameSplitter {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;

  constructor(private readonly frameBytesMax = FRAME_BYTES_MAX) {}

  /** Appends a chunk and returns every payload it completes; throws FrameError on a bad size. */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.bufferedBytes += chunk.length;
    const frames: Buffer[] = [];
    // Bounded by the bytes buffered: each turn consumes at least the 4-byte size prefix.
    while (this.bufferedBytes >= 4) {
      const head = this.peek(4);
      const size = head.readInt32BE(0);
      if (size < 0 || size > this.frameBytesMax) {
        throw new FrameError(`frame size ${size} outside [0, ${this.frameBytesMax}]`);
      }
      if (this.bufferedBytes < 4 + size) break;
      const all = this.take(4 + size);
      frames.push(all.subarray(4));
    }
    return frames;
  }

  private peek(bytes: number): Buffer {
    if (this.chunks[0]!.length < bytes) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!;
  }

  private take(bytes: number): Buffer {
    let first = this.chunks[0]!;
    if (first.length < bytes) {
      first = Buffer.concat(this.chunks);
      this.chunks = [first];
    }
    const out = first.subarray(0, bytes);
    if (first.length === bytes) this.chunks.shift();
    else this.chunks[0] = first.subarray(bytes);
    this.bufferedBytes -= bytes;
    return out;
  }
}

/** Prefixes a payload with its int32 size. */
export function frame(payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + payload.length);
  out.writeInt32BE(payload.length, 0);
  payload.copy(out, 4);
  return out;
}
