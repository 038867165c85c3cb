/**
 * Writes one ColumnChunk as an immutable segment: a standard Arrow IPC file (layout.ts) with
 * LZ4_FRAME body compression, and a sidecar `file.meta` with the footer and sketches (footer.ts).
 * Durability order: both files are staged and fsynced, the sidecar is renamed first, then the
 * Arrow file, so whenever `file` exists its sidecar does too. Deciding file names is the caller's.
 */
import fs from 'node:fs';
import {
  Field,
  RecordBatch,
  RecordBatchFileWriter,
  Schema,
  Struct,
  makeData,
  type Data,
} from 'apache-arrow';
import { assert } from '../../base/assert.js';
import type { ColumnChunk, SchemaType, SegmentFooter } from '../chunk.js';
import { SEGMENT_COMPRESSION, withCompressionPause } from './arrow.js';
import { deltaData, float64Data, selectRows, timestampData } from './arrow-data.js';
import { TMP_SUFFIX, commitFile, stageFile } from './durable.js';
import { encodeColumn, type EncodedField } from './encode-column.js';
import { assertFooter, computeFooter, encodeSidecar } from './footer.js';
import {
  FIELD_CREATED_AT,
  FIELD_SEQ,
  FIELD_TS,
  ENCODING_DELTA,
  LAYOUT_VERSION,
  META_BASE,
  META_ENCODING,
  META_FOOTER,
  META_ROLE,
  META_VERSION,
  SIDECAR_SUFFIX,
  type Role,
} from './layout.js';
import { computePairTables } from './pair-counts.js';
import { computeDistinct, computeGroupStats, computeSketches } from './sketches.js';

/**
 * Writes `chunk` to `file` (and `file.meta`) durably and returns its footer. A path absent from
 * `schema` is stored as its first present row's type; it is still lossless, only less tidy.
 */
export function writeSegment(
  file: string,
  chunk: ColumnChunk,
  schema: Readonly<Record<string, SchemaType>>,
  pause?: () => void,
): SegmentFooter {
  assertChunk(chunk);
  const footer = computeFooter(chunk);
  assertFooter(footer);
  const distinct = computeGroupStats(chunk, computeDistinct(chunk));
  const pairs = computePairTables(chunk, distinct);
  pause?.();
  const sidecar = encodeSidecar(footer, computeSketches(chunk, distinct), distinct, pairs);
  pause?.();
  const arrow = encodeSegment(chunk, schema, footer, pause);
  stageFile(file, arrow);
  try {
    stageFile(file + SIDECAR_SUFFIX, sidecar);
  } catch (error) {
    fs.rmSync(file + TMP_SUFFIX, { force: true }); // nothing half-staged stays on a full disk
    throw error;
  }
  commitFile(file + SIDECAR_SUFFIX);
  commitFile(file);
  return footer;
}

function assertChunk(chunk: ColumnChunk): void {
  assert(chunk.rows > 0, 'a segment holds at least one row');
  assert(chunk.ts.length >= chunk.rows, 'ts covers every row');
  assert(chunk.createdAt.length >= chunk.rows, 'createdAt covers every row');
  assert(chunk.seq.length >= chunk.rows, 'seq covers every row');
  for (let row = 1; row < chunk.rows; row++) {
    assert(chunk.seq[row - 1] < chunk.seq[row], 'seq strictly increases within a chunk');
  }
}

/** The whole Arrow IPC file of `chunk`, in memory. */
export function encodeSegment(
  chunk: ColumnChunk,
  schema: Readonly<Record<string, SchemaType>>,
  footer: SegmentFooter,
  pause?: () => void,
): Uint8Array {
  const encoded = [...encodeSystemFields(chunk)];
  let dictionaryId = 0;
  const nextDictionaryId = () => dictionaryId++;
  for (const [path, column] of chunk.columns) {
    assert(column.path === path, 'a column is keyed by its path');
    assert(column.tags.length >= chunk.rows, 'tags cover every row');
    const tags = column.tags.subarray(0, chunk.rows);
    const type = schema[path] ?? inferType(tags);
    pause?.();
    encoded.push(...encodeColumn({ ...column, tags }, type, nextDictionaryId));
  }
  const metadata = new Map([
    [META_VERSION, LAYOUT_VERSION],
    [META_FOOTER, JSON.stringify(footer)],
  ]);
  const arrowSchema = new Schema(encoded.map((entry) => entry.field), metadata);
  const data = makeData({
    type: new Struct(arrowSchema.fields),
    length: chunk.rows,
    nullCount: 0,
    children: encoded.map((entry) => entry.data),
  });
  const batch = new RecordBatch(arrowSchema, data);
  // The writer compresses every buffer here, in one call: `pause` runs before each.
  return withCompressionPause(pause ?? null,
    () => RecordBatchFileWriter.writeAll([batch], { compressionType: SEGMENT_COMPRESSION }).toUint8Array(true));
}

function encodeSystemFields(chunk: ColumnChunk): EncodedField[] {
  const rows = chunk.rows;
  const all = selectRows(new Uint8Array(rows), 0);
  return [
    systemField(FIELD_TS, 'ts', chunk.ts, rows, () => timestampData(chunk.ts, all)),
    systemField(FIELD_CREATED_AT, 'created_at', chunk.createdAt, rows, () => timestampData(chunk.createdAt, all)),
    systemField(FIELD_SEQ, 'seq', chunk.seq, rows, () => float64Data(chunk.seq, all)),
  ];
}

/** A system field delta-encoded (layout.ts) when its differences fit, else as `plain` builds it. */
function systemField(name: string, role: Role, values: Float64Array, rows: number, plain: () => Data): EncodedField {
  const metadata = new Map<string, string>([[META_ROLE, role]]);
  const delta = deltaData(values, rows);
  if (delta !== null) {
    metadata.set(META_ENCODING, ENCODING_DELTA);
    metadata.set(META_BASE, String(delta.base));
  }
  const data = delta?.data ?? plain();
  return { field: new Field(name, data.type, false, metadata), data };
}

/** Schema type of a path the schema lacks: that of its first present row. */
function inferType(tags: Uint8Array): SchemaType {
  const byTag: readonly SchemaType[] = ['null', 'null', 'num', 'string', 'bool', 'list'];
  for (let row = 0; row < tags.length; row++) if (tags[row] !== 0) return byTag[tags[row]];
  return 'null';
}
