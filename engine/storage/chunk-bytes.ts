/** About how many bytes a decoded chunk holds in memory: what the memory budget counts (memory.ts). */
import { isUniformTags, type Column, type ColumnChunk } from './chunk.js';
import { SegmentColumn } from './segment/decode-column.js';

export function chunkBytes(chunk: ColumnChunk): number {
  return systemBytes(chunk) + columnsBytes(chunk) + dictStringBytes(chunk);
}

/**
 * Bytes of the JS strings made from segment columns' stored dictionaries (SegmentColumn): 0 until
 * something asks a column for its strings, so, like systemBytes, it grows as readers use them.
 */
export function dictStringBytes(chunk: ColumnChunk): number {
  let bytes = 0;
  for (const column of chunk.columns.values()) if (column instanceof SegmentColumn) bytes += column.decodedBytes;
  return bytes;
}

/**
 * Bytes of ts, createdAt and seq. A segment as read keeps them stored until asked
 * (segment/reader.ts), so this grows as readers decode them: cheap to ask again.
 */
export function systemBytes(chunk: ColumnChunk): number {
  const system = (chunk as { systemBytes?: () => number }).systemBytes;
  return typeof system === 'function' ? system.call(chunk) : chunk.rows * 24;
}

/** Bytes of the property columns as built (see dictStringBytes for what grows later). */
export function columnsBytes(chunk: ColumnChunk): number {
  let bytes = 0;
  for (const column of chunk.columns.values()) bytes += columnBytes(column);
  return bytes;
}

/** Bytes of one column as built (a segment column's dictionary strings, once made, not included). */
export function columnBytes(column: Column): number {
  // A segment column's numbers as read (asking for `num` would make the Float64 values of stored ones).
  const numBytes = column instanceof SegmentColumn ? column.numBytes : column.num?.byteLength ?? 0;
  let bytes = (isUniformTags(column.tags) ? 0 : column.tags.byteLength) + numBytes + (column.str?.byteLength ?? 0);
  if (column instanceof SegmentColumn) bytes += column.dictBytes;
  else for (const value of column.dict ?? []) bytes += 16 + value.length * 2;
  if (column.lists) bytes += column.lists.length * 8;
  for (const list of column.lists ?? []) bytes += list === null ? 0 : 16 + list.length * 16;
  return bytes;
}
