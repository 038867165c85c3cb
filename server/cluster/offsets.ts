/**
 * How far this node has stored each partition of the events topic: the Kafka offset of the last
 * record it appended (or skipped) per partition, kept with the store and never in Kafka's group
 * offsets, so a restart resumes at exactly the next record (exactly once into the store).
 *
 * Durability is the one producer-sequences.ts gives idempotent producers. Each append of a
 * fetched run of records carries a tag naming its partition and last offset (`tag`), which the
 * engine writes in the append's WAL record, atomically with its events. After a crash the
 * engine's replayedTags() gives back every tagged record still in the WAL; those offsets and the
 * state file's are merged (the larger wins) when this opens, and written back to the file at once.
 * The WAL keeps a record until a flush deletes its file, and the flush first awaits `persist`
 * (beforeWalRemove), so the file holds an offset before the WAL record that proved it goes.
 * Offsets of runs that stored nothing (every record refused, a duplicate or undecodable: no WAL
 * record, no tag) are advanced in memory and written with the next persist; a crash before it
 * reads those records again and they store nothing again.
 *
 * The file, `<data dir>/cluster-offsets.json`: `{"version":1,"topics":{"tally.events":{"0":41,...}}}`,
 * replaced atomically (temporary file, fsync, rename, fsync of the directory).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ReplayedTag } from '../../engine/index.js';

export const CLUSTER_OFFSETS_FILE = 'cluster-offsets.json';
/** The first element of a tag, so other tags (the Kafka listener's) are never taken for one. */
const TAG_KIND = 'cluster';
const FILE_VERSION = 1;

interface OffsetsFile {
  version: number;
  topics: Record<string, Record<string, number>>;
}

export class ConsumedOffsets {
  /** Per topic, per partition: the offset of the last record stored (or skipped). */
  private readonly topics = new Map<string, Map<number, number>>();
  private readonly file: string;
  private readonly fsync: boolean;
  /** Changed since the file was last written. */
  private dirty = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(dir: string, options: { fsync?: boolean; replayed?: readonly ReplayedTag[] } = {}) {
    this.file = path.join(dir, CLUSTER_OFFSETS_FILE);
    this.fsync = options.fsync ?? true;
    if (fs.existsSync(this.file)) this.read(fs.readFileSync(this.file, 'utf8'));
    let recovered = false;
    for (const { tag } of options.replayed ?? []) {
      const parsed = ConsumedOffsets.parseTag(tag);
      if (parsed !== null) recovered = this.set(...parsed) || recovered;
    }
    // What only the WAL proved is in the file before this returns: no flush can have run since.
    if (recovered || !fs.existsSync(this.file)) this.writeSync();
  }

  /** The engine tag of an append of `topic`'s records up to `lastOffset` of `partition`. */
  static tag(topic: string, partition: number, lastOffset: number): string {
    return JSON.stringify([TAG_KIND, topic, partition, lastOffset]);
  }

  /** [topic, partition, lastOffset] of a tag from `tag`, or null for any other text. */
  static parseTag(tag: string): [string, number, number] | null {
    let parsed: unknown;
    try {
      parsed = JSON.parse(tag);
    } catch {
      return null;
    }
    if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== TAG_KIND || typeof parsed[1] !== 'string'
      || !Number.isSafeInteger(parsed[2]) || !Number.isSafeInteger(parsed[3])) return null;
    return [parsed[1], parsed[2] as number, parsed[3] as number];
  }

  /** The offset of the last record of `partition` stored, or -1 when none was. */
  last(topic: string, partition: number): number {
    return this.topics.get(topic)?.get(partition) ?? -1;
  }

  /** Every partition of `topic` with a stored offset. */
  partitions(topic: string): ReadonlyMap<number, number> {
    return this.topics.get(topic) ?? new Map();
  }

  /** For TallyEngine.onTagged: a tagged append is durable. */
  recordTag(tag: string): void {
    const parsed = ConsumedOffsets.parseTag(tag);
    if (parsed !== null) this.advance(...parsed);
  }

  /** Records of `partition` up to `lastOffset` are stored (or need not be); persist() writes it. */
  advance(topic: string, partition: number, lastOffset: number): void {
    this.set(topic, partition, lastOffset);
  }

  /** Writes the offsets to the file (durably) if they changed; resolves once it is done. */
  persist(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.dirty) return;
      this.dirty = false;
      try {
        await this.writeAsync();
      } catch (error) {
        this.dirty = true;
        throw error;
      }
    });
    return this.writing;
  }

  private set(topic: string, partition: number, lastOffset: number): boolean {
    let partitions = this.topics.get(topic);
    if (partitions === undefined) this.topics.set(topic, partitions = new Map());
    if ((partitions.get(partition) ?? -1) >= lastOffset) return false;
    partitions.set(partition, lastOffset);
    this.dirty = true;
    return true;
  }

  private read(text: string): void {
    let parsed: OffsetsFile;
    try {
      parsed = JSON.parse(text) as OffsetsFile;
    } catch (error) {
      // Written by rename only, so never torn: a damaged file is an operator's matter.
      throw new Error(`${this.file} is not valid JSON (${(error as Error).message}); `
        + 'restore it, or remove it to read every partition again from its start', { cause: error });
    }
    if (parsed?.version !== FILE_VERSION || typeof parsed.topics !== 'object' || parsed.topics === null) {
      throw new Error(`${this.file} is not a version ${FILE_VERSION} offsets file`);
    }
    for (const [topic, partitions] of Object.entries(parsed.topics)) {
      for (const [partition, offset] of Object.entries(partitions)) {
        if (Number.isSafeInteger(offset)) this.set(topic, Number(partition), offset);
      }
    }
    this.dirty = false;
  }

  private text(): string {
    const topics: OffsetsFile['topics'] = {};
    for (const [topic, partitions] of this.topics) {
      topics[topic] = Object.fromEntries([...partitions].sort((a, b) => a[0] - b[0]).map(([p, o]) => [String(p), o]));
    }
    return `${JSON.stringify({ version: FILE_VERSION, topics } satisfies OffsetsFile)}\n`;
  }

  private writeSync(): void {
    const tmp = `${this.file}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    try {
      fs.writeSync(fd, this.text());
      if (this.fsync) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.file);
    if (this.fsync) syncDirSync(path.dirname(this.file));
    this.dirty = false;
  }

  private async writeAsync(): Promise<void> {
    const tmp = `${this.file}.tmp`;
    const handle = await fs.promises.open(tmp, 'w');
    try {
      await handle.writeFile(this.text());
      if (this.fsync) await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.promises.rename(tmp, this.file);
    if (this.fsync) {
      const dir = await fs.promises.open(path.dirname(this.file), 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    }
  }
}

function syncDirSync(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
