/**
 * Time → partition key. The only file that knows partition spans: one partition per UTC day.
 * A day bounds segment files to a size that compacts cheaply and prunes well for typical timeframes.
 */
export const PARTITION_SPAN_MS = 24 * 3600 * 1000;

/** The partition key (`YYYY-MM-DD`, UTC) of a timestamp. */
export function partitionKey(tsMs: number): string {
  return new Date(Math.floor(tsMs / PARTITION_SPAN_MS) * PARTITION_SPAN_MS).toISOString().slice(0, 10);
}

/** Index of the partition holding tsMs; rows with equal index share a partition. */
export function partitionIndex(tsMs: number): number {
  return Math.floor(tsMs / PARTITION_SPAN_MS);
}
