/**
 * Decoded segments kept in memory under a byte budget, least recently used evicted first. A
 * segment's columns are decoded when a query first needs them and kept, since decoding dominates
 * a scan. Segments are immutable, so an entry never goes stale; a deleted or compacted file simply
 * stops being asked for.
 */
import {
  BLOCKED_FILES_KEPT_MAX, CHUNK_CACHE_BYTES_DEFAULT, DERIVED_ENTRY_BYTES, DERIVED_STRINGS_MAX, FOOTER_CACHE_BYTES_DEFAULT, NEWEST_HELD_SHARE,
} from '../../base/limits.js';
import { replaceColumns, type ColumnChunk, type SegmentRef } from '../../storage/chunk.js';
import { columnBytes, columnsBytes, dictStringBytes, systemBytes } from '../../storage/chunk-bytes.js';
import { SegmentColumn } from '../../storage/segment/decode-column.js';
import { StringInterner } from '../../storage/string-interner.js';
import { inSharedMemory, peerChunk, shareChunk, type SharedChunk } from '../../storage/segment/shared-chunk.js';
import type { FooterWithSketches } from '../../storage/segment/footer.js';
import { FooterCache } from './footer-cache.js';
import type { Summary } from '../eval/columns.js';
import type { ReadSegment, SegmentFiles } from './segment-reader.js';

export type { ReadSegment };

interface Entry {
  chunk: ColumnChunk;
  columnBytes: number;
  bytes: number;
  complete: boolean;
  /** The last query that read it. */
  epoch: number;
  /** A collection's newest segment, held whole (warmWhole): neither evicted nor trimmed. */
  held?: boolean;
  /** An entry of what a query derived from a segment's sidecar (derived()), not of its columns. */
  derived?: { readonly value: Summary | null };
  /**
   * Columns another worker holds in shared memory (setPeers): counted there, so `bytes` counts
   * only what this worker made from them (times, strings). Never given columns of its own.
   */
  peer?: true;
}

/** What a warm step did: decoded, found it there, found no room, or stopped for a waiting query. */
export type Warmed = 'warmed' | 'cached' | 'full' | 'paused';

const never = () => false;

/**
 * Bytes of a chunk's columns `compact` (what a row of the store takes warmed: pool.ts learns it),
 * with the strings made from them and, when `system`, the times decoded.
 */
function compactBytes(chunk: ColumnChunk, compact: readonly string[], system: boolean): number {
  let bytes = system ? systemBytes(chunk) : 0;
  for (const path of compact) {
    const column = chunk.columns.get(path);
    if (column === undefined) continue;
    bytes += columnBytes(column) + (system && column instanceof SegmentColumn ? column.decodedBytes : 0);
  }
  return bytes;
}

/** A derived entry's key: its segment's file, then a NUL (no file path holds one), then its name. */
function derivedKey(ref: SegmentRef, name: string): string {
  return `${ref.file}\0${name}`;
}

/** A derived summary's bytes: its columns and weights (its instants are a shared view: value-counts.ts). */
function derivedBytes(value: Summary | null): number {
  return DERIVED_ENTRY_BYTES + (value === null ? 0 : columnsBytes(value.chunk) + value.weights.byteLength);
}

export class ChunkCache {
  /** `bytes` is as last measured: a segment chunk grows when a reader first decodes its times. */
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** Per segment file, the paths `lacks` can answer for (reader.ts blockedPaths): a file never changes. */
  private readonly blocked = new Map<string, ReadonlySet<string>>();
  /** The query now running (beginQuery); 0 before the first, when the cache is plain LRU. */
  private epoch = 0;
  /** Columns the running query asked for (null: all of them). */
  private requested: Set<string> | null = new Set();

  private readonly read: ReadSegment;
  /** The files of the entries held whole, oldest first. */
  private readonly held: string[] = [];
  private readonly footers: FooterCache;

  /** Segments other workers hold in shared memory (setPeers), by file: read here without reading the file. */
  private readonly peers = new Map<string, SharedChunk>();
  /** Entries this cache shared (share()) and has not dropped since. */
  private readonly sharedFiles = new Set<string>();
  /** Of those, the ones dropped (evicted, trimmed, forgotten) since takeUnshared(). */
  private unshared: string[] = [];
  /** Loads of a segment answered by a peer's shared columns (whole or in part). */
  peerReads = 0;

  constructor(
    private readonly files: SegmentFiles,
    private readonly budgetBytes = CHUNK_CACHE_BYTES_DEFAULT,
    footerBudgetBytes = FOOTER_CACHE_BYTES_DEFAULT,
    /** Called with each column warmRest reads, before its bytes are counted (it may add to decodedBytes). */
    private readonly restWarmed?: (column: SegmentColumn) => void,
    /** Whether warming puts the columns it reads in shared memory, for share() (a pool of more than one worker). */
    private readonly sharing = false,
  ) {
    this.read = files.readSegment;
    this.footers = new FooterCache(files.readFooter, footerBudgetBytes);
  }

  /** Bytes of the decoded segments held, and those held beside them (hold). */
  get usedBytes(): number {
    return this.bytes;
  }

  /**
   * Counts `bytes` (negative: gives them back) of memory the worker keeps beside the entries (its
   * key ids, key-ids.ts) against the budget: entries make room for it as later ones come in. It
   * evicts nothing itself, so warming that grows it never evicts what queries read.
   */
  hold(bytes: number): void {
    this.bytes += bytes;
  }

  /** The segment's footer with its per-column HyperLogLog sketches (kept; they are small). */
  footer(ref: SegmentRef): FooterWithSketches {
    return this.footers.get(ref.file);
  }

  /**
   * True when no row of the segment holds one of the strings `values` at `path`, as its blocked
   * dictionaries say (reader.ts segmentLacks, which decodes only the frames that may hold them):
   * an eq or in filter of them skips the segment unread. False when some row may or it cannot tell.
   */
  lacks(ref: SegmentRef, path: string, values: readonly string[]): boolean {
    const { blockedPaths, segmentLacks } = this.files;
    if (blockedPaths === undefined || segmentLacks === undefined) return false;
    let paths = this.blocked.get(ref.file);
    if (paths === undefined) {
      paths = new Set(blockedPaths(ref.file));
      this.blocked.set(ref.file, paths);
      if (this.blocked.size > BLOCKED_FILES_KEPT_MAX) this.blocked.delete(this.blocked.keys().next().value!);
    }
    return paths.has(path) && segmentLacks(ref.file, path, values);
  }

  /**
   * Marks the start of a query (runTask). A full cache then makes room only from entries no
   * query has read since it began: when what the query reads does not fit, the segments it read
   * first stay cached and the rest pass through, so each run hits the cached share, where plain
   * LRU would evict every entry just before the next run needs it and hit none.
   */
  beginQuery(): void {
    this.epoch++;
    this.requested = new Set();
  }

  /**
   * The segment's chunk with at least the columns `paths` names that the segment has (null: every
   * column). Columns are decoded on first use and kept; a later query that needs another column
   * decodes just that one, so a cache entry holds what queries read, not the whole segment.
   */
  load(ref: SegmentRef, paths: readonly string[] | null): ColumnChunk {
    return this.loadSharing(ref, paths, false);
  }

  /** load(), with the columns it reads put in shared memory when `sharing` (warmWhole). */
  private loadSharing(ref: SegmentRef, paths: readonly string[] | null, sharing: boolean): ColumnChunk {
    if (paths === null) this.requested = null;
    else if (this.requested !== null) for (const path of paths) this.requested.add(path);
    const hit = this.entries.get(ref.file) ?? this.peerEntry(ref);
    if (hit?.peer === true) this.peerReads++;
    // Every column (an extraction) of a segment partly cached reads only the columns it lacks.
    const missing = hit?.complete ? [] : paths === null && hit === undefined ? null
      : (paths ?? Object.keys(ref.footer.columns))
        .filter((path) => ref.footer.columns[path] !== undefined && !hit?.chunk.columns.has(path));
    if (hit !== undefined && missing !== null && missing.length === 0) {
      this.entries.delete(ref.file);
      this.entries.set(ref.file, hit);
      hit.epoch = this.epoch;
      hit.complete ||= paths === null;
      this.remeasure(hit);
      return hit.chunk;
    }
    const read = this.readColumns(ref.file, missing ?? undefined, sharing);
    let chunk = read;
    if (hit !== undefined) chunk = replaceColumns(hit.chunk, new Map([...hit.chunk.columns, ...read.columns]));
    // A peer's entry takes no columns of this worker's: what it lacks is read for this query alone.
    if (hit?.peer === true) return chunk;
    const columnBytes = columnsBytes(chunk);
    const bytes = columnBytes + systemBytes(chunk) + dictStringBytes(chunk);
    const grows = bytes - (hit?.bytes ?? 0);
    if (bytes > this.budgetBytes || !this.canFree(this.bytes + grows - this.budgetBytes, ref.file)) return chunk;
    // The columns shared before stay in the entry, so its share holds (a peer only lacks the new ones).
    if (hit !== undefined) this.drop(ref.file, true);
    this.entries.set(ref.file, { chunk, columnBytes, bytes, complete: paths === null, epoch: this.epoch });
    this.bytes += bytes;
    this.evict();
    return chunk;
  }

  /** The segment's columns `paths` read from its file, in shared memory when `sharing` (warming: share()). */
  private readColumns(file: string, paths: readonly string[] | undefined, sharing: boolean): ColumnChunk {
    const read = this.read(file, paths);
    if (!sharing || !this.sharing) return read;
    return replaceColumns(read, new Map([...read.columns].map(([path, column]) => [path, inSharedMemory(column)])));
  }

  /**
   * An entry of the segment another worker shares (setPeers), made now: its columns cost this
   * cache nothing, what is made from them (times, strings, keys) is counted as it grows.
   */
  private peerEntry(ref: SegmentRef): Entry | undefined {
    const shared = this.peers.get(ref.file);
    if (shared === undefined) return undefined;
    const chunk = peerChunk(shared);
    const complete = Object.keys(ref.footer.columns).every((path) => chunk.columns.has(path));
    this.entries.set(ref.file, { chunk, columnBytes: 0, bytes: systemBytes(chunk), complete, epoch: this.epoch, peer: true });
    this.bytes += systemBytes(chunk);
    this.evict();
    return this.entries.get(ref.file);
  }

  /**
   * Segments other workers hold in shared memory (their share()): read from there from now on,
   * replacing what was shared before; their memory is counted in those workers' caches. `gone`:
   * no longer held by their workers (dropped from their caches), read from the files again.
   */
  setPeers(shared: readonly SharedChunk[], gone: readonly string[] = []): void {
    for (const chunk of shared) this.peers.set(chunk.parts.file, chunk);
    for (const file of gone) this.peers.delete(file);
    for (const file of [...shared.map((chunk) => chunk.parts.file), ...gone]) if (this.entries.get(file)?.peer === true) this.drop(file);
  }

  /**
   * The segment's entry, its columns and decoded times put in shared memory when read (warming),
   * for the other workers to read (setPeers); null when there is nothing to share. Until the entry
   * is dropped (takeUnshared then names it), its shared columns stay in it.
   */
  share(file: string): SharedChunk | null {
    const entry = this.entries.get(file);
    if (entry === undefined || entry.derived !== undefined || entry.peer === true) return null;
    const shared = shareChunk(entry.chunk);
    if (shared === null || shared.columns.length === 0) return null;
    this.sharedFiles.add(file);
    return shared;
  }

  /** The files share() gave that are dropped since the last call: their peers must let go of them. */
  takeUnshared(): string[] {
    const files = this.unshared;
    this.unshared = [];
    return files;
  }

  /** Bookkeeping of an entry that leaves the cache or loses columns. */
  private left(file: string): void {
    if (this.sharedFiles.delete(file)) this.unshared.push(file);
  }

  /**
   * What `make` derives from a segment's sidecar, under `name` (value-counts.ts: the summary of a
   * pair table), kept as an entry of its own beside the segment's columns, under the same budget
   * and eviction: a query that asks again reads no file and decodes nothing. A null (the segment
   * has no such table) is kept too. Gone with the segment (forget).
   */
  derived(ref: SegmentRef, name: string, make: () => Summary | null): Summary | null {
    const key = derivedKey(ref, name);
    const hit = this.entries.get(key);
    if (hit?.derived !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      hit.epoch = this.epoch;
      return hit.derived.value;
    }
    const value = make();
    const bytes = derivedBytes(value);
    if (bytes > this.budgetBytes || !this.canFree(this.bytes + bytes - this.budgetBytes, key)) return value;
    this.keepDerived(key, value, bytes);
    this.evict();
    return value;
  }

  /** One copy of each string the derived entries hold (internStrings). */
  private interner = new StringInterner(1024);

  /**
   * `values` as the copies the derived entries share: the 1,000 paths of a store's tables by
   * paths are then 1,000 strings, not 1,000 a table of every segment. At most DERIVED_STRINGS_MAX
   * distinct (past it, new copies are made from then on; the entries keep theirs).
   */
  internStrings(values: readonly string[]): string[] {
    if (this.interner.strings.length > DERIVED_STRINGS_MAX) this.interner = new StringInterner(1024);
    const interner = this.interner;
    return values.map((value) => interner.strings[interner.intern(value)]);
  }

  /**
   * derived() while nothing is asking (a segment just written: value-counts.ts warmPairSummaries):
   * kept only in the room the budget has left, so it never evicts what queries read. 'full' when
   * there was none.
   */
  warmDerived(ref: SegmentRef, name: string, make: () => Summary | null): Exclude<Warmed, 'paused'> {
    const key = derivedKey(ref, name);
    if (this.entries.has(key)) return 'cached';
    if (this.bytes >= this.budgetBytes) return 'full';
    const value = make();
    const bytes = derivedBytes(value);
    if (this.bytes + bytes > this.budgetBytes) return 'full';
    this.keepDerived(key, value, bytes);
    return 'warmed';
  }

  /** Whether what derived() keeps under `name` for the segment is kept. */
  hasDerived(ref: SegmentRef, name: string): boolean {
    return this.entries.has(derivedKey(ref, name));
  }

  private keepDerived(key: string, value: Summary | null, bytes: number): void {
    const chunk = value?.chunk ?? { rows: 0, ts: new Float64Array(0), createdAt: new Float64Array(0), seq: new Float64Array(0), columns: new Map() };
    this.entries.set(key, { chunk, columnBytes: bytes, bytes, complete: true, epoch: this.epoch, derived: { value } });
    this.bytes += bytes;
  }

  /** What the last warm() took for the columns without ids (0 when it warmed nothing): what a row of the store takes warmed. */
  warmedCompactBytes = 0;
  /** The segment a warm() stopped in for a waiting query (its entry is warming's, not a query's): the next warm() of it goes on. */
  private warmStopped: string | null = null;

  /**
   * Decodes a segment just written into the cache, its footer and sketches too, before any query
   * asks: the columns worth holding (reader.ts compactColumns: all but ids), and only if they fit
   * in the room the budget has left, so warming never evicts what queries read. A segment a query
   * has already read is left as it is. 'full' when there was no room for it. `whole`: every
   * column, ids and times too, held (warmWhole: a collection's newest segment, what an
   * extraction of the latest events reads), or as above when the whole does not fit.
   * Column by column, and 'paused' before the next one once `stop` says a query waits: the next
   * warm() of the segment goes on from there (what it decoded so far stays, a query may use it).
   */
  warm(ref: SegmentRef, whole = false, stop: () => boolean = never): Warmed {
    this.warmedCompactBytes = 0;
    this.footer(ref);
    let resumed = this.warmStopped === ref.file;
    this.warmStopped = null;
    const compact = this.files.compactColumns(ref.file);
    if (whole) {
      const held = this.warmWhole(ref, compact, stop);
      // Resumed whole or not (a newer segment may be the one held by then), it goes on.
      if (held === 'paused') this.warmStopped = ref.file;
      if (held !== 'full') return held;
      resumed = true; // what did fit is warming's: the columns without ids go on from there
    }
    if (this.entries.has(ref.file) && !resumed) return 'cached';
    // All or nothing: the columns this warming added go if the rest does not fit.
    const full = (): 'full' => {
      this.drop(ref.file);
      return 'full';
    };
    for (const path of compact) {
      const entry = this.entries.get(ref.file);
      if (entry?.chunk.columns.has(path) === true || ref.footer.columns[path] === undefined) continue;
      if (this.bytes >= this.budgetBytes) return full();
      if (stop()) {
        this.warmStopped = ref.file;
        return 'paused';
      }
      const read = this.readColumns(ref.file, [path], true);
      const chunk = entry === undefined ? read : replaceColumns(entry.chunk, new Map([...entry.chunk.columns, ...read.columns]));
      const columnBytes = columnsBytes(chunk);
      const bytes = columnBytes + systemBytes(chunk) + dictStringBytes(chunk);
      if (this.bytes + bytes - (entry?.bytes ?? 0) > this.budgetBytes) return full();
      const complete = Object.keys(ref.footer.columns).every((name) => chunk.columns.has(name));
      this.bytes += bytes - (entry?.bytes ?? 0);
      if (entry === undefined) this.entries.set(ref.file, { chunk, columnBytes, bytes, complete, epoch: this.epoch });
      else Object.assign(entry, { chunk, columnBytes, bytes, complete });
    }
    const entry = this.entries.get(ref.file);
    if (entry === undefined) return 'cached'; // a segment with no column worth holding
    this.warmedCompactBytes = compactBytes(entry.chunk, compact, true);
    return 'warmed';
  }

  /**
   * A collection's newest segment, every column and its times decoded, held: queries neither
   * evict nor trim it, so an extraction of the latest events reads no file however much the
   * queries before it read (at 100M they read more than the cache holds). Unlike other warming,
   * it makes room for itself from the least recently used entries: it is one segment, and
   * warming runs between queries. The held entries take at most NEWEST_HELD_SHARE of the budget;
   * past it the oldest held goes back to the other entries (and a segment larger than that share
   * is cached whole but not held). The columns without ids count in warmedCompactBytes, as warm()
   * counts them. 'full' when the whole segment does not fit: warm() then warms it without ids.
   * Column by column, the ones without ids first, 'paused' between them as warm().
   */
  private warmWhole(ref: SegmentRef, compact: readonly string[], stop: () => boolean): Warmed {
    if (this.entries.get(ref.file)?.held === true) return 'cached';
    const compactSet = new Set(compact);
    const paths = Object.keys(ref.footer.columns).sort((a, b) => Number(compactSet.has(b)) - Number(compactSet.has(a)));
    // Warming is no query: every entry may make room, whichever query read it last.
    this.epoch++;
    this.requested = null;
    for (const path of [...paths, null]) {
      const entry = this.entries.get(ref.file);
      if (path !== null && entry?.chunk.columns.has(path) === true) continue;
      if (stop()) return 'paused';
      if (path !== null) {
        this.loadSharing(ref, [path], true);
        if (this.entries.get(ref.file)?.chunk.columns.has(path) !== true) return 'full';
        continue;
      }
      if (entry === undefined) return 'full';
      entry.epoch = this.epoch;
      void entry.chunk.ts;
      void entry.chunk.createdAt;
      void entry.chunk.seq;
      entry.complete = true;
      this.remeasure(entry);
    }
    const entry = this.entries.get(ref.file);
    if (entry === undefined || !entry.complete) return 'full';
    this.warmedCompactBytes = compactBytes(entry.chunk, compact, false);
    if (entry.bytes > this.budgetBytes * NEWEST_HELD_SHARE) return 'warmed';
    entry.held = true;
    this.held.push(ref.file);
    while (this.heldBytes() > this.budgetBytes * NEWEST_HELD_SHARE) {
      const oldest = this.entries.get(this.held.shift()!);
      if (oldest !== undefined) oldest.held = false;
    }
    return 'warmed';
  }

  /** Bytes of the entries held whole. */
  private heldBytes(): number {
    let bytes = 0;
    for (const file of this.held) bytes += this.entries.get(file)?.bytes ?? 0;
    return bytes;
  }

  /** Columns warmRest found to take more than its allowance: not tried again on later segments. */
  private readonly restSkipped = new Set<string>();

  /** The segment a warmRest() stopped in for a waiting query, and the allowance it had left. */
  private restStopped: { file: string; allowance: number } | null = null;

  /**
   * Adds to a warmed segment's entry the columns warm() left out (ids), one at a time, each
   * only while the columns added so far take at most `bytesPerRow` a row of the segment and the
   * budget has room left (it never evicts). A column past the allowance is dropped and not tried
   * on later segments. 'cached' when the entry is gone or has every column already; 'paused'
   * before the next column once `stop` says a query waits (the next warmRest() of it goes on).
   */
  warmRest(ref: SegmentRef, bytesPerRow: number, stop: () => boolean = never): Warmed {
    this.warmedCompactBytes = 0;
    const stopped = this.restStopped?.file === ref.file ? this.restStopped : null;
    this.restStopped = null;
    const entry = this.entries.get(ref.file);
    if (entry === undefined || entry.complete || entry.peer === true) return stopped === null ? 'cached' : 'warmed';
    let allowance = stopped?.allowance ?? bytesPerRow * ref.footer.rows;
    let added = stopped !== null;
    for (const path of Object.keys(ref.footer.columns)) {
      if (entry.chunk.columns.has(path) || this.restSkipped.has(path)) continue;
      if (stop()) {
        this.restStopped = { file: ref.file, allowance };
        return 'paused';
      }
      const read = this.readColumns(ref.file, [path], true).columns;
      if (this.restWarmed !== undefined) for (const column of read.values()) if (column instanceof SegmentColumn) this.restWarmed(column);
      const chunk = replaceColumns(entry.chunk, new Map([...entry.chunk.columns, ...read]));
      const columnBytes = columnsBytes(chunk);
      const bytes = columnBytes + systemBytes(chunk) + dictStringBytes(chunk);
      if (bytes - entry.bytes > allowance) {
        this.restSkipped.add(path);
        continue;
      }
      if (this.bytes + bytes - entry.bytes > this.budgetBytes) return added ? 'warmed' : 'full';
      allowance -= bytes - entry.bytes;
      this.bytes += bytes - entry.bytes;
      entry.chunk = chunk;
      entry.columnBytes = columnBytes;
      entry.bytes = bytes;
      entry.complete = Object.keys(ref.footer.columns).every((name) => chunk.columns.has(name));
      added = true;
    }
    return added ? 'warmed' : 'cached';
  }

  /**
   * Reads a segment's footer before a query asks, while the footer budget has room (so it never
   * evicts one a query read): a distinct count reads the footers of segments other workers scan
   * as well as its own (footer-sketch.ts). 'full' when there was no room.
   */
  warmFooter(ref: SegmentRef): 'warmed' | 'cached' | 'full' {
    return this.footers.warm(ref.file);
  }

  /** Drops segments that are gone (replaced by a merge, deleted): no query will ask for them. */
  forget(files: readonly string[]): void {
    for (const file of files) this.peers.delete(file);
    const gone = new Set(files);
    for (const [key, entry] of this.entries) {
      if (entry.derived !== undefined && gone.has(key.slice(0, key.indexOf('\0')))) this.drop(key);
    }
    for (const file of files) {
      this.drop(file);
      this.blocked.delete(file);
      this.footers.forget(file);
    }
  }

  /**
   * Whether `need` bytes can be freed without an entry the running query has read (nor `keep`):
   * from other entries, then from the columns the running query has not asked for, which its
   * entries drop (a cache full of another query's columns must not lock this query out).
   */
  private canFree(need: number, keep: string): boolean {
    if (need <= 0 || this.epoch === 0) return true;
    for (const [file, entry] of this.entries) {
      if (file === keep || entry.held === true) continue;
      need -= entry.epoch === this.epoch ? this.trimmable(entry) : entry.bytes;
      if (need <= 0) return true;
    }
    return false;
  }

  /** Bytes the entry would free by dropping the columns the running query has not asked for. */
  private trimmable(entry: Entry): number {
    const requested = this.requested;
    if (requested === null || entry.derived !== undefined || entry.peer === true) return 0;
    let bytes = 0;
    for (const [path, column] of entry.chunk.columns) {
      if (requested.has(path)) continue;
      bytes += columnBytes(column) + (column instanceof SegmentColumn ? column.decodedBytes : 0);
    }
    return bytes;
  }

  /** The entry without the columns the running query has not asked for (itself when none). */
  private trimmed(entry: Entry): Entry {
    const requested = this.requested;
    if (requested === null || entry.derived !== undefined || entry.peer === true) return entry;
    let extra = false;
    for (const path of entry.chunk.columns.keys()) if (!requested.has(path)) extra = true;
    if (!extra) return entry;
    const chunk = replaceColumns(entry.chunk, new Map([...entry.chunk.columns].filter(([path]) => requested.has(path))));
    const columnBytes = columnsBytes(chunk);
    return { chunk, columnBytes, bytes: columnBytes + systemBytes(chunk) + dictStringBytes(chunk), complete: false, epoch: entry.epoch };
  }

  /** Counts what a chunk's readers decoded since it was last measured (times, dictionary strings). */
  private remeasure(entry: Entry): void {
    const bytes = entry.columnBytes + systemBytes(entry.chunk) + dictStringBytes(entry.chunk);
    if (bytes === entry.bytes) return;
    this.bytes += bytes - entry.bytes;
    entry.bytes = bytes;
    this.evict();
  }

  /**
   * Least recently used first, sparing the running query's entries while others remain; then
   * the columns of its entries it has not asked for; then its entries.
   */
  private evict(): void {
    for (const [file, entry] of this.entries) {
      if (this.bytes <= this.budgetBytes) return;
      if ((entry.epoch === this.epoch && this.epoch !== 0) || entry.held === true) continue;
      this.entries.delete(file);
      this.bytes -= entry.bytes;
      this.left(file);
    }
    for (const [file, entry] of this.entries) {
      if (this.bytes <= this.budgetBytes) return;
      const trimmed = entry.held === true ? entry : this.trimmed(entry);
      if (trimmed === entry) continue;
      this.entries.set(file, trimmed);
      this.bytes -= entry.bytes - trimmed.bytes;
      this.left(file);
    }
    for (const [file, entry] of this.entries) {
      if (this.bytes <= this.budgetBytes) return;
      if (entry.held === true) continue;
      this.entries.delete(file);
      this.bytes -= entry.bytes;
      this.left(file);
    }
  }

  /** Drops the entry; `replaced`: by one with the same columns and more (its share holds). */
  private drop(file: string, replaced = false): void {
    const entry = this.entries.get(file);
    if (entry === undefined) return;
    this.entries.delete(file);
    this.bytes -= entry.bytes;
    if (!replaced) this.left(file);
    if (entry.held === true) this.held.splice(this.held.indexOf(file), 1);
  }
}
