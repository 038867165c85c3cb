/**
 * A scan reads the filters' columns of a segment first and its other columns only when some row
 * passes them: a selective filter (one user's events) leaves the other columns of most segments
 * unread. Real segment files, read through a chunk cache that records what it reads.
 */
import path from 'node:path';
import t from 'tap';
import { DICTIONARY_BLOCK_ENTRIES } from '../../../../../engine/base/limits.js';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { aggregateOver } from '../../../../../engine/query/exec/execute.js';
import { shapeAggregate } from '../../../../../engine/query/exec/result.js';
import { ScanBuffers } from '../../../../../engine/query/exec/scan.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../../engine/query/exec/service.js';
import type { AggregatePlan } from '../../../../../engine/query/plan/plan.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import type { ScanSource, SegmentRef } from '../../../../../engine/storage/chunk.js';
import { blockedPaths, compactColumns, readFooter, readSegment, segmentLacks } from '../../../../../engine/storage/segment/reader.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

const timeframe = { start: '2024-01-01T00:00:00.000Z', end: '2024-01-10T00:00:00.000Z' };
const NOW = Date.UTC(2024, 0, 20);

type Run = (analysis: string, params: Record<string, unknown>) => { result: unknown; reads: string[] };

/**
 * Queries over `refs` through a chunk cache of `budget` bytes that records the columns it reads
 * (file:columns) and the files whose blocked paths it asks for (`layouts`).
 */
function recording(refs: readonly SegmentRef[], budget?: number): { run: Run; cache: ChunkCache; layouts: string[] } {
  const source = { idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} } as unknown as ScanSource;
  const reads: string[] = [];
  const layouts: string[] = [];
  const cache = new ChunkCache({
    readSegment: (file: string, columns?: readonly string[]) => {
      reads.push(`${path.basename(file)}:${columns?.join(',') ?? '*'}`);
      return readSegment(file, columns);
    },
    readFooter, compactColumns, segmentLacks,
    blockedPaths: (file: string) => {
      layouts.push(path.basename(file));
      return blockedPaths(file);
    },
  }, budget);
  const run: Run = (analysis, params) => {
    reads.length = 0;
    const plan = parseRequest(analysis, { event_collection: 'e', timeframe, ...params }, { nowMs: NOW }) as AggregatePlan;
    cache.beginQuery();
    const env = { views: new ColumnViews(), cache, limits: DEFAULT_QUERY_LIMITS, deadlineMs: Number.MAX_SAFE_INTEGER, timeoutMs: 1e9 };
    const outcome = aggregateOver(plan, source, env, new ScanBuffers(), source);
    return { result: shapeAggregate(plan, outcome).result, reads: [...reads].sort() };
  };
  return { run, cache, layouts };
}

/** Four day segments of 1,000 rows: ids `u<segment>-<0..49>`, groups g0..g2, a price. */
function setup(): Run {
  return recording(writeDaySegments(t, 4, 1000, (s, i) => ({ id: `u${s}-${i % 50}`, g: `g${i % 3}`, price: i / 10 }))).run;
}

t.test('a segment none of whose rows pass the filters is not read further', async (t) => {
  const run = setup();
  const one = run('count', { group_by: 'g', filters: [{ property_name: 'id', operator: 'eq', property_value: 'u2-7' }] });
  // Rows 7, 57, ... 957 of segment 2.
  t.same(one.result, [{ g: 'g0', result: 7 }, { g: 'g1', result: 7 }, { g: 'g2', result: 6 }]);
  t.same(one.reads, ['0.arrow:id', '1.arrow:id', '2.arrow:g', '2.arrow:id', '3.arrow:id'], 'the group column of segment 2 only');

  const none = run('count', { group_by: 'g', filters: [{ property_name: 'id', operator: 'eq', property_value: 'u9-9' }] });
  t.same(none.result, []);
  t.same(none.reads, [], 'nothing more read: the ids were cached, and no segment has u9-9');

  const unique = run('select_unique', { target_property: 'price', filters: [{ property_name: 'id', operator: 'in', property_value: ['u1-3', 'u3-3'] }] });
  t.same(unique.result, Array.from({ length: 20 }, (_, k) => (3 + 50 * k) / 10), 'the prices of rows 3, 53, ... 953');
  t.same(unique.reads, ['1.arrow:price', '3.arrow:price'], 'the target of the segments with those ids only');

  const all = run('count', { group_by: 'g', filters: [{ property_name: 'price', operator: 'gte', property_value: 0 }] });
  t.same(all.result, [{ g: 'g0', result: 1336 }, { g: 'g1', result: 1332 }, { g: 'g2', result: 1332 }], 'a filter every row passes');
  t.same(all.reads, ['0.arrow:g', '0.arrow:price', '1.arrow:g', '2.arrow:price', '3.arrow:g'],
    'each column of each segment once: what the queries before read stayed cached');
});

t.test('a segment whose blocked dictionary lacks every value of an eq or in filter is skipped unread', async (t) => {
  const rows = 3 * DICTIONARY_BLOCK_ENTRIES;
  const refs = writeDaySegments(t, 4, rows, (s, i) => ({ id: `u${(s * rows + i * 7) % (4 * rows)}`, g: `g${i % 3}` }));
  const { run: query, cache, layouts } = recording(refs, 0);
  const run = (params: Record<string, unknown>) => query('count', params);
  const holder = (id: string) => refs.findIndex((_, s) => Array.from({ length: rows }, (_, i) => `u${(s * rows + i * 7) % (4 * rows)}`).includes(id));
  for (const id of ['u0', 'u12345', 'u49151', 'u7']) {
    const s = holder(id);
    const one = run({ filters: [{ property_name: 'id', operator: 'eq', property_value: id }] });
    t.equal(one.result, 1, `${id}: one row`);
    t.same(one.reads, [`${s}.arrow:id`], `${id}: only segment ${s}, which holds it, is read`);
  }
  const none = run({ group_by: 'g', filters: [{ property_name: 'id', operator: 'in', property_value: ['nobody', 'u99999'] }] });
  t.same(none, { result: [], reads: [] }, 'an in filter no segment holds reads nothing');
  const numbers = run({ filters: [{ property_name: 'id', operator: 'in', property_value: ['u0', 5] }] });
  t.equal(numbers.reads.length, 4, 'a filter with a number in it is not answered from the dictionaries');
  t.same(layouts.sort(), ['0.arrow', '1.arrow', '2.arrow', '3.arrow'], 'each file\'s blocked paths read once and remembered');
  cache.forget([refs[1]!.file]);
  layouts.length = 0;
  run({ filters: [{ property_name: 'id', operator: 'eq', property_value: 'u0' }] });
  t.same(layouts, ['1.arrow'], 'a forgotten file (merged away) is not remembered');
});
