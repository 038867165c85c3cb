/**
 * One collection's storage: its schema dictionary, write buffer, uniqueness tokens and segments.
 * Lists the segments for a timeframe, flushes the buffer into per-day segments and compacts a
 * partition's small segments. Knows nothing of the WAL or of other collections.
 */
import fs from 'node:fs';
import path from 'node:path';
import { assert } from '../base/assert.js';
import { collectionIdKey } from './event-ids.js';
import { PARTITION_QUIET_MS, PARTITION_SEGMENTS_MAX, SEGMENT_ROWS_MAX } from '../base/limits.js';
import { SchemaDictionary } from '../schema/dictionary.js';
import type { Leaves } from '../schema/flatten.js';
import type { LeafView } from '../schema/leaf-codec.js';
import { WriteBuffer, type ViewCache } from './buffer.js';
import type { ColumnChunk, SchemaType, ScanSource, SegmentFooter, SegmentRef } from './chunk.js';
import type { ManifestCollection, ManifestSegment } from './manifest.js';
import { PARTITION_SPAN_MS, partitionIndex, partitionKey } from './partition.js';
import { TokenIndex } from './tokens.js';

/** One segment of a flush: the rows of the flushed chunk at `indices` (every row when null). */
export interface FlushPart {
  readonly file: string;
  readonly indices: Int32Array | null;
  readonly rows: number;
}

export interface FlushPlan {
  readonly rows: number;
  readonly lastSeq: number;
  /** The buffered rows, detached: the segment worker splits them into the parts. */
  readonly chunk: ColumnChunk;
  readonly parts: readonly FlushPart[];
  readonly schema: Readonly<Record<string, SchemaType>>;
}

export interface CompactionPlan {
  readonly file: string;
  readonly sources: readonly string[];
  readonly schema: Readonly<Record<string, SchemaType>>;
}

export class CollectionStore {
  readonly schema: SchemaDictionary;
  readonly tokens: TokenIndex;
  buffer = new WriteBuffer();
  segments: SegmentRef[];
  /** Next log offset to hand out. */
  nextSeq: number;
  /** Rows with seq below this are in segments. */
  flushedSeq: number;
  /** Key of the collection's svc.id values (storage/event-ids.ts). */
  readonly idKey: number;
  private readonly dir: string;
  /** When a flush last wrote into each day partition (ms); compaction waits for quiet days. */
  private readonly flushedAt = new Map<string, number>();

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
    this.idKey = collectionIdKey(project, name);
  }

  get relativeDir(): string {
    return path.relative(this.dataDir, this.dir);
  }

  /** Adds an acknowledged (or replayed) row to the buffer. */
  apply(seq: number, tsMs: number, createdAtMs: number, leaves: Leaves, from: number, to: number): void {
    assert(seq >= this.flushedSeq, 'only unflushed rows enter the buffer');
    this.buffer.append(tsMs, createdAtMs, seq, leaves, from, to);
  }

  /** apply() for a row whose leaves are a view's [from, to); `cache` is the buffer's for the view (buffer.ts). */
  applyView(seq: number, tsMs: number, createdAtMs: number, view: LeafView, from: number, to: number, cache: ViewCache): void {
    assert(seq >= this.flushedSeq, 'only unflushed rows enter the buffer');
    this.buffer.appendView(tsMs, createdAtMs, seq, view, from, to, cache);
  }

  scanSource(startMs: number, endMs: number): ScanSource {
    const segments = this.segments.filter((s) => s.footer.tsMax >= startMs && s.footer.tsMin < endMs);
    const buffer = this.buffer;
    const inRange = buffer.rows > 0 && buffer.tsMax >= startMs && buffer.tsMin < endMs;
    const memory = inRange ? buffer.snapshot() : null;
    return { idKey: this.idKey, segments, memory, memoryVersion: memory === null ? 0 : buffer.version, schema: this.schema.toJSON() };
  }

  /**
   * What a flush of the buffer as it is now must write: one segment per day. The buffer keeps
   * serving scans until finishFlush swaps the written rows for the new segments in one step.
   */
  async planFlush(): Promise<FlushPlan | null> {
    const buffer = this.buffer;
    if (buffer.rows === 0) return null;
    const chunk = await buffer.detachedSnapshotInSteps();
    const parts: FlushPart[] = [];
    for (const [day, indices] of rowsByPartition(chunk)) {
      const whole = indices.length === chunk.rows;
      parts.push({ file: this.newSegmentFile(day, chunk.seq[indices[0]]), indices: whole ? null : indices, rows: indices.length });
      this.flushedAt.set(day, Date.now());
    }
    return { rows: chunk.rows, lastSeq: chunk.seq[chunk.rows - 1], chunk, parts, schema: this.schema.toJSON() };
  }

  finishFlush(plan: FlushPlan, footers: readonly SegmentFooter[]): void {
    assert(footers.length === plan.parts.length, 'one footer per flushed part');
    plan.parts.forEach((part, i) => {
      assert(footers[i].rows === part.rows, 'segment footer counts every row');
      this.segments.push({ file: part.file, footer: footers[i] });
    });
    this.buffer = this.buffer.dropPrefix(plan.rows);
    this.flushedSeq = plan.lastSeq + 1;
    this.tokens.persist();
  }

  private newSegmentFile(day: string, firstSeq: number): string {
    const dayDir = path.join(this.dir, day);
    fs.mkdirSync(dayDir, { recursive: true });
    return path.join(dayDir, `${String(firstSeq).padStart(12, '0')}-${process.hrtime.bigint()}.arrow`);
  }

  /** Day partitions where compaction still has segments to merge (two or more small ones). */
  partitionsToMerge(): number {
    const smallPerDay = new Map<string, number>();
    for (const segment of this.segments) {
      if (!isSmall(segment)) continue;
      const day = path.basename(path.dirname(segment.file));
      smallPerDay.set(day, (smallPerDay.get(day) ?? 0) + 1);
    }
    let days = 0;
    for (const count of smallPerDay.values()) if (count >= 2) days++;
    return days;
  }

  /**
   * Small segments of one partition to merge into one: of a partition with more than
   * PARTITION_SEGMENTS_MAX of them, or with two or more that no flush has added to for
   * PARTITION_QUIET_MS. Null when nothing needs compacting.
   */
  planCompaction(nowMs = Date.now()): CompactionPlan | null {
    const byDay = new Map<string, SegmentRef[]>();
    for (const segment of this.segments) {
      const day = path.basename(path.dirname(segment.file));
      const list = byDay.get(day) ?? [];
      list.push(segment);
      byDay.set(day, list);
    }
    for (const [day, list] of byDay) {
      const small = list.filter(isSmall)
        .sort((a, b) => a.footer.seqMin - b.footer.seqMin);
      const quiet = nowMs - (this.flushedAt.get(day) ?? 0) >= PARTITION_QUIET_MS;
      if (small.length <= PARTITION_SEGMENTS_MAX && !(quiet && small.length >= 2)) continue;
      const sources = takeWithinRows(small, SEGMENT_ROWS_MAX).map((s) => s.file);
      if (sources.length < 2) continue;
      return { file: this.newSegmentFile(day, small[0].footer.seqMin), sources, schema: this.schema.toJSON() };
    }
    return null;
  }

  /** Swaps the merged segment in for its sources; returns the source files to delete after commit. */
  finishCompaction(plan: CompactionPlan, footer: SegmentFooter): string[] {
    const replaced = new Set(plan.sources);
    this.segments = this.segments.filter((s) => !replaced.has(s.file));
    this.segments.push({ file: plan.file, footer });
    return plan.sources.slice();
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

/**
 * Each day partition's rows of `chunk`, in row order. Counted in a typed array over the days the
 * chunk spans (a Map per row took 25 ms of the write thread for a 250,000-row flush).
 */
export function rowsByPartition(chunk: ColumnChunk): Map<string, Int32Array> {
  const rows = chunk.rows;
  const day = new Float64Array(rows);
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < rows; i++) {
    const p = partitionIndex(chunk.ts[i]);
    day[i] = p;
    if (p < first) first = p;
    if (p > last) last = p;
  }
  const out = new Map<string, Int32Array>();
  if (rows === 0) return out;
  if (last - first >= PARTITION_SPAN_DAYS_MAX) return rowsByPartitionMap(day, rows);
  const counts = new Int32Array(last - first + 1);
  for (let i = 0; i < rows; i++) counts[day[i] - first]++;
  const lists: (Int32Array | undefined)[] = new Array(counts.length);
  for (let d = 0; d < counts.length; d++) if (counts[d] > 0) lists[d] = new Int32Array(counts[d]);
  const fill = new Int32Array(counts.length);
  for (let i = 0; i < rows; i++) {
    const d = day[i] - first;
    lists[d]![fill[d]++] = i;
  }
  for (let d = 0; d < lists.length; d++) if (lists[d] !== undefined) out.set(partitionKey((first + d) * PARTITION_SPAN_MS), lists[d]!);
  return out;
}

/** Days a flush's rows may span before rowsByPartition counts them in a Map instead. */
const PARTITION_SPAN_DAYS_MAX = 1 << 16;

function rowsByPartitionMap(day: Float64Array, rows: number): Map<string, Int32Array> {
  const lists = new Map<number, number[]>();
  for (let i = 0; i < rows; i++) {
    let list = lists.get(day[i]);
    if (list === undefined) lists.set(day[i], list = []);
    list.push(i);
  }
  const out = new Map<string, Int32Array>();
  for (const [p, list] of lists) out.set(partitionKey(p * PARTITION_SPAN_MS), Int32Array.from(list));
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

/** A segment compaction merges with others of its day: under half a merged segment's rows. */
function isSmall(segment: SegmentRef): boolean {
  return segment.footer.rows < SEGMENT_ROWS_MAX / 2;
}
