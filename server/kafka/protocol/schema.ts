/**
 * A declarative description of Kafka message bodies, as in Kafka's own `*Request.json` files: each
 * field names the versions it exists in, and one interpreter decodes and encodes every version, in
 * both classic and flexible (compact + tagged fields) form. Message files under messages/ are data;
 * this file is the only code that walks them. Decoded values are plain objects with wire names.
 */
import { KafkaDecodeError, Reader } from './reader.js';
import { Writer } from './writer.js';

export type Primitive =
  | 'int8' | 'int16' | 'int32' | 'int64' | 'bool'
  | 'string' | 'nullable_string' | 'bytes' | 'nullable_bytes';

export interface ArrayType {
  /** Element type: a primitive or a struct (list of fields). */
  readonly array: Primitive | readonly Field[];
  /** First version in which the array may be null (-1 length); absent = never null. */
  readonly nullableFrom?: number;
}

export interface Field {
  readonly name: string;
  readonly type: Primitive | ArrayType;
  /** First and last version that carry the field (inclusive). */
  readonly min: number;
  readonly max: number;
}

export interface MessageSpec {
  readonly apiKey: number;
  readonly name: string;
  /** The range we advertise in ApiVersions (docs/kafka-protocol.md §1.2). */
  readonly minVersion: number;
  readonly maxVersion: number;
  /** First flexible version; Infinity when we implement none. */
  readonly flexibleFrom: number;
  readonly request: readonly Field[];
  readonly response: readonly Field[];
}

// Decoded structs are open records: message files document their fields, handlers read them.
export type Struct = Record<string, any>;

/** A field present in versions [min, max]; `max` defaults to every later version. */
export function f(name: string, type: Primitive | ArrayType, min = 0, max = Infinity): Field {
  return { name, type, min, max };
}

export function array(element: Primitive | readonly Field[], nullableFrom?: number): ArrayType {
  return nullableFrom === undefined ? { array: element } : { array: element, nullableFrom };
}

export function decodeStruct(
  fields: readonly Field[], reader: Reader, version: number, flexible: boolean,
): Struct {
  const out: Struct = {};
  for (const field of fields) {
    if (version < field.min || version > field.max) continue;
    out[field.name] = decodeValue(field.type, reader, version, flexible);
  }
  if (flexible) reader.skipTags();
  return out;
}

function decodeValue(
  type: Primitive | ArrayType, reader: Reader, version: number, flexible: boolean,
): unknown {
  if (typeof type === 'string') return decodePrimitive(type, reader, flexible);
  const count = flexible ? reader.uvarint() - 1 : reader.int32();
  if (count < 0) {
    if (type.nullableFrom === undefined || version < type.nullableFrom) {
      throw new KafkaDecodeError('null array where non-null required');
    }
    return null;
  }
  // Each element takes at least one byte, so a count beyond the remaining bytes is corrupt;
  // checking it bounds the loop by the frame size.
  if (count > reader.remaining) throw new KafkaDecodeError(`array count ${count} too large`);
  const items: unknown[] = [];
  for (let i = 0; i < count; i++) {
    items.push(typeof type.array === 'string'
      ? decodePrimitive(type.array, reader, flexible)
      : decodeStruct(type.array, reader, version, flexible));
  }
  return items;
}

function decodePrimitive(type: Primitive, reader: Reader, flexible: boolean): unknown {
  switch (type) {
    case 'int8': return reader.int8();
    case 'int16': return reader.int16();
    case 'int32': return reader.int32();
    case 'int64': return reader.int64();
    case 'bool': return reader.bool();
    case 'string': return flexible ? reader.compactString() : reader.string();
    case 'nullable_string':
      return flexible ? reader.compactNullableString() : reader.nullableString();
    case 'bytes': {
      const b = flexible ? reader.compactNullableBytes() : reader.nullableBytes();
      if (b === null) throw new KafkaDecodeError('null bytes where non-null required');
      return b;
    }
    case 'nullable_bytes': return flexible ? reader.compactNullableBytes() : reader.nullableBytes();
  }
}

export function encodeStruct(
  fields: readonly Field[], writer: Writer, value: Struct, version: number, flexible: boolean,
): void {
  for (const field of fields) {
    if (version < field.min || version > field.max) continue;
    encodeValue(field.type, writer, value[field.name], version, flexible);
  }
  if (flexible) writer.emptyTags();
}

function encodeValue(
  type: Primitive | ArrayType, writer: Writer, value: unknown, version: number, flexible: boolean,
): void {
  if (typeof type === 'string') {
    encodePrimitive(type, writer, value, flexible);
    return;
  }
  const nullable = type.nullableFrom !== undefined && version >= type.nullableFrom;
  if (value === null && nullable) {
    if (flexible) writer.uvarint(0);
    else writer.int32(-1);
    return;
  }
  const items = (value ?? []) as unknown[];
  if (flexible) writer.uvarint(items.length + 1);
  else writer.int32(items.length);
  for (const item of items) {
    if (typeof type.array === 'string') encodePrimitive(type.array, writer, item, flexible);
    else encodeStruct(type.array, writer, item as Struct, version, flexible);
  }
}

/** Missing values encode as the type's zero (0, false, "", empty bytes) or null where nullable. */
function encodePrimitive(type: Primitive, writer: Writer, value: unknown, flexible: boolean): void {
  switch (type) {
    case 'int8': writer.int8((value as number) ?? 0); return;
    case 'int16': writer.int16((value as number) ?? 0); return;
    case 'int32': writer.int32((value as number) ?? 0); return;
    case 'int64': writer.int64((value as number) ?? 0); return;
    case 'bool': writer.bool(Boolean(value)); return;
    case 'string':
    case 'nullable_string': {
      const s = value === undefined ? (type === 'string' ? '' : null) : (value as string | null);
      if (flexible) writer.compactNullableString(s);
      else writer.nullableString(s);
      return;
    }
    case 'bytes':
    case 'nullable_bytes': {
      const empty = type === 'bytes' ? Buffer.alloc(0) : null;
      const b = value === undefined ? empty : (value as Uint8Array | null);
      if (flexible) writer.compactNullableBytes(b);
      else writer.nullableBytes(b);
      return;
    }
  }
}
