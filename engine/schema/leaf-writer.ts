/**
 * The bytes of LeafEncoder's encoding (leaf-codec.ts gives the layout), written from the tables it
 * built: into a fresh buffer, or into one grow-only buffer that each call overwrites (`scratch`), for
 * a caller that copies the bytes out before it encodes again (a single event's WAL record). Every
 * field goes through two typed views of the whole buffer, made once per buffer, not a view per field.
 */
import { LEAF_SCRATCH_BYTES_MAX } from '../base/limits.js';
export const MAGIC = 0x4c454146; // "LEAF"
export const HEADER_WORDS = 8;
export const HEADER_BYTES = HEADER_WORDS * 4;


/** One encoding's tables: per leaf (events' first, then the fragment table's) and the distinct texts. */
export interface LeafTables {
  /** Stored leaves: `count` event leaves in pathOf/refs/kinds, then the table's. */
  readonly count: number;
  readonly pathOf: Uint32Array;
  readonly refs: Uint32Array;
  readonly kinds: Uint8Array;
  readonly table: { readonly pathOf: readonly number[]; readonly refs: readonly number[]; readonly kinds: readonly number[] };
  /** The number leaves' values, in leaf order (the table's after the events'). */
  readonly nums: Float64Array;
  readonly numCount: number;
  /** Empty, or one entry per fragment plus the end. */
  readonly fragmentStarts: readonly number[];
  readonly paths: readonly string[];
  readonly strings: readonly string[];
  /** UTF-16 length of paths and strings together. */
  readonly chars: number;
}

interface Target {
  readonly bytes: Buffer;
  readonly words: Uint32Array;
  readonly doubles: Float64Array;
}

function target(bytes: Buffer): Target {
  return {
    bytes,
    words: new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2),
    doubles: new Float64Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 3),
  };
}

export class LeafWriter {
  private scratch: Target | null = null;

  /** The encoding of `t`, from offset 0 (8-aligned); with `scratch`, valid until the next scratch write. */
  write(t: LeafTables, scratch: boolean): Buffer {
    const tableCount = t.table.kinds.length;
    const stored = t.count + tableCount;
    const fixed = HEADER_BYTES + 8 * t.numCount + 9 * stored + 4 * (t.paths.length + t.strings.length + t.fragmentStarts.length);
    const bound = fixed + 3 * t.chars;
    const out = scratch && bound <= LEAF_SCRATCH_BYTES_MAX ? this.scratchOf(bound) : target(Buffer.allocUnsafeSlow(bound));
    const { bytes, words, doubles } = out;
    const { count, table } = t;
    let w = HEADER_BYTES >>> 3;
    for (let i = 0; i < t.numCount; i++) doubles[w++] = t.nums[i];
    w *= 2;
    for (let i = 0; i < count; i++) words[w++] = t.pathOf[i];
    for (let i = 0; i < tableCount; i++) words[w++] = table.pathOf[i];
    for (let i = 0; i < count; i++) words[w++] = t.refs[i];
    for (let i = 0; i < tableCount; i++) words[w++] = table.refs[i];
    const pathBytes = w;
    const strBytes = pathBytes + t.paths.length;
    w = strBytes + t.strings.length;
    for (let i = 0; i < t.fragmentStarts.length; i++) words[w++] = t.fragmentStarts[i];
    let at = 4 * w;
    for (let i = 0; i < count; i++) bytes[at++] = t.kinds[i];
    for (let i = 0; i < tableCount; i++) bytes[at++] = table.kinds[i];
    const pathsStart = at;
    for (let i = 0; i < t.paths.length; i++) at += (words[pathBytes + i] = writeText(bytes, t.paths[i], at));
    const stringsStart = at;
    for (let i = 0; i < t.strings.length; i++) at += (words[strBytes + i] = writeText(bytes, t.strings[i], at));
    const fragmentCount = t.fragmentStarts.length === 0 ? 0 : t.fragmentStarts.length - 1;
    words[0] = MAGIC;
    words[1] = stored;
    words[2] = t.paths.length;
    words[3] = t.strings.length;
    words[4] = t.numCount;
    words[5] = stringsStart - pathsStart;
    words[6] = at - stringsStart;
    words[7] = fragmentCount;
    return bytes.subarray(0, at);
  }

  private scratchOf(bytes: number): Target {
    if (this.scratch === null || this.scratch.bytes.length < bytes) {
      this.scratch = target(Buffer.allocUnsafeSlow(Math.min(LEAF_SCRATCH_BYTES_MAX, Math.max(4096, 2 * bytes))));
    }
    return this.scratch;
  }
}

/** Short ASCII texts (most paths and values) byte by byte: cheaper than a call into Buffer.write. */
function writeText(out: Buffer, text: string, at: number): number {
  const length = text.length;
  if (length > 32) return out.write(text, at, 'utf8');
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return out.write(text, at, 'utf8');
    out[at + i] = c;
  }
  return length;
}
