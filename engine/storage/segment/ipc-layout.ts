/**
 * The Arrow IPC file layout segments use (layout.ts), as Tally's own readers see it: the footer,
 * schema and batch headers parsed from flatbuffers, and the place of every buffer. Parsed once per
 * file and thread and kept (`layouts`); ipc-read.ts reads and decompresses the buffers.
 *
 *   File    => "ARROW1" pad:2 Message* Footer footerLength:i32 "ARROW1"
 *   Message => 0xFFFFFFFF metadataLength:i32 flatbuffer(Message) pad body
 *   Buffer  => (compressed body) uncompressedLength:i64 (-1: stored as is) bytes
 */
import { SEGMENT_LAYOUTS_CACHED_MAX } from '../../base/limits.js';

const MAGIC = 'ARROW1';
export const TYPE_NULL = 1;
export const TYPE_INT = 2;
export const TYPE_FLOAT = 3;
export const TYPE_BINARY = 4;
export const TYPE_UTF8 = 5;
export const TYPE_BOOL = 6;
export const TYPE_TIMESTAMP = 10;
export const TYPE_LIST = 12;
export const TYPE_FIXED_SIZE_BINARY = 15;
export const TYPE_FIXED_SIZE_LIST = 16;
const HEADER_RECORD_BATCH = 3;
const HEADER_DICTIONARY_BATCH = 2;
const CODEC_LZ4_FRAME = 0;
const CODEC_ZSTD = 1;
/** Body compression of a batch: none, or the codec of its buffers. */
export type Codec = 'none' | 'lz4' | 'zstd';

/** Read access to a flatbuffer (little-endian); positions are absolute byte offsets in `bytes`. */
class Flat {
  private readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  u8(at: number): number { return this.view.getUint8(at); }
  u16(at: number): number { return this.view.getUint16(at, true); }
  i32(at: number): number { return this.view.getInt32(at, true); }
  u32(at: number): number { return this.view.getUint32(at, true); }
  /** An int64 that fits a double (lengths and offsets do). */
  i64(at: number): number { return this.view.getUint32(at, true) + this.view.getInt32(at + 4, true) * 4294967296; }
  root(at = 0): number { return at + this.u32(at); }
  /** Position of field `id` of the table at `table`, or 0 when absent. */
  field(table: number, id: number): number {
    const vtable = table - this.i32(table);
    const slot = 4 + 2 * id;
    if (slot >= this.u16(vtable)) return 0;
    const offset = this.u16(vtable + slot);
    return offset === 0 ? 0 : table + offset;
  }
  /** The table, string or vector an offset field points to, or 0. */
  ref(table: number, id: number): number {
    const at = this.field(table, id);
    return at === 0 ? 0 : at + this.u32(at);
  }
  scalar(table: number, id: number, read: 'u8' | 'u16' | 'i32' | 'i64', fallback = 0): number {
    const at = this.field(table, id);
    return at === 0 ? fallback : this[read](at);
  }
  length(vector: number): number { return vector === 0 ? 0 : this.u32(vector); }
  /** Element i of a vector of tables. */
  tableAt(vector: number, index: number): number {
    const at = vector + 4 + 4 * index;
    return at + this.u32(at);
  }
  string(at: number): string {
    if (at === 0) return '';
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + at + 4, this.u32(at)).toString('utf8');
  }
}

export interface TypeInfo {
  readonly kind: number;
  readonly bitWidth: number;
  readonly signed: boolean;
  /** FloatingPoint precision: 0 half, 1 single, 2 double; FixedSizeBinary: its byte width; FixedSizeList: its list size. */
  readonly precision: number;
}

export interface FieldInfo {
  readonly name: string;
  readonly metadata: ReadonlyMap<string, string>;
  readonly type: TypeInfo;
  readonly children: readonly FieldInfo[];
  /** Dictionary-encoded: its id and the index type (the field's `type` is the values'). */
  readonly dictionary: { readonly id: number; readonly index: TypeInfo } | null;
}

export interface Block { readonly offset: number; readonly metaLength: number; readonly bodyLength: number }

export interface BatchHeader {
  readonly length: number;
  /** Per field node, its length and null count (2 numbers a node: headers are kept, layouts). */
  readonly nodes: Float64Array;
  /** Per buffer, its offset in the body and its length. */
  readonly buffers: Float64Array;
  readonly codec: Codec;
  readonly bodyOffset: number;
}

/**
 * What a file's footer and record batch header say: its schema and the place of every buffer.
 * Parsed once per file and thread (`layouts`), since segment files never change: a query that
 * reads a column the thread has not read yet, or a segment's times, opens the file again.
 */
export interface Layout {
  readonly fields: readonly FieldInfo[];
  readonly metadata: ReadonlyMap<string, string>;
  readonly batch: BatchHeader;
  /** Per field, the index of its first node and first buffer in the batch. */
  readonly firstNode: readonly number[];
  readonly firstBuffer: readonly number[];
  readonly dictionaryBlocks: readonly Block[];
  /** The headers of the dictionary batches read so far, by dictionary id. */
  readonly dictionaries: Map<number, BatchHeader>;
}

/**
 * Layouts parsed by this thread, least recently used first, each under the identity of the file
 * it was parsed from (inode, size, mtime: a path that names another file is parsed again), and
 * null for files this reader does not know (apache-arrow reads them). About 10 KB each for a
 * segment of 11 columns (so at most ~5 MB a thread); a query worker reads a few dozen files a
 * collection (one a day it is pinned to), each for one column at a time.
 */
const layouts = new Map<string, { identity: string; layout: Layout | null }>();

/** The identity a layout is kept under: a path that names another file is parsed again. */
export function fileIdentity(stat: { ino: number; size: number; mtimeMs: number }): string {
  return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
}

/** The layout kept for `file` if it was parsed from the file of `identity` (marked used); undefined if none. */
export function keptLayout(file: string, identity: string): { layout: Layout | null } | undefined {
  const known = layouts.get(file);
  if (known === undefined || known.identity !== identity) return undefined;
  layouts.delete(file);
  layouts.set(file, known);
  return known;
}

/** Keeps the layout parsed from `file` (null: not ours to read), least recently used dropped first. */
export function keepLayout(file: string, identity: string, layout: Layout | null): void {
  layouts.delete(file);
  layouts.set(file, { identity, layout });
  if (layouts.size > SEGMENT_LAYOUTS_CACHED_MAX) layouts.delete(layouts.keys().next().value!);
}

/**
 * The header of dictionary `id` of a file, from its layout or read (then kept in the layout) from
 * the dictionary batches' headers, each parsed once.
 */
export function dictionaryHeader(layout: Layout, read: ReadAt, id: number, fieldName: string): BatchHeader {
  const { dictionaries, dictionaryBlocks } = layout;
  let header = dictionaries.get(id);
  for (let b = 0; header === undefined && b < dictionaryBlocks.length; b++) {
    const parsed = readBatchHeader(read, dictionaryBlocks[b], HEADER_DICTIONARY_BATCH);
    if (parsed === null || dictionaries.has(parsed.id)) continue;
    dictionaries.set(parsed.id, parsed.header);
    if (parsed.id === id) header = parsed.header;
  }
  if (header === undefined) throw new Error(`Arrow file: dictionary ${id} of field ${fieldName} is missing`);
  return header;
}


/** Reads `length` bytes of a file at `position` (ipc-read.ts: fs.readSync of the open file). */
export type ReadAt = (position: number, length: number) => Uint8Array;

/** Parses the footer and record batch header of a file of `size` bytes; null: not ours to read. */
export function parseLayout(read: ReadAt, size: number): Layout | null {
  if (size < 24) throw new Error('not an Arrow file: too short');
  const tail = read(size - 10, 10);
  if (Buffer.from(tail.buffer, tail.byteOffset + 4, 6).toString('latin1') !== MAGIC) throw new Error('not an Arrow file: no trailing magic');
  const footerLength = new DataView(tail.buffer, tail.byteOffset).getInt32(0, true);
  if (footerLength <= 0 || footerLength > size - 18) throw new Error('not an Arrow file: bad footer length');
  const flat = new Flat(read(size - 10 - footerLength, footerLength));
  const footer = flat.root();
  const schema = parseSchema(flat, flat.ref(footer, 1));
  if (schema === null) return null;
  const blocks = (id: number): Block[] => {
    const vector = flat.ref(footer, id);
    return Array.from({ length: flat.length(vector) }, (_, i) => {
      const at = vector + 4 + 24 * i;
      return { offset: flat.i64(at), metaLength: flat.i32(at + 8), bodyLength: flat.i64(at + 16) };
    });
  };
  const batches = blocks(3);
  if (batches.length !== 1) return null;
  const batch = readBatchHeader(read, batches[0], HEADER_RECORD_BATCH);
  if (batch === null) return null;
  const firstNode: number[] = [];
  const firstBuffer: number[] = [];
  let node = 0;
  let buffer = 0;
  for (const field of schema.fields) {
    firstNode.push(node);
    firstBuffer.push(buffer);
    node += nodeCount(field);
    buffer += bufferCount(field);
  }
  return {
    fields: schema.fields, metadata: schema.metadata, batch: batch.header, firstNode, firstBuffer,
    dictionaryBlocks: blocks(2), dictionaries: new Map(),
  };
}

const KNOWN = new Set([TYPE_NULL, TYPE_INT, TYPE_FLOAT, TYPE_BINARY, TYPE_UTF8, TYPE_BOOL, TYPE_TIMESTAMP, TYPE_LIST, TYPE_FIXED_SIZE_BINARY, TYPE_FIXED_SIZE_LIST]);

function nodeCount(field: FieldInfo): number {
  return 1 + field.children.reduce((total, child) => total + nodeCount(child), 0);
}

/** IPC buffers of a field (Null has none; a dictionary-encoded field's values are in the dictionary batch). */
function bufferCount(field: FieldInfo): number {
  const kind = field.dictionary !== null ? TYPE_INT : field.type.kind;
  if (kind === TYPE_NULL) return 0;
  if (kind === TYPE_UTF8 || kind === TYPE_BINARY) return 3;
  if (kind === TYPE_LIST) return 2 + bufferCount(field.children[0]);
  if (kind === TYPE_FIXED_SIZE_LIST) return 1 + bufferCount(field.children[0]);
  return 2;
}

function parseMetadata(flat: Flat, vector: number): Map<string, string> {
  const metadata = new Map<string, string>();
  for (let i = 0; i < flat.length(vector); i++) {
    const pair = flat.tableAt(vector, i);
    metadata.set(flat.string(flat.ref(pair, 0)), flat.string(flat.ref(pair, 1)));
  }
  return metadata;
}

function parseType(flat: Flat, kind: number, table: number): TypeInfo {
  if (kind === TYPE_INT) return { kind, bitWidth: flat.scalar(table, 0, 'i32'), signed: flat.scalar(table, 1, 'u8') !== 0, precision: 0 };
  if (kind === TYPE_FLOAT) return { kind, bitWidth: 0, signed: true, precision: flat.scalar(table, 0, 'u16') };
  if (kind === TYPE_FIXED_SIZE_BINARY || kind === TYPE_FIXED_SIZE_LIST) {
    return { kind, bitWidth: 0, signed: false, precision: flat.scalar(table, 0, 'i32') };
  }
  return { kind, bitWidth: 0, signed: false, precision: 0 };
}

function parseField(flat: Flat, table: number): FieldInfo | null {
  const kind = flat.scalar(table, 2, 'u8');
  if (!KNOWN.has(kind)) return null;
  const type = parseType(flat, kind, flat.ref(table, 3));
  const children = parseFields(flat, flat.ref(table, 5));
  if (children === null) return null;
  if ((kind === TYPE_LIST || kind === TYPE_FIXED_SIZE_LIST) && children.length !== 1) return null;
  const encoding = flat.ref(table, 4);
  let dictionary: FieldInfo['dictionary'] = null;
  if (encoding !== 0) {
    const indexTable = flat.ref(encoding, 1);
    const index = indexTable === 0 ? { kind: TYPE_INT, bitWidth: 32, signed: true, precision: 0 } : parseType(flat, TYPE_INT, indexTable);
    dictionary = { id: flat.scalar(encoding, 0, 'i64'), index };
    if (kind !== TYPE_UTF8 && kind !== TYPE_BINARY && kind !== TYPE_FIXED_SIZE_BINARY) return null;
  }
  return { name: flat.string(flat.ref(table, 0)), metadata: parseMetadata(flat, flat.ref(table, 6)), type, children, dictionary };
}

function parseSchema(flat: Flat, schema: number): { fields: FieldInfo[]; metadata: Map<string, string> } | null {
  if (schema === 0) return null;
  const fields = parseFields(flat, flat.ref(schema, 1));
  return fields === null ? null : { fields, metadata: parseMetadata(flat, flat.ref(schema, 2)) };
}

/** The fields of a vector of Field tables (a schema's, or a field's children); null if any is not ours to read. */
function parseFields(flat: Flat, vector: number): FieldInfo[] | null {
  const fields: FieldInfo[] = [];
  for (let i = 0; i < flat.length(vector); i++) {
    const field = parseField(flat, flat.tableAt(vector, i));
    if (field === null) return null;
    fields.push(field);
  }
  return fields;
}

/** The header of the message at `block`, if it is of `kind` and its compression is one we read. */
function readBatchHeader(read: ReadAt, block: Block, kind: number): { header: BatchHeader; id: number } | null {
  const meta = read(block.offset, block.metaLength);
  const flat = new Flat(meta);
  let start = 0;
  if (flat.u32(0) === 0xffffffff) start = 8;
  else start = 4; // pre-1.0 streams: length only
  const message = flat.root(start);
  if (flat.scalar(message, 1, 'u8') !== kind) return null;
  let batch = flat.ref(message, 2);
  let id = -1;
  if (kind === HEADER_DICTIONARY_BATCH) {
    id = flat.scalar(batch, 0, 'i64');
    if (flat.scalar(batch, 2, 'u8') !== 0) return null; // delta dictionaries are not written
    batch = flat.ref(batch, 1);
  }
  const compression = flat.ref(batch, 3);
  const codecId = compression === 0 ? -1 : flat.scalar(compression, 0, 'u8');
  if (codecId !== -1 && codecId !== CODEC_LZ4_FRAME && codecId !== CODEC_ZSTD) return null;
  const codec: Codec = codecId === -1 ? 'none' : codecId === CODEC_ZSTD ? 'zstd' : 'lz4';
  const nodesVector = flat.ref(batch, 1);
  const buffersVector = flat.ref(batch, 2);
  // Each vector entry is two int64s: (length, null count) of a node, (offset, length) of a buffer.
  const pairs = (vector: number): Float64Array => {
    const out = new Float64Array(2 * flat.length(vector));
    for (let i = 0; i < out.length; i++) out[i] = flat.i64(vector + 4 + 8 * i);
    return out;
  };
  const nodes = pairs(nodesVector);
  const buffers = pairs(buffersVector);
  const header = { length: flat.scalar(batch, 0, 'i64'), nodes, buffers, codec, bodyOffset: block.offset + block.metaLength };
  return { header, id };
}
