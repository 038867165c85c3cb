/**
 * Loads storage/segment/reader.ts lazily, so the query layer works (with in-memory chunks only)
 * even where segment files are never read, and a worker pays the Arrow import once.
 */
import type { FooterWithSketches } from '../../storage/segment/footer.js';
import type { ColumnChunk } from '../../storage/chunk.js';

/** Reads a segment file's chunk (only `columns`, when given). */
export type ReadSegment = (file: string, columns?: readonly string[]) => ColumnChunk;

export interface SegmentFiles {
  readonly readSegment: ReadSegment;
  readonly readFooter: (file: string) => FooterWithSketches;
  /** The columns of a segment worth decoding before a query asks (reader.ts compactColumns). */
  readonly compactColumns: (file: string) => string[];
}

export async function loadSegmentFiles(): Promise<SegmentFiles> {
  const reader = await import('../../storage/segment/reader.js');
  return { readSegment: reader.readSegment, readFooter: reader.readFooter, compactColumns: reader.compactColumns };
}

/** Bytes the thread's native zstd decoder has made since its event loop last turned (arrow.ts). */
export async function loadNativeBytes(): Promise<() => number> {
  return (await import('../../storage/segment/arrow.js')).nativeBytesDecodedThisTurn;
}
