/**
 * Leaves (flatten.ts) as bytes: how a prepared batch crosses from an ingest worker to the write
 * path, and how the WAL keeps an append call's events (write/wal-payload.ts). The columns are rebuilt
 * from these leaves, not from JSON text, so neither side serializes or parses an event again.
 *
 *   Leaves  => header:u32[8] nums:f64[numCount] pathOf:u32[stored] refs:u32[stored]
 *              pathBytes:u32[pathCount] strBytes:u32[strCount] fragmentStarts:u32[F]
 *              kinds:u8[stored] paths:utf8 strings:utf8
 *   header  => MAGIC stored pathCount strCount numCount pathsLength stringsLength fragmentCount
 *
 * Each distinct path and string is stored once (refs index them). A number leaf takes the next
 * f64 of `nums`; a list is stored as its JSON text. Numbers round-trip exactly (-0 included);
 * strings as UTF-8, so a lone surrogate comes back as U+FFFD, as it does from a segment.
 *
 * Add-on results: the `stored` leaves are the events' leaves, then the fragment table's. With
 * fragmentCount > 0, F = fragmentCount + 1 and entry f's leaves are stored [fragmentStarts[f],
 * fragmentStarts[f + 1]); the events' end at fragmentStarts[0]. An event leaf of KIND_FRAGMENT
 * (refs: its entry) stands for that entry's leaves. A view's per-leaf arrays give them in its
 * place, so readers of those never see one; the write buffer reads the stored leaves instead
 * (LeafView.compact) and takes each result whole. With fragmentCount 0 (F = 0) this is the format
 * written before fragments were (2026-11-25), which reads as it did.
 */
import { assert } from '../base/assert.js';
import { isFragment, pathsUnder, type Fragment } from './fragment.js';
import { PathJoiner, type Leaves } from './flatten.js';
import { HEADER_BYTES, HEADER_WORDS, LeafWriter, MAGIC } from './leaf-writer.js';


const KIND_NULL = 0;
const KIND_NUM = 1;
const KIND_STR = 2;
const KIND_TRUE = 3;
const KIND_FALSE = 4;
/** A list: its JSON text is in the string table. */
const KIND_LIST = 5;
/** In the bytes only: an entry of the record's fragment table (refs), its leaves in its place. */
const KIND_FRAGMENT = 6;

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

/** A copy of `nums` with room for `count`. */
function grown(nums: Float64Array, count: number): Float64Array<ArrayBuffer> {
  const bigger = new Float64Array(2 * count);
  bigger.set(nums);
  return bigger;
}

/** Distinguishes LeafEncoder calls on fragments (Fragment.stamp), across every encoder. */
let nextStamp = 1;

/**
 * Encodes leaves; keeps its tables from call to call (one encoder per thread).
 *
 * Events of a batch mostly repeat one sequence of paths, and a path often its last value, so each
 * lookup first tries a guess: the path that followed the previous leaf's path last time, and the
 * string this path had last time. A right guess costs a comparison of strings that are usually
 * the same object; only a wrong one asks the tables' Maps. With the list texts below, an enriched
 * event's encoding (~48 leaves) went from 4.7 to 2.6 µs.
 *
 * A leaf whose value is an add-on result (isFragment: the fast batch reader gives them) is written
 * as one KIND_FRAGMENT leaf naming an entry of the record's fragment table, where each result's
 * leaves are written once per record under their output name; viewLeaves expands them again. Most
 * events of a batch share their results (one per place, user agent, page), so an enriched event's
 * ~37 result leaves cost a reference each instead of a leaf each, in the encoder and the WAL.
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
  /** The fragment table's leaves (after the events' in the record) and where each entry starts. */
  private readonly table = { pathOf: [] as number[], refs: [] as number[], kinds: [] as number[], nums: [] as number[] };
  private readonly fragmentStarts: number[] = [];
  private readonly joiner = new PathJoiner();
  private stamp = 0;
  /** Table entries of results used under more than one name, by first entry and name. */
  private readonly otherNames = new Map<string, number>();

  /** Per leaf of the call: grown as needed, copied into the output (LeafWriter). */
  private pathOf = new Uint32Array(64);
  private refs = new Uint32Array(64);
  private kinds = new Uint8Array(64);
  private nums: Float64Array<ArrayBuffer> = new Float64Array(64);
  private readonly writer = new LeafWriter();

  /**
   * Leaves [0, count) as bytes that start at offset 0 (8-aligned): in a fresh buffer, or with
   * `scratch` in this encoder's own, which its next scratch call overwrites (copy them out first).
   */
  encode(leaves: Leaves, count: number, scratch = false): Uint8Array {
    const { paths, strings, follows, lastString, lastList, lastListRef, table, fragmentStarts } = this;
    paths.clear();
    strings.clear();
    follows.length = 0;
    lastString.length = 0;
    lastList.length = 0;
    lastListRef.length = 0;
    table.pathOf.length = 0;
    table.refs.length = 0;
    table.kinds.length = 0;
    table.nums.length = 0;
    fragmentStarts.length = 0;
    this.otherNames.clear();
    this.stamp = nextStamp++;
    if (this.kinds.length < count) this.grow(count);
    const { pathOf, refs, kinds } = this;
    const pathList = paths.list;
    const stringList = strings.list;
    let numCount = 0;
    let previous = -1;
    let first = -1;
    for (let i = 0; i < count; i++) {
      const path = leaves.paths[i];
      const value = leaves.values[i];
      refs[i] = 0;
      if (isFragment(value)) {
        kinds[i] = KIND_FRAGMENT;
        pathOf[i] = 0; // not a path of the record's; the guesses go on from the previous leaf
        refs[i] = this.fragmentIndex(value, path, count);
        continue;
      }
      let p = previous === -1 ? first : follows[previous];
      if (p === -1 || pathList[p] !== path) {
        p = this.pathIndex(path);
        if (previous === -1) first = p;
        else follows[previous] = p;
      }
      pathOf[i] = p;
      previous = p;
      switch (typeof value) {
        case 'number':
          kinds[i] = KIND_NUM;
          this.nums[numCount++] = value;
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
    if (fragmentStarts.length > 0) fragmentStarts.push(count + table.kinds.length);
    if (numCount + table.nums.length > this.nums.length) this.nums = grown(this.nums, numCount + table.nums.length);
    for (let i = 0; i < table.nums.length; i++) this.nums[numCount++] = table.nums[i];
    return this.writer.write({
      count, pathOf, refs, kinds, table, nums: this.nums, numCount, fragmentStarts,
      paths: pathList, strings: stringList, chars: paths.chars + strings.chars,
    }, scratch);
  }

  private grow(count: number): void {
    this.pathOf = new Uint32Array(2 * count);
    this.refs = new Uint32Array(2 * count);
    this.kinds = new Uint8Array(2 * count);
    if (this.nums.length < 2 * count) this.nums = new Float64Array(2 * count);
  }

  /** The index of `path` in this record's path table; a new one gets its guess slots. */
  private pathIndex(path: string): number {
    const p = this.paths.indexOf(path);
    if (p === this.follows.length) {
      this.follows.push(-1);
      this.lastString.push(-1);
      this.lastList.push(null);
      this.lastListRef.push(-1);
    }
    return p;
  }

  /** The table entry of `fragment` under output `name`: written the first time this record uses it. */
  private fragmentIndex(fragment: Fragment, name: string, eventLeaves: number): number {
    const { table, fragmentStarts } = this;
    const index = fragmentStarts.length;
    if (fragment.stamp !== this.stamp) {
      fragment.stamp = this.stamp;
      fragment.stampName = name;
      fragment.stampIndex = index;
    } else if (fragment.stampName === name) {
      return fragment.stampIndex;
    } else { // one result under a second name in this record: rare, so a Map
      const key = `${fragment.stampIndex}\u0000${name}`;
      const seen = this.otherNames.get(key);
      if (seen !== undefined) return seen;
      this.otherNames.set(key, index);
    }
    fragmentStarts.push(eventLeaves + table.kinds.length);
    const paths = pathsUnder(fragment, name, this.joiner);
    const values = fragment.leafValues;
    for (let j = 0; j < paths.length; j++) {
      const value = values[j];
      table.pathOf.push(this.pathIndex(paths[j]));
      let kind: number;
      let ref = 0;
      switch (typeof value) {
        case 'number':
          kind = KIND_NUM;
          table.nums.push(value);
          break;
        case 'boolean':
          kind = value ? KIND_TRUE : KIND_FALSE;
          break;
        case 'string':
          kind = KIND_STR;
          ref = this.strings.indexOf(value);
          break;
        default:
          if (value === null) kind = KIND_NULL;
          else {
            kind = KIND_LIST;
            ref = this.strings.indexOf(listText(value as object));
          }
      }
      table.kinds.push(kind);
      table.refs.push(ref);
    }
    return index;
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
  /**
   * The leaves as stored, when the record has a fragment table (else null): what a reader that
   * takes each result whole reads instead of pathOf, kinds and refs, which are then expanded from
   * these on first use. Leaf indexes above (event ranges) count each result as its leaves.
   */
  readonly compact: CompactLeaves | null;
}

/**
 * A record's leaves with its fragment table: the events' leaves [0, eventLeaves), where a
 * KIND_FRAGMENT leaf's ref names table entry f, whose leaves are [starts[f], starts[f + 1]).
 * Number leaves' refs are their index in `nums`, as in a LeafView.
 */
export interface CompactLeaves {
  readonly eventLeaves: number;
  readonly pathOf: Uint32Array;
  readonly kinds: Uint8Array;
  readonly refs: Uint32Array;
  readonly starts: Uint32Array;
}

/**
 * Finds a compact view's event leaves from LeafView's leaf indexes (which count each result as its
 * leaves), for indexes asked for in rising order: a batch's events, or one store's events of it.
 * A result with no leaves at the end of an event is found at the start of the next: it sets nothing.
 */
export class CompactCursor {
  private at = 0;
  private stored = 0;

  constructor(private readonly compact: CompactLeaves) {}

  /** The index in `compact` of LeafView's leaf `expanded` (or of the end, for the last leaf's end). */
  seek(expanded: number): number {
    const { kinds, refs, starts } = this.compact;
    let at = this.at;
    let c = this.stored;
    assert(expanded >= at, 'a compact view is walked in leaf order');
    for (; at < expanded; c++) at += kinds[c] === KIND_FRAGMENT ? starts[refs[c] + 1] - starts[refs[c]] : 1;
    assert(at === expanded, 'an event starts and ends at a leaf of the record');
    this.at = at;
    this.stored = c;
    return c;
  }
}

/** A LeafView of a record with a fragment table: its per-leaf arrays are expanded when first asked for. */
class CompactView implements LeafView {
  private expanded: { pathOf: Uint32Array; kinds: Uint8Array; refs: Uint32Array } | null = null;

  constructor(
    readonly count: number,
    readonly paths: readonly string[],
    readonly strings: readonly string[],
    readonly nums: Float64Array,
    readonly compact: CompactLeaves,
  ) {}

  get pathOf(): Uint32Array {
    return (this.expanded ??= expand(this.compact, this.count)).pathOf;
  }

  get kinds(): Uint8Array {
    return (this.expanded ??= expand(this.compact, this.count)).kinds;
  }

  get refs(): Uint32Array {
    return (this.expanded ??= expand(this.compact, this.count)).refs;
  }
}

/** Each result's leaves in place of its reference: copies of the table's, numbers included. */
function expand(compact: CompactLeaves, count: number): { pathOf: Uint32Array; kinds: Uint8Array; refs: Uint32Array } {
  const { eventLeaves, pathOf, kinds, refs, starts } = compact;
  const outPathOf = new Uint32Array(count);
  const outRefs = new Uint32Array(count);
  const outKinds = new Uint8Array(count);
  let to = 0;
  for (let i = 0; i < eventLeaves; i++) {
    if (kinds[i] !== KIND_FRAGMENT) {
      outPathOf[to] = pathOf[i];
      outRefs[to] = refs[i];
      outKinds[to++] = kinds[i];
      continue;
    }
    const f = refs[i];
    for (let j = starts[f], end = starts[f + 1]; j < end; j++, to++) {
      outPathOf[to] = pathOf[j];
      outRefs[to] = refs[j];
      outKinds[to] = kinds[j];
    }
  }
  return { pathOf: outPathOf, kinds: outKinds, refs: outRefs };
}

export { KIND_FALSE, KIND_FRAGMENT, KIND_LIST, KIND_NULL, KIND_NUM, KIND_STR, KIND_TRUE };

/** Reads bytes written by LeafEncoder. Throws on bytes that are not such an encoding. */
export function viewLeaves(bytes: Uint8Array): LeafView {
  if (bytes.byteLength < HEADER_BYTES) throw new Error('leaves: truncated header');
  // The typed views need 8-aligned bytes; a WAL payload puts them anywhere.
  const data = bytes.byteOffset % 8 === 0 ? bytes : new Uint8Array(bytes);
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const [magic, stored, pathCount, strCount, numCount, pathsLength, stringsLength, fragmentCount] =
    new Uint32Array(data.buffer, data.byteOffset, HEADER_WORDS);
  const starts = fragmentCount === 0 ? 0 : fragmentCount + 1;
  const fixed = HEADER_BYTES + 8 * numCount + 9 * stored + 4 * (pathCount + strCount + starts);
  if (magic !== MAGIC || fixed + pathsLength + stringsLength !== data.byteLength) throw new Error('leaves: bad header');
  let at = HEADER_BYTES;
  const nums = new Float64Array(data.buffer, data.byteOffset + at, numCount);
  at += 8 * numCount;
  const pathOf = new Uint32Array(data.buffer, data.byteOffset + at, stored);
  at += 4 * stored;
  // Number leaves get their index in nums here: a copy, so the bytes stay as they were written.
  const refs = new Uint32Array(data.buffer.slice(data.byteOffset + at, data.byteOffset + at + 4 * stored));
  at += 4 * stored;
  const pathBytes = new Uint32Array(data.buffer, data.byteOffset + at, pathCount);
  at += 4 * pathCount;
  const strBytes = new Uint32Array(data.buffer, data.byteOffset + at, strCount);
  at += 4 * strCount;
  const fragmentStarts = new Uint32Array(data.buffer, data.byteOffset + at, starts);
  at += 4 * starts;
  const kinds = new Uint8Array(data.buffer, data.byteOffset + at, stored); // not a Buffer: one map for every reader
  at += stored;
  const paths = readStrings(buffer, at, pathBytes, at + pathsLength);
  const strings = readStrings(buffer, at + pathsLength, strBytes, data.byteLength);
  const eventLeaves = fragmentCount === 0 ? stored : fragmentStarts[0];
  if (fragmentCount > 0) {
    if (fragmentStarts[fragmentCount] !== stored) throw new Error('leaves: fragment table length mismatch');
    for (let f = 0; f < fragmentCount; f++) {
      if (fragmentStarts[f] > fragmentStarts[f + 1]) throw new Error('leaves: fragment table out of order');
    }
  }
  let n = 0;
  let count = 0;
  for (let i = 0; i < stored; i++) {
    const kind = kinds[i];
    if (kind === KIND_FRAGMENT) {
      if (i >= eventLeaves) throw new Error('leaves: fragment in the fragment table');
      const f = refs[i];
      if (f >= fragmentCount) throw new Error('leaves: fragment out of range');
      count += fragmentStarts[f + 1] - fragmentStarts[f];
      continue;
    }
    if (pathOf[i] >= pathCount) throw new Error('leaves: path out of range');
    if (i < eventLeaves) count++;
    switch (kind) {
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
        throw new Error(`leaves: unknown kind ${kind}`);
    }
  }
  if (fragmentCount === 0) return { count, paths, strings, pathOf, kinds, refs, nums, compact: null };
  const compact = { eventLeaves, pathOf, kinds, refs, starts: fragmentStarts };
  return new CompactView(count, paths, strings, nums, compact);
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
