/**
 * Byte-level writer and reader of the partial-state wire format (partial-codec.ts describes the
 * layout). Integers and floats are little-endian; typed arrays are written as their raw bytes at
 * an offset that is a multiple of 8 from the start of the state, so a reader over an aligned
 * buffer views them in place instead of copying. The writer gathers small writes in chunks and
 * big arrays by reference, and copies everything once into one exactly sized ArrayBuffer (which
 * the worker then transfers to the coordinator, no structured clone).
 */
import os from 'node:os';

/** A state that cannot be decoded: wrong magic, version or tag, truncated, or inconsistent. */
export class PartialStateError extends Error {
  constructor(message: string) {
    super(`partial state: ${message}`);
    this.name = 'PartialStateError';
  }
}

if (os.endianness() !== 'LE') {
  // Raw typed arrays are written in host byte order; a big-endian host would need byte swaps.
  throw new Error('the partial-state codec supports little-endian hosts only');
}

const CHUNK_BYTES = 64 * 1024;
/** Arrays up to this many bytes are copied into the current chunk rather than kept by reference. */
const INLINE_ARRAY_BYTES = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

type RawArray = Float64Array | Int32Array | Uint8Array;

export class StateWriter {
  private readonly parts: Uint8Array[] = [];
  private chunk = new Uint8Array(CHUNK_BYTES);
  private view = new DataView(this.chunk.buffer);
  /** Write position in `chunk`; chunk[start .. at) is not yet in `parts`. */
  private at = 0;
  private start = 0;
  /** Bytes written so far (the absolute offset of the next byte). */
  private offset = 0;

  get length(): number {
    return this.offset;
  }

  private reserve(bytes: number): void {
    if (this.at + bytes <= this.chunk.length) return;
    this.cut();
    this.chunk = new Uint8Array(Math.max(CHUNK_BYTES, bytes));
    this.view = new DataView(this.chunk.buffer);
    this.at = 0;
    this.start = 0;
  }

  private cut(): void {
    if (this.at > this.start) this.parts.push(this.chunk.subarray(this.start, this.at));
    this.start = this.at;
  }

  u8(value: number): void {
    this.reserve(1);
    this.chunk[this.at++] = value;
    this.offset++;
  }

  u16(value: number): void {
    this.reserve(2);
    this.view.setUint16(this.at, value, true);
    this.at += 2;
    this.offset += 2;
  }

  u32(value: number): void {
    this.reserve(4);
    this.view.setUint32(this.at, value, true);
    this.at += 4;
    this.offset += 4;
  }

  i32(value: number): void {
    this.reserve(4);
    this.view.setInt32(this.at, value, true);
    this.at += 4;
    this.offset += 4;
  }

  f64(value: number): void {
    this.reserve(8);
    this.view.setFloat64(this.at, value, true);
    this.at += 8;
    this.offset += 8;
  }

  bool(value: boolean): void {
    this.u8(value ? 1 : 0);
  }

  /** u32 byte length, then UTF-8. */
  string(value: string): void {
    this.reserve(4 + 3 * value.length);
    const { written } = encoder.encodeInto(value, this.chunk.subarray(this.at + 4));
    this.view.setUint32(this.at, written, true);
    this.at += 4 + written;
    this.offset += 4 + written;
  }

  /** Zero bytes up to the next multiple of 8. */
  align(): void {
    const pad = -this.offset & 7;
    if (pad === 0) return;
    this.reserve(pad);
    this.chunk.fill(0, this.at, this.at + pad);
    this.at += pad;
    this.offset += pad;
  }

  /** u32 element count, padding to a multiple of 8, then the elements' raw bytes. */
  f64Array(array: Float64Array): void {
    this.raw(array);
  }

  i32Array(array: Int32Array): void {
    this.raw(array);
  }

  u8Array(array: Uint8Array): void {
    this.raw(array);
  }

  /** A sparse per-cell array (sketches): the count of present cells, then each cell and its item. */
  sparse<T>(cells: readonly (T | undefined)[], write: (item: T) => void): void {
    let present = 0;
    cells.forEach((item) => { if (item !== undefined) present++; });
    this.u32(present);
    cells.forEach((item, cell) => {
      if (item === undefined) return;
      this.u32(cell);
      write(item);
    });
  }

  private raw(array: RawArray): void {
    this.u32(array.length);
    this.align();
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    if (bytes.length <= INLINE_ARRAY_BYTES) {
      this.reserve(bytes.length);
      this.chunk.set(bytes, this.at);
      this.at += bytes.length;
    } else {
      this.cut();
      this.parts.push(bytes);
    }
    this.offset += bytes.length;
    this.align();
  }

  /** Overwrites a u32 written earlier at absolute offset `at` (a length known only later). */
  patchU32(at: number, value: number): void {
    this.cut();
    let base = 0;
    for (const part of this.parts) {
      if (at < base + part.length) {
        // Back-patched fields are written by u32() and never span two parts (reserve keeps them whole).
        new DataView(part.buffer, part.byteOffset, part.byteLength).setUint32(at - base, value, true);
        return;
      }
      base += part.length;
    }
    throw new Error(`patchU32 past the end (${at})`);
  }

  /** Everything written, in one new ArrayBuffer of exactly this length. */
  finish(): Uint8Array<ArrayBuffer> {
    this.cut();
    const out = new Uint8Array(this.offset);
    let at = 0;
    for (const part of this.parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }
}

export class StateReader {
  private readonly view: DataView;
  private at = 0;
  /** Whether bytes[k] sits at an 8-aligned address exactly when k is a multiple of 8. */
  private readonly aligned: boolean;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.aligned = bytes.byteOffset % 8 === 0;
  }

  get offset(): number {
    return this.at;
  }

  get remaining(): number {
    return this.bytes.length - this.at;
  }

  /** Throws unless `bytes` more bytes are there. */
  need(bytes: number, what: string): void {
    if (bytes > this.bytes.length - this.at) {
      throw new PartialStateError(`truncated: ${what} needs ${bytes} bytes at offset ${this.at}, ` +
        `only ${this.bytes.length - this.at} remain (${this.bytes.length} in all)`);
    }
  }

  /** Moves past `bytes` bytes (read elsewhere, or not at all). */
  skip(bytes: number, what: string): void {
    this.need(bytes, what);
    this.at += bytes;
  }

  u8(what = 'a byte'): number {
    this.need(1, what);
    return this.bytes[this.at++];
  }

  u16(what = 'a u16'): number {
    this.need(2, what);
    const value = this.view.getUint16(this.at, true);
    this.at += 2;
    return value;
  }

  u32(what = 'a u32'): number {
    this.need(4, what);
    const value = this.view.getUint32(this.at, true);
    this.at += 4;
    return value;
  }

  i32(what = 'an i32'): number {
    this.need(4, what);
    const value = this.view.getInt32(this.at, true);
    this.at += 4;
    return value;
  }

  f64(what = 'an f64'): number {
    this.need(8, what);
    const value = this.view.getFloat64(this.at, true);
    this.at += 8;
    return value;
  }

  bool(what = 'a flag'): boolean {
    const value = this.u8(what);
    if (value > 1) throw new PartialStateError(`${what} is ${value}, not 0 or 1 at offset ${this.at - 1}`);
    return value === 1;
  }

  string(what = 'a string'): string {
    const length = this.u32(`${what}'s length`);
    this.need(length, what);
    const text = decoder.decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return text;
  }

  align(): void {
    const pad = -this.at & 7;
    this.need(pad, 'padding');
    this.at += pad;
  }

  f64Array(what = 'a float64 array'): Float64Array<ArrayBuffer> {
    return this.raw(what, 8, Float64Array) as Float64Array<ArrayBuffer>;
  }

  i32Array(what = 'an int32 array'): Int32Array<ArrayBuffer> {
    return this.raw(what, 4, Int32Array) as Int32Array<ArrayBuffer>;
  }

  u8Array(what = 'a byte array'): Uint8Array<ArrayBuffer> {
    return this.raw(what, 1, Uint8Array) as Uint8Array<ArrayBuffer>;
  }

  /** What StateWriter.sparse wrote, each item read by `read`. */
  sparse<T>(what: string, read: () => T): (T | undefined)[] {
    const cells: (T | undefined)[] = [];
    const present = this.u32(`${what} count`);
    for (let s = 0; s < present; s++) cells[this.u32(`${what} cell`)] = read();
    return cells;
  }

  private raw(
    what: string, width: number,
    type: { new(buffer: ArrayBufferLike, offset: number, length: number): RawArray; new(length: number): RawArray },
  ): RawArray {
    const length = this.u32(`${what}'s length`);
    this.align();
    const bytes = length * width;
    this.need(bytes, what);
    const start = this.at;
    this.at += bytes;
    this.align();
    if (this.aligned) return new type(this.bytes.buffer, this.bytes.byteOffset + start, length);
    // Not aligned in memory (a Buffer from the pool, say): copy.
    const copy = new type(length);
    new Uint8Array(copy.buffer).set(this.bytes.subarray(start, start + bytes));
    return copy;
  }
}
