/**
 * Reads segments written by writer.ts: the Arrow file back into exactly the ColumnChunk shape,
 * the sidecar footer (checksummed), and a cheap whole-segment check for recovery. Reading is
 * synchronous: a segment is bounded by SEGMENT_ROWS_MAX and callers run it on a worker.
 */
import fs from 'node:fs';
import { DataType, RecordBatchReader, tableFromIPC, type Data, type RecordBatch } from 'apache-arrow';
import { assert } from '../../base/assert.js';
import { WARM_ROWS_PER_DICTIONARY_ENTRY } from '../../base/limits.js';
import { TIME_BLOCK_ROWS, blockMaxima, type Column, type ColumnChunk, type SchemaType, type SegmentFooter } from '../chunk.js';
import './arrow.js';
import { readTimestamps } from './arrow-values.js';
import { unpackCodes } from './bitpack.js';
import { decodeColumn, type StoredField } from './decode-column.js';
import { readAligned } from './durable.js';
import { IpcFile, type FieldData } from './ipc-read.js';
import type { FieldInfo } from './ipc-layout.js';
import { readProjected } from './projection.js';
import { assertFooter, decodeSidecar, type FooterWithSketches } from './footer.js';
import {
  CODES_BITPACKED,
  ENCODING_DELTA,
  META_CODES,
  READABLE_LAYOUT_VERSIONS,
  META_BASE,
  META_BLOCKS,
  META_ENCODING,
  META_FOOTER,
  META_PATH,
  META_ROLE,
  META_SCALE,
  META_TYPE,
  META_VERSION,
  SIDECAR_SUFFIX,
  type Role,
} from './layout.js';

/**
 * The chunk stored in `file`. `columns` limits which property paths are materialized; paths it
 * names that the segment lacks are simply absent. Only the buffers of those paths are read
 * (ipc-read.ts); ts, createdAt and seq are read from the file when a reader first asks for them,
 * so a cached segment a query never reads the times of costs nothing for them. The file stays
 * on disk while any reader that listed it runs (storage/retired-files.ts).
 */
export function readSegment(file: string, columns?: readonly string[]): ColumnChunk {
  const ipc = IpcFile.open(file);
  if (ipc === null) return readSegmentArrow(file, columns);
  try {
    const version = ipc.metadata.get(META_VERSION);
    if (!READABLE_LAYOUT_VERSIONS.includes(version ?? '')) throw new Error(`segment ${file}: unknown layout ${version}`);
    const footer = JSON.parse(ipc.metadata.get(META_FOOTER) ?? 'null') as SegmentFooter;
    assertFooter(footer);
    assert(footer.rows === ipc.rows, 'footer rows match the batch');
    const wanted = columns === undefined ? null : new Set(columns);
    const system = new Map<Role, SystemField>();
    const byPath = new Map<string, StoredField[]>();
    ipc.fields.forEach((field, index) => {
      const role = field.metadata.get(META_ROLE) as Role | undefined;
      assert(role !== undefined, `field ${field.name} has a role`);
      const path = field.metadata.get(META_PATH);
      if (path === undefined) {
        if (role !== 'ts' && role !== 'created_at' && role !== 'seq') return; // v1's _raw
        const delta = field.metadata.get(META_ENCODING) === ENCODING_DELTA;
        system.set(role, { index, base: delta ? Number(field.metadata.get(META_BASE)) : null });
      } else if (wanted === null || wanted.has(path)) {
        const type = (field.metadata.get(META_TYPE) ?? null) as SchemaType | null;
        const scale = field.metadata.get(META_SCALE);
        const group = byPath.get(path) ?? [];
        // Scaled integers are kept as read when they are the column's only field (decode-column.ts).
        group.push({ role, type, data: ipc.read(index, scale !== undefined), scale: scale === undefined ? null : Number(scale) });
        byPath.set(path, group);
      }
    });
    for (const role of ['ts', 'created_at', 'seq'] as const) assert(system.has(role), 'a segment has its system fields');
    const result = new Map<string, Column>();
    for (const [path, fields] of byPath) result.set(path, decodeColumn(path, fields, ipc.rows));
    return new SegmentChunk(file, ipc.rows, system, result);
  } finally {
    ipc.close();
  }
}

/**
 * The property paths of a segment worth holding decoded before any query asks (query/exec/pool.ts
 * warm): every path but those whose dictionary has more than one entry per `rowsPerEntry` rows
 * (ids: their dictionaries cost more memory than their codes, and a query over them spends its
 * time hashing, not decoding). Reads the file's layout and dictionary headers only.
 */
export function compactColumns(file: string, rowsPerEntry = WARM_ROWS_PER_DICTIONARY_ENTRY): string[] {
  const ipc = IpcFile.open(file);
  if (ipc === null) return [];
  try {
    const paths = new Set<string>();
    const wide = new Set<string>();
    ipc.fields.forEach((field, index) => {
      const path = field.metadata.get(META_PATH);
      if (path === undefined) return;
      paths.add(path);
      const entries = ipc.dictionaryLength(index);
      if (entries !== null && entries * rowsPerEntry > ipc.rows) wide.add(path);
    });
    return [...paths].filter((path) => !wide.has(path));
  } finally {
    ipc.close();
  }
}

/**
 * The property paths of a segment whose string values are all in blocked dictionaries
 * (dict-blocks.ts) and that hold no lists and no times: those segmentLacks can answer for.
 * Reads the file's layout only.
 */
export function blockedPaths(file: string): string[] {
  const ipc = IpcFile.open(file);
  if (ipc === null) return [];
  try {
    const blocked = new Set<string>();
    const not = new Set<string>();
    for (const field of ipc.fields) {
      const path = field.metadata.get(META_PATH);
      const holds = stringsIn(field);
      if (path === undefined || holds === 'none') continue;
      if (holds === 'strings' && field.metadata.has(META_BLOCKS)) blocked.add(path);
      else not.add(path);
    }
    return [...blocked].filter((path) => !not.has(path));
  } finally {
    ipc.close();
  }
}

/**
 * True when no row of segment `file` holds one of the strings `values` at `path`, as its blocked
 * dictionaries say (only the frames that may hold them are decoded): an eq or in filter of them
 * then matches no row. False when it cannot tell (see blockedPaths) or some row may.
 */
export function segmentLacks(file: string, path: string, values: readonly string[]): boolean {
  const ipc = IpcFile.open(file);
  if (ipc === null) return false;
  try {
    const keys = values.map((value) => Buffer.from(value, 'utf8'));
    let any = false;
    for (const [index, field] of ipc.fields.entries()) {
      if (field.metadata.get(META_PATH) !== path) continue;
      const holds = stringsIn(field);
      if (holds === 'unknown') return false;
      if (holds === 'strings') {
        if (ipc.dictionaryHoldsAny(index, keys) !== false) return false;
        any = true;
      }
    }
    return any;
  } finally {
    ipc.close();
  }
}

/**
 * What a property's field holds that an eq or in filter of strings could match: `strings` (its
 * dictionary: a string main field or a `:str` extra), `none` (numbers, booleans, nulls, codes),
 * or `unknown` (lists, whose string elements match, and times).
 */
function stringsIn(field: FieldInfo): 'strings' | 'none' | 'unknown' {
  const role = field.metadata.get(META_ROLE);
  const type = field.metadata.get(META_TYPE);
  if (role === 'str' || (role === 'main' && type === 'string')) return 'strings';
  if (role?.startsWith('list_') || (role === 'main' && type !== 'num' && type !== 'bool' && type !== 'null')) return 'unknown';
  return 'none';
}

/** Where a system field is in its file: the field's index, and its base when stored as deltas. */
export interface SystemField {
  readonly index: number;
  readonly base: number | null;
}

/** What a SegmentChunk is made of but its columns: the file, where its times are, and those decoded (shared-chunk.ts). */
export interface SegmentChunkParts {
  readonly file: string;
  readonly rows: number;
  readonly system: readonly (readonly [Role, SystemField])[];
  readonly ts: Float64Array | null;
  readonly tsMaxima: Float64Array | null;
  readonly createdAt: Float64Array | null;
  readonly seq: Float64Array | null;
}

/**
 * A segment's rows as read: property columns decoded, ts/createdAt/seq read from the file and
 * decoded on first access (each at most once). `withColumns` adds columns and shares the times.
 */
export class SegmentChunk implements ColumnChunk {
  private tsValues: Float64Array | null = null;
  private tsMaxima: Float64Array | null = null;
  private createdAtValues: Float64Array | null = null;
  private seqValues: Float64Array | null = null;

  constructor(
    private readonly file: string,
    readonly rows: number,
    private readonly system: ReadonlyMap<Role, SystemField>,
    readonly columns: ReadonlyMap<string, Column>,
  ) {}

  get ts(): Float64Array {
    if (this.tsValues === null) {
      const maxima = new Float64Array(Math.ceil(this.rows / TIME_BLOCK_ROWS));
      this.tsValues = this.readSystem('ts', maxima);
      this.tsMaxima = maxima;
    }
    return this.tsValues;
  }
  get tsBlockMaxima(): Float64Array {
    void this.ts;
    return this.tsMaxima!;
  }
  get createdAt(): Float64Array {
    return (this.createdAtValues ??= this.readSystem('created_at'));
  }
  get seq(): Float64Array {
    return (this.seqValues ??= this.readSystem('seq'));
  }

  /** The same rows with `columns` as their columns (times shared when decoded). */
  withColumns(columns: ReadonlyMap<string, Column>): SegmentChunk {
    const chunk = new SegmentChunk(this.file, this.rows, this.system, columns);
    chunk.tsValues = this.tsValues;
    chunk.tsMaxima = this.tsMaxima;
    chunk.createdAtValues = this.createdAtValues;
    chunk.seqValues = this.seqValues;
    return chunk;
  }

  /** Its parts, the times decoded so far each passed through `keep` (shared-chunk.ts puts them in shared memory). */
  parts(keep: (values: Float64Array) => Float64Array): SegmentChunkParts {
    const kept = (values: Float64Array | null) => (values === null ? null : keep(values));
    this.tsValues = kept(this.tsValues);
    this.tsMaxima = kept(this.tsMaxima);
    this.createdAtValues = kept(this.createdAtValues);
    this.seqValues = kept(this.seqValues);
    return {
      file: this.file, rows: this.rows, system: [...this.system], ts: this.tsValues, tsMaxima: this.tsMaxima,
      createdAt: this.createdAtValues, seq: this.seqValues,
    };
  }

  /** The chunk of `parts` with `columns` (its times as decoded there, the rest read from the file when asked). */
  static of(parts: SegmentChunkParts, columns: ReadonlyMap<string, Column>): SegmentChunk {
    const chunk = new SegmentChunk(parts.file, parts.rows, new Map(parts.system), columns);
    chunk.tsValues = parts.ts;
    chunk.tsMaxima = parts.tsMaxima;
    chunk.createdAtValues = parts.createdAt;
    chunk.seqValues = parts.seq;
    return chunk;
  }

  /** Bytes held by the times decoded so far (the columns are counted by chunk-bytes.ts). */
  systemBytes(): number {
    let bytes = 0;
    for (const values of [this.tsValues, this.createdAtValues, this.seqValues]) bytes += values?.byteLength ?? 0;
    return bytes;
  }

  /** A system field's values (and, given `maxima`, each block's greatest: systemValues). */
  private readSystem(role: Role, maxima?: Float64Array): Float64Array {
    const { index, base } = this.system.get(role)!;
    const ipc = IpcFile.open(this.file);
    assert(ipc !== null, `segment ${this.file} reads as it did`);
    try {
      assert(ipc.rows === this.rows, `segment ${this.file} has the rows it had`);
      return systemValues({ data: ipc.read(index), base }, this.rows, maxima);
    } finally {
      ipc.close();
    }
  }
}

/** apache-arrow's reader, for files ipc-read.ts does not know (none Tally writes today). */
export function readSegmentArrow(file: string, columns?: readonly string[]): ColumnChunk {
  const wanted = columns === undefined ? null : new Set(columns);
  const batch = readBatch(file, wanted);
  const rows = batch.numRows;
  const system = new Map<Role, { data: FieldData; base: number | null }>();
  const byPath = new Map<string, StoredField[]>();
  batch.schema.fields.forEach((field, index) => {
    const role = field.metadata.get(META_ROLE) as Role | undefined;
    assert(role !== undefined, `field ${field.name} has a role`);
    let data: FieldData = batch.getChildAt(index)!.data[0];
    if (field.metadata.get(META_CODES) === CODES_BITPACKED) data = unpackedArrow(data, batch.getChildAt(index + 1)?.data[0]);
    const path = field.metadata.get(META_PATH);
    const delta = field.metadata.get(META_ENCODING) === ENCODING_DELTA;
    if (path === undefined) system.set(role, { data, base: delta ? Number(field.metadata.get(META_BASE)) : null });
    else if (wanted === null || wanted.has(path)) {
      const type = (field.metadata.get(META_TYPE) ?? null) as SchemaType | null;
      const scale = field.metadata.get(META_SCALE);
      const group = byPath.get(path) ?? [];
      group.push({ role, type, data, scale: scale === undefined ? null : Number(scale) });
      byPath.set(path, group);
    }
  });
  const result = new Map<string, Column>();
  for (const [path, fields] of byPath) result.set(path, decodeColumn(path, fields, rows));
  return {
    rows,
    ts: systemValues(system.get('ts'), rows),
    createdAt: systemValues(system.get('created_at'), rows),
    seq: systemValues(system.get('seq'), rows),
    columns: result,
  };
}

/** A main field whose codes are bit-packed in `codes`, the field after it (layout.ts), as a dictionary field. */
function unpackedArrow(main: FieldData, codes: Data | undefined): FieldData {
  const child = codes?.children[0];
  assert(codes !== undefined && DataType.isFixedSizeList(codes.type) && child !== undefined, 'bit-packed codes follow their field');
  const bits = codes.type.listSize;
  assert(codes.length === main.length && child.length === main.length * bits && codes.offset === 0 && child.offset === 0, 'packed codes cover every row');
  const bytes = child.values as Uint8Array;
  const packed = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const out = new (main.values.constructor as Int32ArrayConstructor)(main.length);
  unpackCodes(packed, bits, out);
  return {
    length: main.length, offset: 0, nullCount: codes.nullCount, nullBitmap: codes.nullCount === 0 ? undefined : codes.nullBitmap,
    values: out, valueOffsets: undefined, children: [], dictionary: main.dictionary,
  };
}

/** The single record batch of a segment file, after checking its layout version and footer. */
function readBatch(file: string, wanted: ReadonlySet<string> | null): RecordBatch {
  const bytes = readAligned(file);
  // Fields of other paths are not decompressed (projection.ts); system fields always are.
  const batches = wanted === null ? tableFromIPC(bytes).batches
    : readProjected(bytes, (field) => {
      const path = field.metadata.get(META_PATH);
      return path === undefined || wanted.has(path);
    });
  assert(batches.length === 1, 'a segment holds one record batch');
  const batch = batches[0];
  const version = batch.schema.metadata.get(META_VERSION);
  if (!READABLE_LAYOUT_VERSIONS.includes(version ?? '')) throw new Error(`segment ${file}: unknown layout ${version}`);
  const footer = JSON.parse(batch.schema.metadata.get(META_FOOTER) ?? 'null') as SegmentFooter;
  assertFooter(footer);
  assert(footer.rows === batch.numRows, 'footer rows match the batch');
  return batch;
}

/** A system field's values: delta-decoded, or read from Timestamp(ms) or Float64. */
/**
 * A system field's values as doubles. With `maxima`, also the greatest value of each block of
 * TIME_BLOCK_ROWS rows, found in the decoding loop every read of times runs (so an extraction of
 * the latest events never makes a pass of its own over a segment's times).
 */
function systemValues(
  field: { data: FieldData; base: number | null } | undefined, rows: number, maxima?: Float64Array,
): Float64Array {
  assert(field !== undefined, 'a segment has its system fields');
  const { data, base } = field;
  const target = new Float64Array(rows);
  if (base !== null) {
    const deltas = data.values as Int8Array | Int16Array | Int32Array;
    assert(deltas.length >= rows, 'a delta per row');
    if (maxima !== undefined) return sumDeltasWithMaxima(deltas, base, target, maxima);
    let value = base;
    for (let row = 0; row < rows; row++) target[row] = value += deltas[row];
    return target;
  }
  if (data.values instanceof Float64Array) target.set(data.values.subarray(0, rows));
  else readTimestamps(data, target);
  maxima?.set(blockMaxima(target, rows));
  return target;
}

/** target[row] = base + deltas[0 ..= row], and each block's greatest into maxima. */
function sumDeltasWithMaxima(
  deltas: Int8Array | Int16Array | Int32Array, base: number, target: Float64Array, maxima: Float64Array,
): Float64Array {
  let value = base;
  for (let block = 0; block < maxima.length; block++) {
    const start = block * TIME_BLOCK_ROWS;
    const end = Math.min(target.length, start + TIME_BLOCK_ROWS);
    let max = -Infinity;
    for (let row = start; row < end; row++) {
      value += deltas[row];
      target[row] = value;
      max = value > max ? value : max;
    }
    maxima[block] = max;
  }
  return target;
}

/** The footer and sketches of `file` from its sidecar; throws an Error if it is damaged. */
export function readFooter(file: string): FooterWithSketches {
  const footer = decodeSidecar(fs.readFileSync(file + SIDECAR_SUFFIX), file + SIDECAR_SUFFIX);
  assertFooter(footer);
  return footer;
}

/**
 * Whether the segment at `file` is whole: both files present, the sidecar's checksum good, the
 * Arrow file's own footer parseable and in agreement with the sidecar. For startup recovery; it
 * does not decompress the data.
 */
export function verifySegment(file: string): boolean {
  try {
    const footer = readFooter(file);
    const reader = RecordBatchReader.from(readAligned(file));
    reader.open();
    const stored = JSON.parse(reader.schema.metadata.get(META_FOOTER) ?? 'null') as SegmentFooter;
    return (
      reader.isFile() &&
      reader.numRecordBatches === 1 &&
      stored?.rows === footer.rows &&
      stored.seqMax === footer.seqMax
    );
  } catch (error) {
    // Translating "unreadable" into false is this function's contract; bugs still throw.
    if (error instanceof Error && error.name === 'AssertionError') throw error;
    return false;
  }
}
