/**
 * Events accepted and refused by the path they came in on, for /metrics. Plain counters the write
 * routes and the Kafka produce handler bump (one add per request, no labels built on the hot path);
 * server/common/metrics.ts reads them at scrape time. Process-wide, like the process it describes.
 */
export type WritePathName = 'http_single' | 'http_beacon' | 'http_batch' | 'kafka';

export const WRITE_PATHS: readonly WritePathName[] = ['http_single', 'http_beacon', 'http_batch', 'kafka'];

const accepted: Record<WritePathName, number> = { http_single: 0, http_beacon: 0, http_batch: 0, kafka: 0 };
const refused: Record<WritePathName, number> = { http_single: 0, http_beacon: 0, http_batch: 0, kafka: 0 };

export function countWrites(path: WritePathName, acceptedCount: number, refusedCount: number): void {
  accepted[path] += acceptedCount;
  refused[path] += refusedCount;
}

export function writeCounts(): { readonly accepted: Readonly<Record<WritePathName, number>>; readonly refused: Readonly<Record<WritePathName, number>> } {
  return { accepted, refused };
}
