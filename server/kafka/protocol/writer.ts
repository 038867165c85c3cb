/**
 * A growable output buffer with the same vocabulary as Reader. Big-endian fixed ints, classic and
 * compact strings/bytes, unsigned and zig-zag varints. It owns no framing: frame.ts adds sizes.
 */
export class Writer {
  private buffer: Buffer;
  offset = 0;

  constructor(initialBytes = 256) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  private reserve(bytes: number): number {
    if (this.offset + bytes > this.buffer.length) {
      let size = this.buffer.length * 2;
      while (size < this.offset + bytes) size *= 2;
      const next = Buffer.allocUnsafe(size);
      this.buffer.copy(next, 0, 0, this.offset);
      this.buffer = next;
    }
    const at = this.offset;
    this.offset += bytes;
    return at;
  }

  int8(v: number): this {
    const at = this.reserve(1);
    this.buffer.writeInt8(v, at);
    return this;
  }
  uint8(v: number): this {
    const at = this.reserve(1);
    this.buffer.writeUInt8(v, at);
    return this;
  }
  bool(v: boolean): this { return this.int8(v ? 1 : 0); }
  int16(v: number): this {
    const at = this.reserve(2);
    this.buffer.writeInt16BE(v, at);
    return this;
  }
  int32(v: number): this {
    const at = this.reserve(4);
    this.buffer.writeInt32BE(v, at);
    return this;
  }
  uint32(v: number): this {
    const at = this.reserve(4);
    this.buffer.writeUInt32BE(v >>> 0, at);
    return this;
  }
  int64(v: number): this {
    const at = this.reserve(8);
    this.buffer.writeBigInt64BE(BigInt(v), at);
    return this;
  }

  raw(bytes: Uint8Array): this {
    const at = this.reserve(bytes.length);
    this.buffer.set(bytes, at);
    return this;
  }

  uvarint(v: number): this {
    let value = v;
    while (value >= 0x80) {
      this.uint8((value % 0x80) | 0x80);
      value = Math.floor(value / 0x80);
    }
    return this.uint8(value);
  }

  varint(v: number): this {
    return this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  string(s: string): this { return this.nullableString(s); }
  nullableString(s: string | null): this {
    if (s === null) return this.int16(-1);
    const bytes = Buffer.from(s, 'utf8');
    return this.int16(bytes.length).raw(bytes);
  }
  compactNullableString(s: string | null): this {
    if (s === null) return this.uvarint(0);
    const bytes = Buffer.from(s, 'utf8');
    return this.uvarint(bytes.length + 1).raw(bytes);
  }
  nullableBytes(b: Uint8Array | null): this {
    if (b === null) return this.int32(-1);
    return this.int32(b.length).raw(b);
  }
  compactNullableBytes(b: Uint8Array | null): this {
    if (b === null) return this.uvarint(0);
    return this.uvarint(b.length + 1).raw(b);
  }
  emptyTags(): this { return this.uvarint(0); }

  /** Writes v at an earlier position (a length or CRC placeholder). */
  int32At(at: number, v: number): void { this.buffer.writeInt32BE(v, at); }
  uint32At(at: number, v: number): void { this.buffer.writeUInt32BE(v >>> 0, at); }

  /** A view of the bytes written so far; valid until the next write. */
  view(from = 0): Buffer { return this.buffer.subarray(from, this.offset); }
  /** A copy of the bytes written so far. */
  toBuffer(): Buffer { return Buffer.from(this.view()); }
}
