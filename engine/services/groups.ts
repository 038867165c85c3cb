/** Kafka consumer group offsets, per project and group, kept in <data>/kafka-offsets.json. */
import path from 'node:path';
import { readJsonIfExists, writeFileDurable } from '../storage/files.js';
import type { CommittedOffset, GroupOffsetService } from './types.js';

type OffsetsFile = Record<string, Record<string, CommittedOffset[]>>;

export class GroupOffsets implements GroupOffsetService {
  private readonly file: string;
  private readonly offsets: OffsetsFile;

  constructor(dataDir: string) {
    this.file = path.join(dataDir, 'kafka-offsets.json');
    this.offsets = readJsonIfExists<OffsetsFile>(this.file) ?? {};
  }

  async commit(projectId: string, groupId: string, offsets: readonly CommittedOffset[]): Promise<void> {
    const groups = (this.offsets[projectId] ??= {});
    const merged = new Map((groups[groupId] ?? []).map((o) => [`${o.topic}\u0000${o.partition}`, o]));
    for (const offset of offsets) merged.set(`${offset.topic}\u0000${offset.partition}`, offset);
    groups[groupId] = [...merged.values()];
    writeFileDurable(this.file, JSON.stringify(this.offsets));
  }

  fetch(projectId: string, groupId: string): CommittedOffset[] {
    return this.offsets[projectId]?.[groupId]?.slice() ?? [];
  }
}
