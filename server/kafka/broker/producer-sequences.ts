/**
 * Duplicate detection for idempotent producers (KIP-98, minimal): per producer id, epoch and
 * topic, the last few appended batches by sequence. A retried batch that matches one is answered
 * with its original base offset and not stored again. Anything else is accepted: refusing unknown
 * sequences (error 45) would be fatal to librdkafka.
 *
 * Durability (like a Kafka broker's producer-state snapshots). The state survives a restart, also
 * a kill -9: it lives in `<data dir>/kafka-producer-state.log`, an append-only file of one JSON
 * line per appended idempotent batch (`{"b":[project, topic, producerId, epoch, baseSequence,
 * count, baseOffset]}`) and per block of producer ids handed out (`{"ids":next}`). The produce
 * handler calls `persist` before it answers: the lines of one request, and of all requests
 * waiting meanwhile, go in one write and one fdatasync (a group commit). So every batch a
 * producer was told is stored is in this file, and its retry after a restart gets the original
 * base offset. Non-idempotent batches (producer id -1) cost nothing here.
 *
 * The WAL record holds the batch too. The handler passes the batch's producer fields as the
 * engine append's tag (`ProducerSequences.tag`), which the engine writes in the batch's WAL
 * record, atomically with its events (engine/write/wal-payload.ts). So a crash after the WAL fsync but
 * before this file's fsync loses nothing: on open the listener passes the engine's
 * `replayedTags()` (every tagged record still in the WAL, also those whose rows were flushed), and
 * the batches this file lacks are added and written back at once (the compaction on open). The
 * WAL keeps a record until a flush deletes its file, and before that this file has the batch:
 * the engine's `onTagged` calls `recordTag` as the record is applied (before the append resolves,
 * so before the flush that waits for it), and the flush awaits `persist` (`beforeWalRemove`)
 * before it deletes any WAL file. The handler's own `record` call then adds no second line.
 * What remains: the replayed tags reach this file when the inbound listener starts, a moment
 * after the engine opened; a flush in that moment (one needs 65,536 replayed rows or a buffer
 * filled through HTTP) may delete the WAL files first, and only a second crash right then, before
 * the listener has written the tags it still gets from the engine's memory, would lose them.
 *
 * Producer ids are never reused across restarts: InitProducerId hands ids out of a block whose end
 * is persisted (fsynced) before the first id of it is given out, and on open the next id is past
 * every persisted block end and every producer id seen in a batch line.
 *
 * On open the file is replayed (a torn last line from a crash is skipped) and rewritten compactly
 * (only the state kept in memory), through a temporary file, fsync and rename; it is compacted
 * the same way whenever it has grown past PRODUCER_STATE_COMPACT_BYTES.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PRODUCER_BATCHES_KEPT, PRODUCER_STATE_COMPACT_BYTES, PRODUCERS_TRACKED_MAX } from '../../common/limits.js';

const PRODUCER_STATE_FILE = 'kafka-producer-state.log';
/** The first element of a batch's engine tag, so other tags are never taken for one. */
const TAG_KIND = 'kafka';
/** Producer ids reserved by one persisted line. */
const ID_BLOCK = 1000;

interface SeenBatch { baseSequence: number; count: number; baseOffset: number }

type BatchLine = [string, string, number, number, number, number, number];

export class ProducerSequences {
  private readonly seen = new Map<string, SeenBatch[]>();
  private readonly file: string | null;
  private readonly fsync: boolean;
  private fd: number | null = null;
  private bytes = 0;
  /** Lines recorded but not yet written; `persist` writes them. */
  private pending: string[] = [];
  private flushing: Promise<void> | null = null;
  private nextId: number;
  private idsReservedTo: number;

  /**
   * `dir`: the data dir to keep the state in; without it the state is in memory only (tests,
   * listeners that take no produce).
   */
  constructor(dir?: string, options: {
    fsync?: boolean; firstId?: number;
    /** The engine's replayedTags(): batches in its WAL, maybe missing from the file. */
    replayed?: readonly { projectId: string; tag: string; firstOffset: number }[];
  } = {}) {
    this.fsync = options.fsync ?? true;
    this.nextId = options.firstId ?? Date.now() % 2 ** 31;
    this.idsReservedTo = this.nextId;
    this.file = dir === undefined ? null : path.join(dir, PRODUCER_STATE_FILE);
    if (this.file === null) {
      this.idsReservedTo = Number.MAX_SAFE_INTEGER;
      return;
    }
    if (fs.existsSync(this.file)) this.replay(fs.readFileSync(this.file, 'utf8'));
    // After the file's lines: a batch the file lacks (the crash came before its line's fsync)
    // is in the engine's WAL record; compact() below makes it durable here too.
    for (const { projectId, tag, firstOffset } of options.replayed ?? []) {
      const batch = ProducerSequences.parseTag(tag);
      if (batch === null) continue;
      const [topic, producerId, epoch, baseSequence, count] = batch;
      this.remember(projectId, topic, producerId, epoch, { baseSequence, count, baseOffset: firstOffset });
    }
    this.compact();
  }

  /**
   * The engine tag (AppendOptions.tag) of an idempotent batch: its producer fields, written in
   * the engine's WAL record atomically with its events.
   */
  static tag(topic: string, producerId: number, epoch: number, baseSequence: number, count: number): string {
    return JSON.stringify([TAG_KIND, topic, producerId, epoch, baseSequence, count]);
  }

  /** [topic, producerId, epoch, baseSequence, count] of a tag from `tag`, or null for any other text. */
  static parseTag(tag: string): [string, number, number, number, number] | null {
    let parsed: unknown;
    try {
      parsed = JSON.parse(tag);
    } catch {
      return null;
    }
    if (!Array.isArray(parsed) || parsed.length !== 6 || parsed[0] !== TAG_KIND || typeof parsed[1] !== 'string') {
      return null;
    }
    const numbers = parsed.slice(2) as unknown[];
    if (!numbers.every((n) => Number.isSafeInteger(n))) return null;
    return [parsed[1], ...(numbers as [number, number, number, number])];
  }

  /** As record, for a batch the engine reports by its tag (TallyEngine.events.onTagged). */
  recordTag(projectId: string, tag: string, firstOffset: number): void {
    const batch = ProducerSequences.parseTag(tag);
    if (batch === null) return;
    const [topic, producerId, epoch, baseSequence, count] = batch;
    this.record(projectId, topic, producerId, epoch, baseSequence, count, firstOffset);
  }

  private static key(projectId: string, topic: string, producerId: number, epoch: number): string {
    return `${projectId}\u0000${topic}\u0000${producerId}\u0000${epoch}`;
  }

  /** The base offset of an identical batch appended before, or undefined. */
  duplicateOf(projectId: string, topic: string, producerId: number, epoch: number,
    baseSequence: number, count: number): number | undefined {
    if (producerId < 0) return undefined;
    const batches = this.seen.get(ProducerSequences.key(projectId, topic, producerId, epoch));
    return batches?.find((b) => b.baseSequence === baseSequence && b.count === count)?.baseOffset;
  }

  /** Remembers an appended batch; `persist` makes it durable. */
  record(projectId: string, topic: string, producerId: number, epoch: number,
    baseSequence: number, count: number, baseOffset: number): void {
    if (producerId < 0) return;
    // Recorded already (onTagged, then the produce handler): one line is enough.
    if (this.duplicateOf(projectId, topic, producerId, epoch, baseSequence, count) === baseOffset) return;
    this.remember(projectId, topic, producerId, epoch, { baseSequence, count, baseOffset });
    if (this.file !== null) {
      const line: BatchLine = [projectId, topic, producerId, epoch, baseSequence, count, baseOffset];
      this.pending.push(`${JSON.stringify({ b: line })}\n`);
    }
  }

  /** Writes and fsyncs every line recorded so far; resolves once they are durable. */
  async persist(): Promise<void> {
    if (this.file === null) return;
    // A flush under way may have taken only part of the pending lines: wait, then flush the rest.
    while (this.pending.length > 0 || this.flushing !== null) {
      if (this.flushing !== null) {
        await this.flushing;
        continue;
      }
      this.flushing = this.flush().finally(() => { this.flushing = null; });
      await this.flushing;
    }
  }

  /** A producer id never handed out before, also not before a restart. */
  async newProducerId(): Promise<number> {
    if (this.nextId >= this.idsReservedTo) {
      this.idsReservedTo = this.nextId + ID_BLOCK;
      this.pending.push(`${JSON.stringify({ ids: this.idsReservedTo })}\n`);
      await this.persist();
    }
    return this.nextId++;
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }

  private async flush(): Promise<void> {
    const text = this.pending.join('');
    this.pending = [];
    const fd = this.fd!;
    await new Promise<void>((resolve, reject) => {
      fs.write(fd, text, null, 'utf8', (error) => (error ? reject(error) : resolve()));
    });
    if (this.fsync) {
      await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (error) => (error ? reject(error) : resolve())));
    }
    this.bytes += Buffer.byteLength(text);
    if (this.bytes > PRODUCER_STATE_COMPACT_BYTES) this.compact();
  }

  private remember(projectId: string, topic: string, producerId: number, epoch: number,
    batch: SeenBatch): void {
    const key = ProducerSequences.key(projectId, topic, producerId, epoch);
    const batches = this.seen.get(key) ?? [];
    const same = batches.findIndex((b) => b.baseSequence === batch.baseSequence && b.count === batch.count);
    if (same >= 0) batches.splice(same, 1);
    // In log order: a batch recovered from the WAL may be older than ones the file had.
    let at = batches.length;
    while (at > 0 && batches[at - 1]!.baseOffset > batch.baseOffset) at--;
    batches.splice(at, 0, batch);
    if (batches.length > PRODUCER_BATCHES_KEPT) batches.shift();
    // Re-insert so the map's order is least recently used first; evict beyond the bound.
    this.seen.delete(key);
    this.seen.set(key, batches);
    if (this.seen.size > PRODUCERS_TRACKED_MAX) this.seen.delete(this.seen.keys().next().value!);
    if (producerId >= this.nextId) this.nextId = producerId + 1;
  }

  private replay(text: string): void {
    for (const line of text.split('\n')) {
      if (line.length === 0) continue;
      let entry: { b?: BatchLine; ids?: number };
      try {
        entry = JSON.parse(line);
      } catch {
        continue; // a torn last line from a crash: never acknowledged
      }
      if (typeof entry.ids === 'number') {
        this.nextId = Math.max(this.nextId, entry.ids);
      } else if (Array.isArray(entry.b) && entry.b.length === 7) {
        const [projectId, topic, producerId, epoch, baseSequence, count, baseOffset] = entry.b;
        this.remember(projectId, topic, producerId, epoch, { baseSequence, count, baseOffset });
      }
    }
    this.idsReservedTo = this.nextId;
  }

  /** Rewrites the file from the state in memory (temporary file, fsync, rename, fsync the dir). */
  private compact(): void {
    const file = this.file!;
    const lines: string[] = [`${JSON.stringify({ ids: this.idsReservedTo })}\n`];
    for (const [key, batches] of this.seen) {
      const [projectId, topic, producerId, epoch] = key.split('\u0000');
      for (const b of batches) {
        const line: BatchLine = [projectId!, topic!, Number(producerId), Number(epoch),
          b.baseSequence, b.count, b.baseOffset];
        lines.push(`${JSON.stringify({ b: line })}\n`);
      }
    }
    const text = lines.join('');
    const tmp = `${file}.tmp`;
    const tmpFd = fs.openSync(tmp, 'w');
    try {
      fs.writeSync(tmpFd, text);
      if (this.fsync) fs.fsyncSync(tmpFd);
    } finally {
      fs.closeSync(tmpFd);
    }
    fs.renameSync(tmp, file);
    if (this.fsync) {
      const dirFd = fs.openSync(path.dirname(file), 'r');
      try {
        fs.fsyncSync(dirFd);
      } finally {
        fs.closeSync(dirFd);
      }
    }
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = fs.openSync(file, 'a');
    this.bytes = Buffer.byteLength(text);
  }
}
