/**
 * The log view of a collection for the outbound Kafka stream: its stored events in log (seq) order,
 * read from segments and the write buffer. A collection's segments are per day, so their seq ranges
 * interleave; a read merges the candidates by seq. Each record's JSON is rebuilt from its columns
 * (storage/event-json.ts). Recently read segments stay decoded in a small cache because consumers
 * read forward.
 */
import type { LogRecord } from './record.js';
import { hideProperties, keptRows, type DeleteEntry } from '../deletes/predicate.js';
import { eventId } from '../storage/event-ids.js';
import { ColumnViews } from '../query/eval/columns.js';
import { compileFilters, Scratch } from '../query/eval/filter-eval.js';
import type { FilterNode } from '../query/plan/plan.js';
import type { ColumnChunk } from '../storage/chunk.js';
import { EventBuilder } from '../storage/event-json.js';
import { chunkBytes } from '../storage/chunk-bytes.js';
import type { CollectionStore } from '../storage/collection.js';
import { readSegment } from '../storage/segment/reader.js';


export class LogReader {
  /** Decoded segments, least recently used first, under budgetBytes. */
  private readonly cache = new Map<string, { chunk: ColumnChunk; bytes: number }>();
  private cachedBytes = 0;
  /** Event builders of the chunks records were last read from; a read touches a few chunks. */
  private builders = new Map<ColumnChunk, EventBuilder>();

  private readonly views = new ColumnViews();
  private readonly scratch = new Scratch();

  constructor(
    private readonly storeOf: (project: string, collection: string) => CollectionStore | undefined,
    private readonly budgetBytes: number,
    private readonly deletesOf: (project: string, collection: string) => DeleteEntry[] = () => [],
  ) {}

  /** Per row of `chunk`, 1 when a pending delete removed it; null when none did. */
  private deletedMask(chunk: ColumnChunk, deletes: readonly DeleteEntry[]): Uint8Array | null {
    if (deletes.length === 0) return null;
    const kept = keptRows(chunk, deletes, this.views, this.scratch);
    if (kept.length === chunk.rows) return null;
    const mask = new Uint8Array(chunk.rows).fill(1);
    for (const row of kept) mask[row] = 0;
    return mask;
  }

  bounds(project: string, collection: string): { start: number; end: number } {
    const store = this.storeOf(project, collection);
    if (!store) return { start: 0, end: 0 };
    let start = store.buffer.rows > 0 ? store.buffer.firstSeq : store.nextSeq;
    for (const segment of store.segments) start = Math.min(start, segment.footer.seqMin);
    return { start, end: store.buffer.rows > 0 ? store.buffer.lastSeq + 1 : store.flushedSeq };
  }

  /**
   * Up to maxRecords records from offset `from`, in log order. With `filters`, each record says
   * whether its event passes them (`matches`), evaluated by the query engine's own filter code on
   * the columns (a cached dataset counts what a query counts), and one that does not pass comes
   * without its JSON (`json` empty): the reader only needs to step over it.
   */
  read(project: string, collection: string, from: number, maxRecords: number, maxBytes: number,
    filters?: readonly FilterNode[]): LogRecord[] {
    const store = this.storeOf(project, collection);
    if (!store || maxRecords <= 0) return [];
    const candidates = store.segments.filter((s) => s.footer.seqMax >= from)
      .sort((a, b) => a.footer.seqMin - b.footer.seqMin);
    const picked: { chunk: ColumnChunk; row: number }[] = [];
    const deletes = this.deletesOf(project, collection);
    for (const segment of candidates) {
      // Once maxRecords rows are picked, a segment starting past the largest picked seq adds nothing.
      if (picked.length >= maxRecords && segment.footer.seqMin > picked[maxRecords - 1].chunk.seq[picked[maxRecords - 1].row]) break;
      const chunk = this.chunkOf(segment.file);
      pickRows(chunk, from, maxRecords, picked, this.deletedMask(chunk, deletes));
      picked.sort((a, b) => a.chunk.seq[a.row] - b.chunk.seq[b.row]);
      picked.length = Math.min(picked.length, maxRecords);
    }
    if (store.buffer.rows > 0) {
      const chunk = store.buffer.snapshot();
      pickRows(chunk, from, maxRecords, picked, this.deletedMask(chunk, deletes));
      picked.sort((a, b) => a.chunk.seq[a.row] - b.chunk.seq[b.row]);
    }
    const out: LogRecord[] = [];
    let bytes = 0;
    const builders = new Map<ColumnChunk, EventBuilder>();
    const passing = filters === undefined || filters.length === 0 ? null
      : this.passingRows(picked.slice(0, maxRecords), filters, deletes);
    for (const { chunk, row } of picked) {
      if (out.length === maxRecords || (out.length > 0 && bytes >= maxBytes)) break;
      if (passing !== null && passing.get(chunk)?.has(row) !== true) {
        out.push({ offset: chunk.seq[row], id: eventId(store.idKey, chunk.seq[row]), createdAtMs: chunk.createdAt[row], json: '', matches: false });
        continue;
      }
      let builder = builders.get(chunk);
      if (builder === undefined) {
        // Deleted properties are not in the rebuilt event (hideProperties turns them missing).
        builder = (deletes.length === 0 ? this.builders.get(chunk) : undefined)
          ?? new EventBuilder(hideProperties(chunk, deletes), store.idKey);
        builders.set(chunk, builder);
      }
      const json = builder.json(row);
      bytes += json.length;
      out.push({ offset: chunk.seq[row], id: eventId(store.idKey, chunk.seq[row]), createdAtMs: chunk.createdAt[row], json,
        ...(passing !== null && { matches: true }) });
    }
    this.builders = builders;
    return out;
  }

  /** Per chunk, the picked rows that pass `filters` (deleted properties read as missing). */
  private passingRows(picked: readonly { chunk: ColumnChunk; row: number }[], filters: readonly FilterNode[],
    deletes: readonly DeleteEntry[]): Map<ColumnChunk, Set<number>> {
    const rowsOf = new Map<ColumnChunk, number[]>();
    for (const { chunk, row } of picked) {
      let rows = rowsOf.get(chunk);
      if (rows === undefined) rowsOf.set(chunk, (rows = []));
      rows.push(row);
    }
    const passing = new Map<ColumnChunk, Set<number>>();
    for (const [chunk, rows] of rowsOf) {
      const visible = deletes.length === 0 ? chunk : hideProperties(chunk, deletes);
      const selection = Int32Array.from(rows);
      this.scratch.ensure(chunk.rows);
      const n = compileFilters(filters, visible, this.views, this.scratch)(selection, selection, selection.length);
      passing.set(chunk, new Set(selection.subarray(0, n)));
    }
    return passing;
  }

  offsetForTime(project: string, collection: string, timestampMs: number): number {
    const store = this.storeOf(project, collection);
    if (!store) return 0;
    let best = Infinity;
    const chunks = store.segments.map((s) => this.chunkOf(s.file));
    if (store.buffer.rows > 0) chunks.push(store.buffer.snapshot());
    for (const chunk of chunks) {
      for (let i = 0; i < chunk.rows; i++) {
        if (chunk.createdAt[i] >= timestampMs && chunk.seq[i] < best) {
          best = chunk.seq[i];
          break;
        }
      }
    }
    return best === Infinity ? this.bounds(project, collection).end : best;
  }

  /** Drops a decoded segment that compaction replaced. */
  forget(file: string): void {
    const entry = this.cache.get(file);
    if (entry === undefined) return;
    this.cache.delete(file);
    this.cachedBytes -= entry.bytes;
  }

  private chunkOf(file: string): ColumnChunk {
    const cached = this.cache.get(file);
    if (cached) {
      this.cache.delete(file);
      this.cache.set(file, cached);
      return cached.chunk;
    }
    const chunk = readSegment(file);
    const bytes = chunkBytes(chunk);
    this.cache.set(file, { chunk, bytes });
    this.cachedBytes += bytes;
    for (const [other, entry] of this.cache) {
      if (this.cachedBytes <= this.budgetBytes || other === file) break;
      this.cache.delete(other);
      this.cachedBytes -= entry.bytes;
    }
    return chunk;
  }
}

/** Adds up to maxRecords rows of `chunk` with seq ≥ from (seq increases within a chunk), skipping deleted ones. */
function pickRows(
  chunk: ColumnChunk, from: number, maxRecords: number, picked: { chunk: ColumnChunk; row: number }[],
  deleted: Uint8Array | null,
): void {
  let low = 0, high = chunk.rows;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (chunk.seq[mid] < from) low = mid + 1;
    else high = mid;
  }
  let taken = 0;
  for (let row = low; row < chunk.rows && taken < maxRecords; row++) {
    if (deleted !== null && deleted[row] === 1) continue;
    picked.push({ chunk, row });
    taken++;
  }
}
