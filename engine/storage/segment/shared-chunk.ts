/**
 * Segment columns in shared memory: one worker's cache holds a segment's columns once, and every
 * other query worker reads them (query/exec/chunk-cache.ts peers) without reading the file or
 * decoding again. A column's typed arrays are copied into SharedArrayBuffers when it is read for
 * warming (inSharedMemory); posted to another thread (postMessage), a SharedChunk is then the same
 * memory, not a copy. Lists (JS values) cannot be shared: a column holding them stays its worker's.
 */
import { isUniformTags, uniformTags, type Column, type ColumnChunk } from '../chunk.js';
import { SegmentColumn, type Members } from './decode-column.js';
import { SegmentChunk, type SegmentChunkParts } from './reader.js';

/** A SegmentColumn as stored, every array in shared memory; `tags` a number: each row has that tag. */
export interface SharedColumn {
  readonly path: string;
  readonly tags: Uint8Array | number;
  readonly members: Omit<Members, 'tags' | 'lists'>;
}

/** A segment's chunk whose columns another worker holds in shared memory: what a peer reads. */
export interface SharedChunk {
  readonly parts: SegmentChunkParts;
  readonly columns: readonly SharedColumn[];
}

type Shareable = Uint8Array | Int8Array | Int16Array | Int32Array | Float64Array;

/** `values` in a SharedArrayBuffer: itself when it is one already, else a copy. */
function shared<T extends Shareable>(values: T): T {
  if (values.buffer instanceof SharedArrayBuffer) return values;
  const Kind = values.constructor as new (buffer: SharedArrayBuffer, offset: number, length: number) => T;
  const copy = new Kind(new SharedArrayBuffer(values.byteLength), 0, values.length);
  copy.set(values as never);
  return copy;
}

function isShared(values: Shareable | null | undefined): boolean {
  return values === null || values === undefined || values.buffer instanceof SharedArrayBuffer;
}

/** Whether every array of the column is in shared memory (tags of one tag need not be). */
export function isSharedColumn(column: Column): boolean {
  if (!(column instanceof SegmentColumn) || column.lists !== null) return false;
  const { tags, num, scaled, str, utf8, padded } = column.stored();
  return (isUniformTags(tags) || isShared(tags)) && isShared(num) && isShared(scaled?.values) && isShared(str)
    && isShared(utf8?.bytes) && isShared(utf8?.offsets) && isShared(padded?.bytes);
}

/**
 * The column with its arrays in shared memory, as read (a fresh SegmentColumn: nothing made from
 * it yet); the column itself when it cannot be shared (lists, or not read from a segment).
 */
export function inSharedMemory(column: Column): Column {
  if (!(column instanceof SegmentColumn) || column.lists !== null || isSharedColumn(column)) return column;
  const { tags, num, scaled, str, utf8, padded } = column.stored();
  return new SegmentColumn(column.path, {
    tags: isUniformTags(tags) ? tags : shared(tags),
    num: num === null ? null : shared(num),
    scaled: scaled === null ? null : { values: shared(scaled.values), factor: scaled.factor },
    str: str === null ? null : shared(str),
    utf8: utf8 === null ? null : { bytes: shared(utf8.bytes), offsets: shared(utf8.offsets) },
    padded: padded === null ? null : { bytes: shared(padded.bytes), width: padded.width, count: padded.count },
    lists: null,
  });
}

/**
 * What a peer needs to read the chunk's shared columns: null for a chunk not read from a
 * segment file by reader.ts. The times it has decoded are moved into shared memory first (the
 * chunk keeps the shared copies), so both workers hold them once.
 */
export function shareChunk(chunk: ColumnChunk): SharedChunk | null {
  if (!(chunk instanceof SegmentChunk)) return null;
  const columns: SharedColumn[] = [];
  for (const column of chunk.columns.values()) {
    if (!(column instanceof SegmentColumn) || !isSharedColumn(column)) continue;
    const { tags, lists: _lists, ...members } = column.stored();
    columns.push({ path: column.path, tags: isUniformTags(tags) ? tags[0] : tags, members });
  }
  return { parts: chunk.parts(shared), columns };
}

/** The chunk a peer reads: the shared columns over the same memory, its times as shared or read from the file when asked. */
export function peerChunk(chunk: SharedChunk): ColumnChunk {
  const rows = chunk.parts.rows;
  const columns = new Map<string, Column>();
  for (const { path, tags, members } of chunk.columns) {
    columns.set(path, new SegmentColumn(path, { ...members, tags: typeof tags === 'number' ? uniformTags(tags as never, rows) : tags, lists: null }));
  }
  return SegmentChunk.of(chunk.parts, columns);
}
