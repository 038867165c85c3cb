/**
 * Leaves (flatten.ts) as bytes: how a prepared batch crosses from an ingest worker to the write
 * path, and how the WAL keeps an append call's events (wal-record.ts). The columns are rebuilt
 * from these leaves, not from JSON text, so neither side serializes or parses an event again.
 *
 *   Leaves  => header:u32[8] nums:f64[numCount] pathOf:u32[leafCount] refs:u32[leafCount]
 *              pathBytes:u32[pathCount] strBytes:u32[strCount] kinds:u8[leafCount]
 *              paths:utf8 strings:utf8
 *   header  => MAGIC leafCount pathCount strCount numCount pathsLength stringsLength 0
 *
 * Each distinct path and string is stored once (refs index them). A number leaf takes the next
 * f64 of `nums`; a list is stored as its JSON text. Numbers round-trip exactly (-0 included);
 * strings as UTF-8, so a lone surrogate comes back as U+FFFD, as it does from a segment.
 */
import type { Leaves } from './flatten.js';

const MAGIC = 0x4c454146; // "LEAF"
const HEADER_WORDS = 8;
const HEADER_BYTES = HEADER_WORDS * 4;

const KIND_NULL = 0;
const KIND_NUM = 1;
const KIND_STR = 2;
const KIND_TRUE = 3;
const KIND_FALSE = 4;
/** A list: its JSON text is in the string table. */
const KIND_LIST = 5;

/** Distinct texts in first-seen order, each with its index; cleared for each encoding. */
class Interned {
  readonly list: string[] = [];
  private readonly index = new Map<string, number>();
  /** UTF-16 length of the texts in `list`. */
  chars = 0;

  clear(): void {
    this.index.clear();
    this.list.length = 0;
    this.chars = 0;
  }

  indexOf(text: string): number {
    let at = this.index.get(text);
    if (at === undefined) {
      at = this.list.length;
      this.list.push(text);
      this.index.set(text, at);
      this.chars += text.length;
    }
    return at;
  }
}

/** Encodes leaves; keeps its tables from call to call (one encoder per thread). */
export class LeafEncoder {
  private readonly paths = new Interned();
  private readonly strings = new Interned();

  /** Leaves [0, count) as bytes, in a fresh buffer that starts at offset 0 (8-aligned). */
  encode(leaves: Leaves, count: number): Uint8Array {
    const { paths, strings } = this;
    paths.clear();
    strings.clear();
    const pathOf = new Uint32Array(count);
    const refs = new Uint32Array(count);
    const kinds = new Uint8Array(count);
    let numCount = 0;
    for (let i = 0; i < count; i++) {
      pathOf[i] = paths.indexOf(leaves.paths[i]);
      const value = leaves.values[i];
      switch (typeof value) {
        case 'number':
          kinds[i] = KIND_NUM;
          numCount++;
          break;
        case 'boolean':
          kinds[i] = value ? KIND_TRUE : KIND_FALSE;
          break;
        case 'string':
          kinds[i] = KIND_STR;
          refs[i] = strings.indexOf(value);
          break;
        default:
          if (value === null) {
            kinds[i] = KIND_NULL;
          } else {
            kinds[i] = KIND_LIST;
            refs[i] = strings.indexOf(JSON.stringify(value));
          }
      }
    }
    const pathTable = paths.list;
    const strTable = strings.list;
    const pathChars = paths.chars;
    const strChars = strings.chars;
    const fixed = HEADER_BYTES + 8 * numCount + 8 * count + 4 * (pathTable.length + strTable.length) + count;
    const out = Buffer.allocUnsafeSlow(fixed + 3 * (pathChars + strChars));
    const words = new Uint32Array(out.buffer, out.byteOffset, HEADER_WORDS);
    let at = HEADER_BYTES;
    const nums = new Float64Array(out.buffer, out.byteOffset + at, numCount);
    for (let i = 0, n = 0; i < count; i++) if (kinds[i] === KIND_NUM) nums[n++] = leaves.values[i] as number;
    at += 8 * numCount;
    out.set(new Uint8Array(pathOf.buffer), at);
    at += 4 * count;
    out.set(new Uint8Array(refs.buffer), at);
    at += 4 * count;
    const pathBytes = new Uint32Array(out.buffer, out.byteOffset + at, pathTable.length);
    at += 4 * pathTable.length;
    const strBytes = new Uint32Array(out.buffer, out.byteOffset + at, strTable.length);
    at += 4 * strTable.length;
    out.set(kinds, at);
    at += count;
    const pathsStart = at;
    for (let i = 0; i < pathTable.length; i++) {
      const written = out.write(pathTable[i], at, 'utf8');
      pathBytes[i] = written;
      at += written;
    }
    const stringsStart = at;
    for (let i = 0; i < strTable.length; i++) {
      const written = out.write(strTable[i], at, 'utf8');
      strBytes[i] = written;
      at += written;
    }
    words.set([MAGIC, count, pathTable.length, strTable.length, numCount, stringsStart - pathsStart, at - stringsStart, 0]);
    return out.subarray(0, at);
  }
}

/**
 * Decodes leaves written by LeafEncoder into `out` (from index 0; out.count is set). Throws on
 * bytes that are not such an encoding. Every string is a fresh copy: none keeps the buffer alive.
 */
export function decodeLeaves(bytes: Uint8Array, out: Leaves): Leaves {
  if (bytes.byteLength < HEADER_BYTES) throw new Error('leaves: truncated header');
  // The typed views need 8-aligned bytes; a WAL payload puts them anywhere.
  const data = bytes.byteOffset % 8 === 0 ? bytes : new Uint8Array(bytes);
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const [magic, count, pathCount, strCount, numCount, pathsLength, stringsLength] = new Uint32Array(data.buffer, data.byteOffset, HEADER_WORDS);
  const fixed = HEADER_BYTES + 8 * numCount + 8 * count + 4 * (pathCount + strCount) + count;
  if (magic !== MAGIC || fixed + pathsLength + stringsLength !== data.byteLength) throw new Error('leaves: bad header');
  let at = HEADER_BYTES;
  const nums = new Float64Array(data.buffer, data.byteOffset + at, numCount);
  at += 8 * numCount;
  const pathOf = new Uint32Array(data.buffer, data.byteOffset + at, count);
  at += 4 * count;
  const refs = new Uint32Array(data.buffer, data.byteOffset + at, count);
  at += 4 * count;
  const pathBytes = new Uint32Array(data.buffer, data.byteOffset + at, pathCount);
  at += 4 * pathCount;
  const strBytes = new Uint32Array(data.buffer, data.byteOffset + at, strCount);
  at += 4 * strCount;
  const kinds = data.subarray(at, at + count);
  at += count;
  const pathTable = readStrings(buffer, at, pathBytes, at + pathsLength);
  const strTable = readStrings(buffer, at + pathsLength, strBytes, data.byteLength);
  const { paths, values } = out;
  let n = 0;
  for (let i = 0; i < count; i++) {
    const path = pathTable[pathOf[i]];
    if (path === undefined) throw new Error('leaves: path out of range');
    paths[i] = path;
    switch (kinds[i]) {
      case KIND_NUM:
        if (n === numCount) throw new Error('leaves: too few numbers');
        values[i] = nums[n++];
        break;
      case KIND_STR:
        values[i] = stringAt(strTable, refs[i]);
        break;
      case KIND_TRUE:
        values[i] = true;
        break;
      case KIND_FALSE:
        values[i] = false;
        break;
      case KIND_LIST:
        values[i] = JSON.parse(stringAt(strTable, refs[i]));
        break;
      case KIND_NULL:
        values[i] = null;
        break;
      default:
        throw new Error(`leaves: unknown kind ${kinds[i]}`);
    }
  }
  out.start = 0;
  out.count = count;
  return out;
}

function readStrings(buffer: Buffer, start: number, lengths: Uint32Array, end: number): string[] {
  const table = new Array<string>(lengths.length);
  let at = start;
  for (let i = 0; i < lengths.length; i++) {
    const next = at + lengths[i];
    if (next > end) throw new Error('leaves: string past the end');
    table[i] = buffer.toString('utf8', at, next);
    at = next;
  }
  if (at !== end) throw new Error('leaves: string table length mismatch');
  return table;
}

function stringAt(table: readonly string[], index: number): string {
  const value = table[index];
  if (value === undefined) throw new Error('leaves: string out of range');
  return value;
}
