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

/** JSON texts of frozen lists (add-on results, shared by the events they enrich), made once. */
const frozenListTexts = new WeakMap<object, string>();

function listText(list: object): string {
  if (!Object.isFrozen(list)) return JSON.stringify(list);
  let text = frozenListTexts.get(list);
  if (text === undefined) frozenListTexts.set(list, text = JSON.stringify(list));
  return text;
}

/**
 * Encodes leaves; keeps its tables from call to call (one encoder per thread).
 *
 * Events of a batch mostly repeat one sequence of paths, and a path often its last value, so each
 * lookup first tries a guess: the path that followed the previous leaf's path last time, and the
 * string this path had last time. A right guess costs a comparison of strings that are usually
 * the same object; only a wrong one asks the tables' Maps. With the list texts below, an enriched
 * event's encoding (~48 leaves) went from 4.7 to 2.6 µs. (Coding an add-on result's leaves once a
 * batch and copying the codes was tried: slower, 4.2 µs, since most results of a batch are new.)
 */
export class LeafEncoder {
  private readonly paths = new Interned();
  private readonly strings = new Interned();
  /** Per path index: the path index that followed it last, or -1. */
  private readonly follows: number[] = [];
  /** Per path index: the string index it held last, or -1. */
  private readonly lastString: number[] = [];
  /** Per path index: the list it held last (an object, compared as such) and its string index. */
  private readonly lastList: unknown[] = [];
  private readonly lastListRef: number[] = [];

  /** Leaves [0, count) as bytes, in a fresh buffer that starts at offset 0 (8-aligned). */
  encode(leaves: Leaves, count: number): Uint8Array {
    const { paths, strings, follows, lastString, lastList, lastListRef } = this;
    paths.clear();
    strings.clear();
    follows.length = 0;
    lastString.length = 0;
    lastList.length = 0;
    lastListRef.length = 0;
    const pathList = paths.list;
    const stringList = strings.list;
    const pathOf = new Uint32Array(count);
    const refs = new Uint32Array(count);
    const kinds = new Uint8Array(count);
    let numCount = 0;
    let previous = -1;
    let first = -1;
    for (let i = 0; i < count; i++) {
      const path = leaves.paths[i];
      let p = previous === -1 ? first : follows[previous];
      if (p === -1 || pathList[p] !== path) {
        p = paths.indexOf(path);
        if (p === follows.length) {
          follows.push(-1);
          lastString.push(-1);
          lastList.push(null);
          lastListRef.push(-1);
        }
        if (previous === -1) first = p;
        else follows[previous] = p;
      }
      pathOf[i] = p;
      previous = p;
      const value = leaves.values[i];
      switch (typeof value) {
        case 'number':
          kinds[i] = KIND_NUM;
          numCount++;
          break;
        case 'boolean':
          kinds[i] = value ? KIND_TRUE : KIND_FALSE;
          break;
        case 'string': {
          kinds[i] = KIND_STR;
          let ref = lastString[p];
          if (ref === -1 || stringList[ref] !== value) lastString[p] = ref = strings.indexOf(value);
          refs[i] = ref;
          break;
        }
        default:
          if (value === null) {
            kinds[i] = KIND_NULL;
          } else {
            kinds[i] = KIND_LIST;
            // An add-on's cached result gives the same list object to every event it enriches.
            if (lastList[p] !== value) {
              lastList[p] = value;
              lastListRef[p] = strings.indexOf(listText(value as object));
            }
            refs[i] = lastListRef[p];
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
 * Leaves written by LeafEncoder, read in place: the tables as strings, and per leaf its path index,
 * kind and value reference. What the write path applies a prepared batch from (storage/buffer.ts
 * appendView) with no JS value per leaf. Every reference is checked here.
 */
export interface LeafView {
  readonly count: number;
  /** The distinct paths, in first-seen order. */
  readonly paths: readonly string[];
  readonly strings: readonly string[];
  /** Per leaf: its index in `paths`. */
  readonly pathOf: Uint32Array;
  /** Per leaf: KIND_*. */
  readonly kinds: Uint8Array;
  /** Per leaf: its string's index (KIND_STR, KIND_LIST) or its number's in `nums` (KIND_NUM). */
  readonly refs: Uint32Array;
  readonly nums: Float64Array;
}

export { KIND_FALSE, KIND_LIST, KIND_NULL, KIND_NUM, KIND_STR, KIND_TRUE };

/** Reads bytes written by LeafEncoder. Throws on bytes that are not such an encoding. */
export function viewLeaves(bytes: Uint8Array): LeafView {
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
  // Number leaves get their index in nums here: a copy, so the bytes stay as they were written.
  const refs = new Uint32Array(data.buffer.slice(data.byteOffset + at, data.byteOffset + at + 4 * count));
  at += 4 * count;
  const pathBytes = new Uint32Array(data.buffer, data.byteOffset + at, pathCount);
  at += 4 * pathCount;
  const strBytes = new Uint32Array(data.buffer, data.byteOffset + at, strCount);
  at += 4 * strCount;
  const kinds = data.subarray(at, at + count);
  at += count;
  const paths = readStrings(buffer, at, pathBytes, at + pathsLength);
  const strings = readStrings(buffer, at + pathsLength, strBytes, data.byteLength);
  let n = 0;
  for (let i = 0; i < count; i++) {
    if (pathOf[i] >= pathCount) throw new Error('leaves: path out of range');
    switch (kinds[i]) {
      case KIND_NUM:
        if (n === numCount) throw new Error('leaves: too few numbers');
        refs[i] = n++;
        break;
      case KIND_STR:
      case KIND_LIST:
        if (refs[i] >= strCount) throw new Error('leaves: string out of range');
        break;
      case KIND_TRUE:
      case KIND_FALSE:
      case KIND_NULL:
        break;
      default:
        throw new Error(`leaves: unknown kind ${kinds[i]}`);
    }
  }
  return { count, paths, strings, pathOf, kinds, refs, nums };
}

/** The value of leaf `i` of a view, as decodeLeaves gives it (a list is a fresh array). */
export function leafValue(view: LeafView, i: number): unknown {
  switch (view.kinds[i]) {
    case KIND_NUM: return view.nums[view.refs[i]];
    case KIND_STR: return view.strings[view.refs[i]];
    case KIND_TRUE: return true;
    case KIND_FALSE: return false;
    case KIND_LIST: return JSON.parse(view.strings[view.refs[i]]);
    default: return null;
  }
}

/**
 * Decodes leaves written by LeafEncoder into `out` (from index 0; out.count is set). Throws on
 * bytes that are not such an encoding. Every string is a fresh copy: none keeps the buffer alive.
 */
export function decodeLeaves(bytes: Uint8Array, out: Leaves): Leaves {
  return leavesOfView(viewLeaves(bytes), out);
}

/** The view's leaves as JS values in `out` (from index 0; out.count is set). */
export function leavesOfView(view: LeafView, out: Leaves): Leaves {
  const { paths, values } = out;
  for (let i = 0; i < view.count; i++) {
    paths[i] = view.paths[view.pathOf[i]];
    values[i] = leafValue(view, i);
  }
  out.start = 0;
  out.count = view.count;
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
