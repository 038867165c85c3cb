/**
 * Grouping and select_unique read a large dictionary (ids) under a selective filter one entry at a
 * time, only the entries rows select, and a small one's strings (or a large one's that rows may
 * touch an eighth of) at once, kept with the column: the answers are the same either way. Real segment files through a chunk cache.
 */
import t from 'tap';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { aggregateOver } from '../../../../../engine/query/exec/execute.js';
import { shapeAggregate } from '../../../../../engine/query/exec/result.js';
import { ScanBuffers } from '../../../../../engine/query/exec/scan.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../../engine/query/exec/service.js';
import type { AggregatePlan } from '../../../../../engine/query/plan/plan.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import { DICTIONARY_STRINGS_AT_ONCE_MAX } from '../../../../../engine/base/limits.js';
import type { ScanSource } from '../../../../../engine/storage/chunk.js';
import { SegmentColumn } from '../../../../../engine/storage/segment/decode-column.js';
import { compactColumns, readFooter, readSegment } from '../../../../../engine/storage/segment/reader.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

const timeframe = { start: '2024-01-01T00:00:00.000Z', end: '2024-01-10T00:00:00.000Z' };
const ROWS = 3 * DICTIONARY_STRINGS_AT_ONCE_MAX;
/** Row i of segment s: id `u<s>-<i>` (a dictionary past the limit), country `c<i % 10>`. */
const id = (s: number, i: number) => `u${s}-${i}`;

t.test('group_by and select_unique of ids make only the selected entries, or all once rows may touch an eighth; of a small dictionary, all at once', async (t) => {
  const refs = writeDaySegments(t, 2, ROWS, (s, i) => ({ id: id(s, i), country: `c${i % 10}` }));
  const source = { idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} } as unknown as ScanSource;
  const cache = new ChunkCache({ readSegment, readFooter, compactColumns });
  const run = (analysis: string, params: Record<string, unknown>) => {
    const plan = parseRequest(analysis, { event_collection: 'e', timeframe, ...params }, { nowMs: Date.UTC(2024, 1, 1) }) as AggregatePlan;
    cache.beginQuery();
    const env = { views: new ColumnViews(), cache, limits: DEFAULT_QUERY_LIMITS, deadlineMs: Number.MAX_SAFE_INTEGER, timeoutMs: 1e9 };
    return shapeAggregate(plan, aggregateOver(plan, source, env, new ScanBuffers(), source)).result;
  };
  const column = (segment: number, path: string) => cache.load(refs[segment], [path]).columns.get(path) as SegmentColumn;
  const picked = [7, 4095, 9000];
  const filters = [{ property_name: 'country', operator: 'in', property_value: picked.map((i) => `c${i % 10}`) }, { property_name: 'id', operator: 'in', property_value: picked.flatMap((i) => [id(0, i), id(1, i)]) }];

  const grouped = run('count', { group_by: 'id', filters });
  t.same(grouped, picked.flatMap((i) => [id(0, i), id(1, i)]).sort().map((value) => ({ id: value, result: 1 })), 'one group per picked id');
  const unique = run('select_unique', { target_property: 'id', filters });
  t.same(unique, picked.flatMap((i) => [id(0, i), id(1, i)]).sort(), 'select_unique the same ids');
  for (const segment of [0, 1]) {
    t.equal(column(segment, 'id').decodedBytes, 0, `segment ${segment}: no string made of its ${ROWS} ids`);
  }

  // Half the rows: past an eighth of the entries, all are made once and kept.
  const half = run('count', { group_by: 'id', filters: [{ property_name: 'country', operator: 'in', property_value: ['c1', 'c3', 'c5', 'c7', 'c9'] }] });
  t.equal((half as unknown[]).length, ROWS, 'a group per id of half the rows of both segments');
  for (const segment of [0, 1]) t.ok(column(segment, 'id').decodedBytes > 0, `segment ${segment}: its ids made at once`);

  const countries = run('select_unique', { target_property: 'country' });
  t.same(countries, Array.from({ length: 10 }, (_, i) => `c${i}`));
  const byCountry = run('count', { group_by: 'country', filters: [{ property_name: 'id', operator: 'ne', property_value: id(0, 0) }] });
  t.same(byCountry, Array.from({ length: 10 }, (_, i) => ({ country: `c${i}`, result: 2 * Math.ceil((ROWS - i) / 10) - (i === 0 ? 1 : 0) })));
  t.ok(column(0, 'country').decodedBytes > 0, 'a small dictionary\'s strings are made once and kept with the column');
});
