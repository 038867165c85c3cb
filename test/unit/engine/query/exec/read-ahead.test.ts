/**
 * A scan asks for the next segments' columns to be read ahead (storage/segment/read-ahead.ts)
 * while it decodes the one before: those it will read and no others, none it answers from
 * footers or skips by time, none the cache already holds. Real segment files, through a chunk
 * cache whose read-ahead records what it is asked for.
 */
import path from 'node:path';
import t from 'tap';
import { READ_AHEAD_SEGMENTS } from '../../../../../engine/base/limits.js';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { aggregateOver } from '../../../../../engine/query/exec/execute.js';
import { shapeAggregate } from '../../../../../engine/query/exec/result.js';
import { ScanBuffers } from '../../../../../engine/query/exec/scan.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../../engine/query/exec/service.js';
import type { AggregatePlan } from '../../../../../engine/query/plan/plan.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import type { ScanSource } from '../../../../../engine/storage/chunk.js';
import { blockedPaths, compactColumns, readFooter, readSegment, segmentLacks } from '../../../../../engine/storage/segment/reader.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

const NOW = Date.UTC(2024, 1, 20);
/** More days than the read-ahead reaches, so that some are asked for while the scan goes. */
const DAYS = READ_AHEAD_SEGMENTS + 6;

function setup() {
  const refs = writeDaySegments(t, DAYS, 1000, (s, i) => ({ g: `g${i % 3}`, h: `${s >= 3 ? 'x' : 'y'}${i}`, price: s * 1000 + i }));
  const source = { idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} } as unknown as ScanSource;
  const asked: string[] = [];
  const cache = new ChunkCache({
    readSegment, readFooter, compactColumns, segmentLacks, blockedPaths,
    readAhead: (file, paths) => asked.push(`${path.basename(file)}:${[...paths].sort().join(',')}`),
  });
  const run = (analysis: string, params: Record<string, unknown>, timeframe = { start: '2024-01-01T00:00:00.000Z', end: '2024-02-01T00:00:00.000Z' }) => {
    asked.length = 0;
    const plan = parseRequest(analysis, { event_collection: 'e', timeframe, ...params }, { nowMs: NOW }) as AggregatePlan;
    cache.beginQuery();
    const env = { views: new ColumnViews(), cache, limits: DEFAULT_QUERY_LIMITS, deadlineMs: Number.MAX_SAFE_INTEGER, timeoutMs: 1e9 };
    const outcome = aggregateOver(plan, source, env, new ScanBuffers(), source);
    return { result: shapeAggregate(plan, outcome).result, asked: [...asked] };
  };
  return run;
}

t.test('each segment after the first is asked for once, with the columns the scan reads', async (t) => {
  const run = setup();
  const grouped = run('count', { group_by: 'g', filters: [{ property_name: 'price', operator: 'gte', property_value: 0 }] });
  t.same(grouped.result, [{ g: 'g0', result: 334 * DAYS }, { g: 'g1', result: 333 * DAYS }, { g: 'g2', result: 333 * DAYS }]);
  t.same(grouped.asked, Array.from({ length: DAYS - 1 }, (_, k) => `${k + 1}.arrow:g,price`), 'in the order the scan reads them');
  const again = run('count', { group_by: 'g', filters: [{ property_name: 'price', operator: 'gte', property_value: 0 }] });
  t.same(again.result, grouped.result);
  t.same(again.asked, [], 'nothing the cache holds is read ahead');
});

t.test('after a segment no row of which passes the filters, the next ones are asked for the filters\' columns only', async (t) => {
  const run = setup();
  // h starts with x in days 3-5 only; no footer says so, so every day's h is read.
  const late = run('sum', { target_property: 'price', group_by: 'g', filters: [{ property_name: 'h', operator: 'contains', property_value: 'x' }] });
  const sum = (from: number, to: number) => (from + to) * (to - from + 1) / 2;
  t.equal((late.result as { result: number }[]).reduce((total, row) => total + row.result, 0), sum(3000, DAYS * 1000 - 1));
  // Segment k is asked for while segment k - READ_AHEAD_SEGMENTS is read, after segment k - READ_AHEAD_SEGMENTS - 1 was.
  const expected = Array.from({ length: DAYS - 1 }, (_, i) => {
    const k = i + 1;
    const before = k - READ_AHEAD_SEGMENTS - 1;
    return `${k}.arrow:${before < 0 || before >= 3 ? 'g,h,price' : 'h'}`;
  });
  t.ok(expected.some((entry) => entry.endsWith(':h')));
  t.same(late.asked, expected);
});

t.test('segments answered from their footers or outside the timeframe are not asked for', async (t) => {
  const run = setup();
  const counted = run('count', {});
  t.equal(counted.result, DAYS * 1000);
  t.same(counted.asked, [], 'a count of whole segments reads no column');
  const summed = run('sum', { target_property: 'price' }, { start: '2024-01-02T00:00:00.000Z', end: '2024-01-04T00:00:00.000Z' });
  t.equal(summed.result, (1000 + 2999) * 2000 / 2);
  t.same(summed.asked, [], 'days 1 and 2 are whole (footer sums); the rest lie outside');
  const partial = run('sum', { target_property: 'price' }, { start: '2024-01-02T00:10:00.000Z', end: '2024-01-05T00:05:00.000Z' });
  t.same(partial.asked, ['4.arrow:price'], 'only the edge day after the one read first, not the whole days between');
});
