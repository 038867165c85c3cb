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
  /** The paths of a segment whose strings are all in blocked dictionaries (reader.ts blockedPaths). */
  readonly blockedPaths?: (file: string) => string[];
  /** True when no row of the segment holds one of the strings at the path (reader.ts segmentLacks). */
  readonly segmentLacks?: (file: string, path: string, values: readonly string[]) => boolean;
}

export async function loadSegmentFiles(): Promise<SegmentFiles> {
  const reader = await import('../../storage/segment/reader.js');
  return {
    readSegment: reader.readSegment, readFooter: reader.readFooter, compactColumns: reader.compactColumns,
    blockedPaths: reader.blockedPaths, segmentLacks: reader.segmentLacks,
  };
}

/** Bytes the thread's native zstd decoder has made since its event loop last turned (arrow.ts). */
export async function loadNativeBytes(): Promise<() => number> {
  return (await import('../../storage/segment/arrow.js')).nativeBytesDecodedThisTurn;
}
