/**
 * One collection's storage: its schema dictionary, write buffer, uniqueness tokens and segments.
 * Lists the segments for a timeframe, flushes the buffer into per-day segments and compacts a
 * partition's small segments. Knows nothing of the WAL or of other collections.
 */
import fs from 'node:fs';
import path from 'node:path';
import { assert } from '../assert.js';
import { PARTITION_SEGMENTS_MAX, SEGMENT_ROWS_MAX } from '../limits.js';
import { SchemaDictionary } from '../schema/dictionary.js';
import type { Leaves } from '../schema/flatten.js';
import { WriteBuffer } from './buffer.js';
import type { ColumnChunk, ScanSource, SegmentRef } from './chunk.js';
import { concatChunks, gatherChunk } from './chunk-ops.js';
import type { ManifestCollection, ManifestSegment } from './manifest.js';
import { partitionIndex, partitionKey } from './partition.js';
import { readSegment } from './segment/reader.js';
import { writeSegment } from './segment/writer.js';
import { TokenIndex } from './tokens.js';

export class CollectionStore {
  readonly schema: SchemaDictionary;
  readonly tokens: TokenIndex;
  buffer = new WriteBuffer();
  segments: SegmentRef[];
  /** Next log offset to hand out. */
  nextSeq: number;
  /** Rows with seq below this are in segments. */
  flushedSeq: number;
  private readonly dir: string;

  constructor(
    private readonly dataDir: string,
    readonly project: string,
    readonly name: string,
    saved: ManifestCollection | undefined,
    nowMs: number,
  ) {
    const relative = saved?.dir ?? path.join('projects', project, encodeURIComponent(name));
    this.dir = path.join(dataDir, relative);
    fs.mkdirSync(this.dir, { recursive: true });
    this.schema = new SchemaDictionary(saved?.schema);
    this.tokens = new TokenIndex(path.join(this.dir, 'tokens.log'), nowMs);
    this.segments = (saved?.segments ?? []).map((s) => ({ file: path.join(dataDir, s.file), footer: s.footer }));
    this.nextSeq = saved?.nextSeq ?? 0;
    this.flushedSeq = saved?.flushedSeq ?? 0;
  }

  get relativeDir(): string {
    return path.relative(this.dataDir, this.dir);
  }

  /** Adds an acknowledged (or replayed) row to the buffer. */
  apply(seq: number, tsMs: number, createdAtMs: number, raw: string, leaves: Leaves): void {
    assert(seq >= this.flushedSeq, 'only unflushed rows enter the buffer');
    this.buffer.append(tsMs, createdAtMs, seq, raw, leaves);
  }

  scanSource(startMs: number, endMs: number): ScanSource {
    const segments = this.segments.filter((s) => s.footer.tsMax >= startMs && s.footer.tsMin < endMs);
    const buffer = this.buffer;
    const inRange = buffer.rows > 0 && buffer.tsMax >= startMs && buffer.tsMin < endMs;
    return { segments, memory: inRange ? buffer.snapshot() : null, schema: this.schema.toJSON() };
  }

  /** Writes buffered rows as one segment per day, then starts an empty buffer. Synchronous. */
  flushBuffer(): void {
    const buffer = this.buffer;
    if (buffer.rows === 0) return;
    const chunk = buffer.snapshot();
    const schema = this.schema.toJSON();
    for (const [day, indices] of rowsByPartition(chunk)) {
      const part = indices.length === chunk.rows ? chunk : gatherChunk(chunk, indices);
      this.segments.push(this.writePart(day, part, schema));
    }
    this.flushedSeq = buffer.lastSeq + 1;
    this.buffer = new WriteBuffer();
    this.tokens.persist();
  }

  private writePart(day: string, part: ColumnChunk, schema: ScanSource['schema']): SegmentRef {
    const dayDir = path.join(this.dir, day);
    fs.mkdirSync(dayDir, { recursive: true });
    const file = path.join(dayDir, `${String(part.seq[0]).padStart(12, '0')}-${process.hrtime.bigint()}.arrow`);
    const footer = writeSegment(file, part, schema);
    assert(footer.rows === part.rows, 'segment footer counts every row');
    return { file, footer };
  }

  /**
   * Merges the small segments of the partition with the most segments once it passes
   * PARTITION_SEGMENTS_MAX. Returns the replaced files (to delete after the manifest commits),
   * or null when nothing needed compacting.
   */
  compactOne(): string[] | null {
    const byDay = new Map<string, SegmentRef[]>();
    for (const segment of this.segments) {
      const day = path.basename(path.dirname(segment.file));
      const list = byDay.get(day) ?? [];
      list.push(segment);
      byDay.set(day, list);
    }
    for (const [day, list] of byDay) {
      const small = list.filter((s) => s.footer.rows < SEGMENT_ROWS_MAX / 2)
        .sort((a, b) => a.footer.seqMin - b.footer.seqMin);
      if (small.length <= PARTITION_SEGMENTS_MAX) continue;
      const batch = takeWithinRows(small, SEGMENT_ROWS_MAX);
      if (batch.length < 2) continue;
      const merged = mergeBySeq(batch.map((s) => readSegment(s.file)));
      const ref = this.writePart(day, merged, this.schema.toJSON());
      const replaced = new Set(batch.map((s) => s.file));
      this.segments = this.segments.filter((s) => !replaced.has(s.file)).concat(ref);
      return [...replaced];
    }
    return null;
  }

  toManifest(): ManifestCollection {
    const segments: ManifestSegment[] = this.segments.map((s) => ({
      file: path.relative(this.dataDir, s.file),
      footer: s.footer,
    }));
    return {
      project: this.project,
      collection: this.name,
      dir: this.relativeDir,
      flushedSeq: this.flushedSeq,
      nextSeq: this.nextSeq,
      schema: this.schema.toJSON(),
      segments,
    };
  }

  /** Files in the collection's directory that the manifest does not name: crash leftovers. */
  orphanFiles(): string[] {
    const known = new Set(this.segments.flatMap((s) => [s.file, `${s.file}.meta`]));
    const orphans: string[] = [];
    for (const entry of fs.readdirSync(this.dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const dayDir = path.join(this.dir, entry.name);
      for (const file of fs.readdirSync(dayDir)) {
        const full = path.join(dayDir, file);
        if (!known.has(full)) orphans.push(full);
      }
    }
    return orphans;
  }
}

function rowsByPartition(chunk: ColumnChunk): Map<string, Int32Array> {
  const counts = new Map<number, number>();
  for (let i = 0; i < chunk.rows; i++) {
    const p = partitionIndex(chunk.ts[i]);
    counts.set(p, (counts.get(p) ?? 0) + 1);
  }
  const lists = new Map<number, { indices: Int32Array; fill: number }>();
  for (const [p, count] of counts) lists.set(p, { indices: new Int32Array(count), fill: 0 });
  for (let i = 0; i < chunk.rows; i++) {
    const list = lists.get(partitionIndex(chunk.ts[i]))!;
    list.indices[list.fill++] = i;
  }
  const out = new Map<string, Int32Array>();
  for (const [p, list] of lists) out.set(partitionKey(p * 86_400_000), list.indices);
  return out;
}

function takeWithinRows(segments: SegmentRef[], rowsMax: number): SegmentRef[] {
  const out: SegmentRef[] = [];
  let rows = 0;
  for (const segment of segments) {
    if (rows + segment.footer.rows > rowsMax && out.length > 0) break;
    out.push(segment);
    rows += segment.footer.rows;
  }
  return out;
}

/** Concatenates chunks and orders the rows by seq, so a segment's seq column stays increasing. */
function mergeBySeq(chunks: ColumnChunk[]): ColumnChunk {
  const merged = concatChunks(chunks);
  let sorted = true;
  for (let i = 1; i < merged.rows && sorted; i++) sorted = merged.seq[i] > merged.seq[i - 1];
  if (sorted) return merged;
  const order = Int32Array.from({ length: merged.rows }, (_, i) => i);
  order.sort((a, b) => merged.seq[a] - merged.seq[b]);
  return gatherChunk(merged, order);
}
