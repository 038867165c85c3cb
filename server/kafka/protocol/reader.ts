/**
 * A cursor over a Kafka payload: big-endian fixed-width ints, classic (int16/int32 length) and
 * compact (unsigned varint length + 1) strings, bytes and arrays, and zig-zag varints for records.
 * It throws KafkaDecodeError on truncation; it never interprets what it reads.
 */
export class KafkaDecodeError extends Error {
  override name = 'KafkaDecodeError';
}

export class Reader {
  offset = 0;
  constructor(readonly buffer: Buffer, offset = 0) {
    this.offset = offset;
  }

  get remaining(): number {
    return this.buffer.length - this.offset;
  }

  private need(bytes: number): number {
    if (bytes < 0 || this.offset + bytes > this.buffer.length) {
      throw new KafkaDecodeError(`truncated: need ${bytes} bytes at ${this.offset}`);
    }
    const at = this.offset;
    this.offset += bytes;
    return at;
  }

  int8(): number { return this.buffer.readInt8(this.need(1)); }
  uint8(): number { return this.buffer.readUInt8(this.need(1)); }
  bool(): boolean { return this.int8() !== 0; }
  int16(): number { return this.buffer.readInt16BE(this.need(2)); }
  int32(): number { return this.buffer.readInt32BE(this.need(4)); }
  uint32(): number { return this.buffer.readUInt32BE(this.need(4)); }
  /** int64 as a JS number: offsets, timestamps and ids used here all fit in 2^53. */
  int64(): number { return Number(this.buffer.readBigInt64BE(this.need(8))); }

  raw(bytes: number): Buffer {
    const at = this.need(bytes);
    return this.buffer.subarray(at, at + bytes);
  }

  /** Unsigned LEB128 varint (flexible versions); at most 5 bytes. */
  uvarint(): number {
    let value = 0;
    for (let shift = 0; shift <= 28; shift += 7) {
      const byte = this.uint8();
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new KafkaDecodeError('uvarint longer than 5 bytes');
  }

  /** Zig-zag varint (RecordBatch records); at most 10 bytes, values within 2^53. */
  varint(): number {
    let value = 0;
    for (let shift = 0; shift <= 63; shift += 7) {
      const byte = this.uint8();
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
    }
    throw new KafkaDecodeError('varint longer than 10 bytes');
  }

  string(): string {
    const s = this.nullableString();
    if (s === null) throw new KafkaDecodeError('null string where non-null required');
    return s;
  }
  nullableString(): string | null {
    const length = this.int16();
    if (length < 0) return null;
    return this.raw(length).toString('utf8');
  }
  compactString(): string {
    const s = this.compactNullableString();
    if (s === null) throw new KafkaDecodeError('null compact string where non-null required');
    return s;
  }
  compactNullableString(): string | null {
    const length = this.uvarint() - 1;
    if (length < 0) return null;
    return this.raw(length).toString('utf8');
  }
  nullableBytes(): Buffer | null {
    const length = this.int32();
    if (length < 0) return null;
    return this.raw(length);
  }
  compactNullableBytes(): Buffer | null {
    const length = this.uvarint() - 1;
    if (length < 0) return null;
    return this.raw(length);
  }

  /** Skips a tagged-field section; we define no tags, so every one is unknown. */
  skipTags(): void {
    const count = this.uvarint();
    for (let i = 0; i < count; i++) {
      this.uvarint();
      this.raw(this.uvarint());
    }
  }
}
