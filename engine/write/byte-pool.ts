/**
 * Reused large buffers for the write path's per-batch bytes (WAL frames). Fresh memory costs a page
 * fault per 4 KB on first touch, about 3 µs on the VMs Tally was measured on, so an 8 MB batch
 * frame allocated anew each time spends ~6 ms faulting; a reused one spends none. Small requests
 * (a single event's frame) are kept too, by power-of-two size: Node's slab allocator served them,
 * and refilling its 8 KB slab every dozen events (fresh memory again) cost more than the rest of
 * the frame's work. Single-threaded, no locking.
 */
import { WAL_POOL_SMALL_BYTES_MIN, WAL_POOL_SMALL_CLASS_BYTES_MAX } from '../base/limits.js';

/** Requests below this are small: served from SMALL_CLASSES lists of buffers of one size each. */
const POOLED_BYTES_MIN = 64 * 1024;

export class BytePool {
  private readonly free: Buffer[] = [];
  private freeBytes = 0;
  /** Small buffers given back, by size class (log2 of the size). */
  private readonly small: Buffer[][] = [];

  constructor(private readonly retainedBytesMax: number) {}

  /** A buffer of at least `bytes` (often more); hand it back with give() when no one reads it. */
  take(bytes: number): Buffer {
    if (bytes < POOLED_BYTES_MIN) {
      const size = bytes <= WAL_POOL_SMALL_BYTES_MIN ? WAL_POOL_SMALL_BYTES_MIN : 2 ** (32 - Math.clz32(bytes - 1));
      return this.small[Math.log2(size)]?.pop() ?? Buffer.allocUnsafeSlow(size);
    }
    for (let i = 0; i < this.free.length; i++) {
      const buffer = this.free[i]!;
      if (buffer.length >= bytes) {
        this.free.splice(i, 1);
        this.freeBytes -= buffer.length;
        return buffer;
      }
    }
    // Powers of two, so batches of similar size find each other's buffers.
    return Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(bytes)));
  }

  /** Returns a buffer from take(); kept while the pool holds at most retainedBytesMax. */
  give(buffer: Buffer): void {
    if (buffer.length < POOLED_BYTES_MIN) return this.giveSmall(buffer);
    if (buffer.length > this.retainedBytesMax) return;
    // Bound: each pass drops one buffer, so at most free.length passes.
    while (this.freeBytes + buffer.length > this.retainedBytesMax && this.free.length > 0) {
      this.freeBytes -= this.free.shift()!.length;
    }
    this.free.push(buffer);
    this.freeBytes += buffer.length;
  }

  private giveSmall(buffer: Buffer): void {
    const size = buffer.length;
    // Only what take() hands out: a power of two of its own memory (not a view into a slab).
    if (size < WAL_POOL_SMALL_BYTES_MIN || (size & (size - 1)) !== 0 || buffer.byteOffset !== 0 || buffer.buffer.byteLength !== size) return;
    const list = (this.small[Math.log2(size)] ??= []);
    if ((list.length + 1) * size <= WAL_POOL_SMALL_CLASS_BYTES_MAX) list.push(buffer);
  }
}
