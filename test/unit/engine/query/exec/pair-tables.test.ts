/**
 * Pair tables (storage/segment/pair-counts.ts): a segment's sidecar counts the rows of each
 * (device, path) pair, and counts filtered by one and grouped by the other, filtered by both, or
 * a distinct count of one filtered by the other, are answered from them without reading the
 * segment. Real segment files; every answer is checked against a count made row by row from the
 * generated events, and against the scan of the same segments with their tables taken out (as a
 * segment written before tables existed reads).
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { aggregateOver } from '../../../../../engine/query/exec/execute.js';
import { shapeAggregate } from '../../../../../engine/query/exec/result.js';
import { ScanBuffers } from '../../../../../engine/query/exec/scan.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../../engine/query/exec/service.js';
import { warmPairSummaries } from '../../../../../engine/query/exec/value-counts.js';
import type { AggregatePlan } from '../../../../../engine/query/plan/plan.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import type { ScanSource, SegmentRef } from '../../../../../engine/storage/chunk.js';
import { decodeSidecar, encodeSidecar } from '../../../../../engine/storage/segment/footer.js';
import { decodePairTable } from '../../../../../engine/storage/segment/pair-counts.js';
import { blockedPaths, compactColumns, readFooter, readSegment, segmentLacks } from '../../../../../engine/storage/segment/reader.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';
import type { Value } from '../../../../helpers/query/test-support.js';

const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const SEGMENTS = 3;
const ROWS = 4000;
const DEVICES = ['desktop', 'mobile', 'tv', 'console', 'tablet'];

/** Devices with null and missing rows, 30 paths, and 4,000 ids (too many pairs for a table). */
function props(s: number, i: number): Record<string, Value> {
  const row: Record<string, Value> = { path: `/p/${(i * i + s) % 30}`, id: `u${i}` };
  if (i % 17 !== 0) row.device = i % 23 === 0 ? null : DEVICES[(i * 7 + s) % 5];
  return row;
}

const events = Array.from({ length: SEGMENTS }, (_, s) => Array.from({ length: ROWS }, (_, i) => ({ ts: START + s * DAY + i * 1000, props: props(s, i) })));
const timeframe = { start: new Date(START).toISOString(), end: new Date(START + SEGMENTS * DAY).toISOString() };

function recording(
  refs: readonly SegmentRef[], cacheBytes?: number,
): ((analysis: string, params: Record<string, unknown>) => { result: unknown; reads: string[] }) & { cache: ChunkCache } {
  const source = { idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} } as unknown as ScanSource;
  const reads: string[] = [];
  const cache = new ChunkCache({
    readSegment: (file: string, columns?: readonly string[]) => {
      reads.push(`${path.basename(file)}:${columns?.join(',') ?? '*'}`);
      return readSegment(file, columns);
    },
    readFooter, compactColumns, segmentLacks, blockedPaths,
  }, cacheBytes);
  const run = (analysis: string, params: Record<string, unknown>) => {
    reads.length = 0;
    const plan = parseRequest(analysis, { event_collection: 'e', timeframe, ...params }, { nowMs: START + 30 * DAY }) as AggregatePlan;
    cache.beginQuery();
    const env = { views: new ColumnViews(), cache, limits: DEFAULT_QUERY_LIMITS, deadlineMs: Number.MAX_SAFE_INTEGER, timeoutMs: 1e9 };
    return { result: shapeAggregate(plan, aggregateOver(plan, source, env, new ScanBuffers(), source)).result, reads: [...reads] };
  };
  return Object.assign(run, { cache });
}

type Row = Record<string, Value>;

/** Counts per `group` value (or in all when null) of the events that `pass`. */
function expected(pass: (row: Row) => boolean, group: string | null): unknown {
  const out = new Map<string, number>();
  for (const row of events.flat().map((event) => event.props)) {
    if (!pass(row)) continue;
    const key = group === null ? '' : String(row[group] === undefined ? null : row[group]);
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return group === null ? out.get('') ?? 0 : out;
}

function byGroup(result: unknown, group: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const row of result as Record<string, unknown>[]) if ((row.result as number) > 0) out.set(String(row[group]), row.result as number);
  return out;
}

const inTvConsole = { property_name: 'device', operator: 'in', property_value: ['tv', 'console'] };
const tvOrConsole = (row: Row) => row.device === 'tv' || row.device === 'console';

t.test('counts by two columns are answered from pair tables, equal to a row-by-row count and to a scan', async (t) => {
  const refs = writeDaySegments(t, SEGMENTS, ROWS, props);
  const { values, pairs } = decodeSidecar(fs.readFileSync(refs[0].file + '.meta'), refs[0].file + '.meta');
  t.ok(pairs.device?.path, 'a table of devices by paths');
  t.notOk(pairs.device?.id, 'none of devices by ids: 4,000 of them in 4,000 rows, no string repeats');
  const table = decodePairTable(pairs.device.path, values.device.values.length, ROWS)!;
  t.equal([...table.rows].reduce((a, b) => a + b, 0), ROWS, 'its cells add up to the segment\'s rows');
  t.equal(decodePairTable(pairs.device.path, values.device.values.length, ROWS + 1), null, 'a table of other rows is refused');
  t.equal(decodePairTable(pairs.device.path, 1, ROWS), null, 'and one whose slots are past the values');
  t.equal(decodePairTable(Buffer.from('not a table'), values.device.values.length, ROWS), null, 'and bytes that do not decode');

  const cases: [string, string, Record<string, unknown>, unknown][] = [
    ['in filter, grouped by the other', 'count', { group_by: 'path', filters: [inTvConsole] }, expected(tvOrConsole, 'path')],
    ['null rows', 'count', { group_by: 'path', filters: [{ property_name: 'device', operator: 'eq', property_value: null }] },
      expected((row) => row.device === null || row.device === undefined, 'path')],
    ['rows without the column', 'count', { group_by: 'path', filters: [{ property_name: 'device', operator: 'exists', property_value: false }] },
      expected((row) => row.device === undefined, 'path')],
    ['grouped the other way round', 'count', { group_by: 'device', filters: [{ property_name: 'path', operator: 'starts_with', property_value: '/p/1' }] },
      expected((row) => String(row.path).startsWith('/p/1'), 'device')],
    ['both filtered', 'count', { filters: [inTvConsole, { property_name: 'path', operator: 'ne', property_value: '/p/4' }] },
      expected((row) => tvOrConsole(row) && row.path !== '/p/4', null)],
  ];
  const run = recording(refs);
  for (const [name, analysis, params, want] of cases) {
    const { result, reads } = run(analysis, params);
    const group = params.group_by as string | undefined;
    t.same(group === undefined ? result : byGroup(result, group), want, name);
    t.same(reads, [], `${name}: no segment read`);
  }
  const unique = run('select_unique', { target_property: 'path', filters: [{ property_name: 'device', operator: 'eq', property_value: 'tablet' }] });
  const paths = new Set(events.flat().filter((e) => e.props.device === 'tablet').map((e) => e.props.path));
  t.same(new Set(unique.result as string[]), paths, 'select_unique of one filtered by the other');
  t.same(unique.reads, []);
  const daily = run('count', { interval: 'daily', group_by: 'path', filters: [inTvConsole] });
  t.same(daily.reads, [], 'daily buckets: each segment inside one day');
  t.equal((daily.result as unknown[]).length, SEGMENTS);

  // No table: devices by ids are scanned, and still right.
  const ids = run('count', { group_by: 'id', filters: [{ property_name: 'device', operator: 'eq', property_value: 'tv' }] });
  t.same(byGroup(ids.result, 'id'), expected((row) => row.device === 'tv', 'id'));
  t.ok(ids.reads.length > 0, 'devices by ids: the segments are read');

  // The same segments with their tables taken out (a sidecar written before them): scanned, same answers.
  for (const ref of refs) {
    const { sketches, values: counts, ...footer } = decodeSidecar(fs.readFileSync(ref.file + '.meta'), 'meta');
    fs.writeFileSync(ref.file + '.meta', encodeSidecar(footer, sketches, counts));
  }
  for (const [name, analysis, params, want] of cases) {
    // A cache of its own each: what one query read is not read again by the next.
    const { result, reads } = recording(refs)(analysis, params);
    const group = params.group_by as string | undefined;
    t.same(group === undefined ? result : byGroup(result, group), want, `${name}, without tables`);
    t.ok(reads.length > 0, `${name}, without tables: scanned`);
  }
});

t.test('a small segment, as a flush writes a part of a day, gets the tables its day would; ids in it get none', async (t) => {
  // 9,000 rows by 1,000 paths and 5 devices: 5,000 cells, more than one per 8 rows.
  const small = (s: number, i: number): Record<string, Value> => ({
    path: `/q/${(i * 7919 + s) % 1000}`, device: DEVICES[Math.floor(i / 1000 + s) % 5], id: `u${i % 3000}`,
  });
  const refs = writeDaySegments(t, 2, 9000, small);
  const { pairs, values } = decodeSidecar(fs.readFileSync(refs[0].file + '.meta'), refs[0].file + '.meta');
  t.ok(pairs.device?.path, 'a table of devices by paths');
  t.ok(decodePairTable(pairs.device.path, values.device.values.length, 9000)!.rows.length > 9000 / 8, 'of more cells than one per 8 rows');
  t.notOk(pairs.device?.id, 'none by ids: 3,000 of them in 9,000 rows, a string for every 3 rows');
  const run = recording(refs);
  const { result, reads } = run('count', { group_by: 'path', filters: [inTvConsole] });
  const want = new Map<string, number>();
  for (let s = 0; s < 2; s++) {
    for (let i = 0; i < 9000; i++) {
      const row = small(s, i);
      if (row.device === 'tv' || row.device === 'console') want.set(String(row.path), (want.get(String(row.path)) ?? 0) + 1);
    }
  }
  t.same(byGroup(result, 'path'), want, 'equal to a row-by-row count');
  t.same(reads, [], 'no segment read');
  // A segment of 3,000 rows, each id once: a dictionary under PAIR_GROUP_ENTRIES_MAX, but no table of it.
  const once = writeDaySegments(t, 1, 3000, (s, i) => ({ device: DEVICES[i % 5], id: `v${i}` }));
  const sidecar = decodeSidecar(fs.readFileSync(once[0].file + '.meta'), once[0].file + '.meta');
  t.same(Object.keys(sidecar.pairs.device ?? {}), [], 'no table of devices by ids, each id once');
});

t.test('a pair table\'s summary is kept in the chunk cache: asked again, no sidecar is read', async (t) => {
  const refs = writeDaySegments(t, SEGMENTS, ROWS, props);
  const params = { group_by: 'path', filters: [inTvConsole] };
  const want = expected(tvOrConsole, 'path');
  const kept = recording(refs);
  // Either way round: the same table answers a filter by paths grouped by device.
  const other = { group_by: 'device', filters: [{ property_name: 'path', operator: 'eq', property_value: '/p/3' }] };
  const small = recording(refs, 4096);
  for (const run of [kept, small]) {
    t.same(byGroup(run('count', params).result, 'path'), want, 'first run, from the tables');
    run.cache.footer(refs[0]);
  }
  // The footers stay cached; with the sidecars gone, a table can only come from what was kept.
  const moved = refs.map((ref) => `${ref.file}.meta.moved`);
  refs.forEach((ref, s) => fs.renameSync(`${ref.file}.meta`, moved[s]));
  t.teardown(() => refs.forEach((ref, s) => fs.existsSync(moved[s]) && fs.renameSync(moved[s], `${ref.file}.meta`)));
  const again = kept('count', params);
  t.same(byGroup(again.result, 'path'), want, 'asked again: the same answer');
  t.same(again.reads, [], 'from the kept summaries: no segment read');
  const flipped = kept('count', other);
  t.same(byGroup(flipped.result, 'device'), expected((row) => row.path === '/p/3', 'device'), 'the other way round, from the same summaries');
  t.same(flipped.reads, [], 'no segment read');
  // A cache too small to keep them (4 KB) scans once their sidecars are gone, and is still right.
  const scanned = small('count', params);
  t.same(byGroup(scanned.result, 'path'), want);
  t.ok(scanned.reads.length > 0, 'a budget too small keeps no summary: the segments are scanned');
  // Segments forgotten (merged away) take their summaries with them: nothing else was cached.
  t.ok(kept.cache.usedBytes > 0, 'the summaries are counted in the budget');
  kept.cache.forget(refs.map((ref) => ref.file));
  t.equal(kept.cache.usedBytes, 0, 'forgotten with their segments');
});

t.test('warming decodes a segment\'s pair tables into the free room, never evicting', async (t) => {
  const refs = writeDaySegments(t, SEGMENTS, ROWS, props);
  const warmed = recording(refs);
  for (const ref of refs) t.equal(warmPairSummaries(warmed.cache, ref), 'done');
  const bytes = warmed.cache.usedBytes;
  t.ok(bytes > 0, 'the summaries are in the cache');
  // Stopped for a waiting query before each table, it goes on with the rest and keeps the same.
  const stepped = recording(refs);
  let calls = 0;
  for (const ref of refs) {
    let stops = 0;
    while (warmPairSummaries(stepped.cache, ref, () => stops++ % 2 === 0) === 'paused') calls++;
  }
  t.ok(calls >= refs.length, `stopped along the way (${calls} times)`);
  t.equal(stepped.cache.usedBytes, bytes, 'the same summaries as warmed in one go');
  const moved = refs.map((ref) => `${ref.file}.meta.moved`);
  for (const ref of refs) warmed.cache.footer(ref);
  refs.forEach((ref, s) => fs.renameSync(`${ref.file}.meta`, moved[s]));
  t.teardown(() => refs.forEach((ref, s) => fs.existsSync(moved[s]) && fs.renameSync(moved[s], `${ref.file}.meta`)));
  const first = warmed('count', { group_by: 'path', filters: [inTvConsole] });
  t.same(byGroup(first.result, 'path'), expected(tvOrConsole, 'path'), 'a first query answered from what was warmed');
  t.same(first.reads, [], 'no segment read, no sidecar either (they are gone)');
  t.equal(warmed.cache.usedBytes, bytes, 'nothing decoded by the query');
  refs.forEach((ref, s) => fs.renameSync(moved[s], `${ref.file}.meta`));

  // A cache whose room a segment's columns take: warming leaves them be.
  const big = recording(refs);
  big.cache.beginQuery();
  big.cache.load(refs[0], ['path']);
  const used = big.cache.usedBytes;
  t.ok(used > 0);
  const tight = recording(refs, used + 600);
  tight.cache.beginQuery();
  tight.cache.load(refs[0], ['path']);
  t.equal(tight.cache.usedBytes, used, 'the columns are cached');
  warmPairSummaries(tight.cache, refs[0]);
  t.equal(tight.cache.usedBytes, used, 'no summary fits beside them, and they are not evicted for one');
  warmPairSummaries(big.cache, refs[0]);
  t.ok(big.cache.usedBytes > used + 600, 'a cache with room takes the summaries');
});

t.test('the strings of kept summaries are shared copies, each the string it was', async (t) => {
  const { cache } = recording([]);
  t.same(cache.internStrings(['/a', '/b', '/a', '']), ['/a', '/b', '/a', '']);
  // Past the bound the copies start afresh: still the same strings, in order.
  const many = Array.from({ length: 70_000 }, (_, i) => `/p/${i}`);
  t.same(cache.internStrings(many), many);
  t.same(cache.internStrings(['/p/1', '/new']), ['/p/1', '/new']);
});
