/** About how many bytes a decoded chunk holds in memory: what the memory budget counts (memory.ts). */
import type { Column, ColumnChunk } from './chunk.js';

export function chunkBytes(chunk: ColumnChunk): number {
  let bytes = chunk.rows * 24;
  for (const column of chunk.columns.values()) bytes += columnBytes(column);
  return bytes;
}

function columnBytes(column: Column): number {
  let bytes = column.tags.byteLength + (column.num?.byteLength ?? 0) + (column.str?.byteLength ?? 0);
  for (const value of column.dict ?? []) bytes += 16 + value.length * 2;
  if (column.lists) bytes += column.lists.length * 8;
  for (const list of column.lists ?? []) bytes += list === null ? 0 : 16 + list.length * 16;
  return bytes;
}
