/**
 * Decoded segments kept in memory under a byte budget, least recently used evicted first. A
 * segment is decoded whole once (every column), since
 * decoding dominates a scan and later queries touch other columns. Segments are immutable, so an
 * entry never goes stale; a deleted or compacted file simply stops being asked for.
 */
import type { ColumnChunk, SegmentRef } from '../storage/chunk.js';
import { chunkBytes } from '../storage/chunk-bytes.js';
import type { FooterWithSketches } from '../storage/segment/footer.js';
import type { SegmentFiles } from './segment-reader.js';

export type ReadSegment = (file: string, columns?: readonly string[]) => ColumnChunk;

/** Default budgets per worker, for callers without a memory plan (engine/memory.ts makes one). */
export const CHUNK_CACHE_BYTES_DEFAULT = 512 * 1024 * 1024;
export const FOOTER_CACHE_BYTES_DEFAULT = 64 * 1024 * 1024;

export class ChunkCache {
  private readonly entries = new Map<string, { chunk: ColumnChunk; bytes: number }>();
  private bytes = 0;

  private readonly read: ReadSegment;
  /** Footers with their sketches, least recently used first, under footerBudgetBytes. */
  private readonly footers = new Map<string, { footer: FooterWithSketches; bytes: number }>();
  private footerBytes = 0;

  constructor(
    private readonly files: SegmentFiles,
    private readonly budgetBytes = CHUNK_CACHE_BYTES_DEFAULT,
    private readonly footerBudgetBytes = FOOTER_CACHE_BYTES_DEFAULT,
  ) {
    this.read = files.readSegment;
  }

  /** The segment's footer with its per-column HyperLogLog sketches (kept; they are small). */
  footer(ref: SegmentRef): FooterWithSketches {
    const hit = this.footers.get(ref.file);
    if (hit) {
      this.footers.delete(ref.file);
      this.footers.set(ref.file, hit);
      return hit.footer;
    }
    const footer = this.files.readFooter(ref.file);
    let bytes = 1024;
    for (const sketch of Object.values(footer.sketches)) bytes += sketch.byteLength + 64;
    this.footers.set(ref.file, { footer, bytes });
    this.footerBytes += bytes;
    for (const [file, entry] of this.footers) {
      if (this.footerBytes <= this.footerBudgetBytes || file === ref.file) break;
      this.footers.delete(file);
      this.footerBytes -= entry.bytes;
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
