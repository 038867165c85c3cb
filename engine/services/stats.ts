/** The numbers an operator watches (EngineStats), added up from the services on each call. */
import fs from 'node:fs';
import type { MemoryPlan } from '../base/memory.js';
import type { Flusher } from '../maintenance/flusher.js';
import type { QueryService } from '../query/exec/service.js';
import type { StoreSet } from '../storage/store-set.js';
import type { EngineStats } from './types.js';
import type { Wal } from '../wal/wal.js';
import type { WritePath } from '../write/write-path.js';

export interface StatsSources {
  readonly stores: StoreSet;
  readonly writes: WritePath;
  readonly wal: Wal;
  readonly flusher: Flusher;
  readonly queries: QueryService;
  readonly memory: MemoryPlan;
}

export function engineStats({ stores, writes, wal, flusher, queries, memory }: StatsSources): EngineStats {
  let bufferRows = 0, segments = 0, segmentRows = 0, segmentBytes = 0, compactionBacklog = 0;
  for (const store of stores.values()) {
    bufferRows += store.buffer.rows;
    for (const segment of store.segments) {
      segments++;
      segmentRows += segment.footer.rows;
      try {
        segmentBytes += fs.statSync(segment.file).size;
      } catch {
        // Replaced by a compaction since the list was read: its successor is counted next time.
      }
    }
    compactionBacklog += store.partitionsToMerge();
  }
  const depths = queries.depths();
  return {
    eventsAccepted: writes.accepted, eventsRefused: writes.refused, eventsFailed: writes.failed,
    walFailures: wal.stats.failures, walRecoveries: wal.stats.recoveries, flushFailures: flusher.failures,
    writesHeldBack: flusher.writesHeldBack, backgroundPausedMs: flusher.backgroundPausedMs,
    queriesRunning: depths.running, queriesWaiting: depths.waiting, segmentsWarmed: queries.segmentsWarmed,
    segmentsShared: queries.segmentsShared, segmentsReadFromPeers: queries.segmentsReadFromPeers,
    bufferRows, segments, segmentRows, segmentBytes, compactionBacklog,
    memoryBudgetBytes: memory.budgetBytes,
  };
}
