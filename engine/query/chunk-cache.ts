/**
 * Decoded segments kept in memory under a byte budget, least recently used evicted first. A
 * segment is decoded whole once (every column), since
 * decoding dominates a scan and later queries touch other columns. Segments are immutable, so an
 * entry never goes stale; a deleted or compacted file simply stops being asked for.
 */
import type { Column, ColumnChunk, SegmentRef } from '../storage/chunk.js';
import type { FooterWithSketches } from '../storage/segment/footer.js';
import type { SegmentFiles } from './segment-reader.js';

export type ReadSegment = (file: string, columns?: readonly string[]) => ColumnChunk;

/** Footers kept; sketches are at most 16 KiB per column. */
const FOOTERS_MAX = 4096;

/** Default budget per worker; decoded columns of ~10M typical events. */
export const CHUNK_CACHE_BYTES_DEFAULT = 3 * 1024 * 1024 * 1024;

export class ChunkCache {
  private readonly entries = new Map<string, { chunk: ColumnChunk; bytes: number }>();
  private bytes = 0;

  private readonly read: ReadSegment;
  private readonly footers = new Map<string, FooterWithSketches>();

  constructor(private readonly files: SegmentFiles, private readonly budgetBytes = CHUNK_CACHE_BYTES_DEFAULT) {
    this.read = files.readSegment;
  }

  /** The segment's footer with its per-column HyperLogLog sketches (kept; they are small). */
  footer(ref: SegmentRef): FooterWithSketches {
    let footer = this.footers.get(ref.file);
    if (!footer) {
      footer = this.files.readFooter(ref.file);
      if (this.footers.size >= FOOTERS_MAX) this.footers.delete(this.footers.keys().next().value!);
      this.footers.set(ref.file, footer);
    }
    return footer;
  }

  /** The segment's chunk. */
  load(ref: SegmentRef): ColumnChunk {
    const hit = this.entries.get(ref.file);
    if (hit) {
      this.entries.delete(ref.file);
      this.entries.set(ref.file, hit);
      return hit.chunk;
    }
    const chunk = this.read(ref.file);
    const bytes = chunkBytes(chunk);
    if (bytes <= this.budgetBytes) {
      this.entries.set(ref.file, { chunk, bytes });
      this.bytes += bytes;
      for (const [file, entry] of this.entries) {
        if (this.bytes <= this.budgetBytes) break;
        this.entries.delete(file);
        this.bytes -= entry.bytes;
      }
    }
    return chunk;
  }
}

function chunkBytes(chunk: ColumnChunk): number {
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
