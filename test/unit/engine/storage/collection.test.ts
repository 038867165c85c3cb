/**
 * A flush's rows by day partition (collection.ts rowsByPartition): each day's rows in row order,
 * over a few days (counted in a typed array) and over centuries (counted in a Map).
 */
import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import type { ColumnChunk } from '../../../../engine/storage/chunk.js';
import { rowsByPartition } from '../../../../engine/storage/collection.js';
import { partitionKey } from '../../../../engine/storage/partition.js';

const DAY = 86_400_000;

function chunkOf(ts: number[]): ColumnChunk {
  const rows = ts.length;
  return { rows, ts: Float64Array.from(ts), createdAt: new Float64Array(rows), seq: Float64Array.from(ts, (_, i) => i), columns: new Map() };
}

/** The same grouping done the plain way. */
function naive(ts: readonly number[]): [string, number[]][] {
  const days = new Map<string, number[]>();
  ts.forEach((time, row) => {
    const key = partitionKey(time);
    days.set(key, [...(days.get(key) ?? []), row]);
  });
  return [...days].sort(([a], [b]) => a.localeCompare(b));
}

const sorted = (parts: Map<string, Int32Array>) => [...parts].map(([day, rows]) => [day, [...rows]] as [string, number[]]).sort(([a], [b]) => a.localeCompare(b));

t.test('rows by day, over a few days and over centuries, each day in row order', async (t) => {
  const random = mulberry32(5);
  const start = Date.UTC(2026, 10, 1);
  const cases: [string, number[]][] = [
    ['90 days, out of order', Array.from({ length: 5_000 }, () => start + Math.floor(random() * 90 * DAY))],
    ['one day', Array.from({ length: 300 }, (_, i) => start + i * 1_000)],
    ['day boundaries and before 1970', [start - 1, start, start + DAY - 1, start + DAY, -1, 0, -DAY, -DAY - 1]],
    ['1800 to 2200: past the typed array', Array.from({ length: 2_000 }, () => Date.UTC(1800, 0, 1) + Math.floor(random() * 400 * 365 * DAY))],
    ['one row', [start]],
  ];
  for (const [what, ts] of cases) t.same(sorted(rowsByPartition(chunkOf(ts))), naive(ts), what);
  t.equal(rowsByPartition(chunkOf([])).size, 0, 'no rows, no days');
});
