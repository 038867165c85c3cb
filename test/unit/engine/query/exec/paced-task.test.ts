/**
 * Paced tasks (steps.ts, as a query worker runs them): the event loop turns between segments when
 * asked, and a paced task answers exactly as one run at once, for aggregates, fan-out shares,
 * extractions and funnels, over real segment files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../../engine/query/exec/service.js';
import { loadSegmentFiles } from '../../../../../engine/query/exec/segment-reader.js';
import { runTask, runTaskPaced, type QueryTask } from '../../../../../engine/query/exec/task.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import type { ScanSource, SegmentRef } from '../../../../../engine/storage/chunk.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';
import { makeChunk, randomEvents } from '../../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-05T00:00:00.000Z' };

async function source(t: Test): Promise<ScanSource> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-paced-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const events = [...randomEvents(7, 4000, START, 4 * DAY)].sort((a, b) => a.ts - b.ts);
  const segments: SegmentRef[] = [];
  for (let p = 0; p < 6; p++) {
    const file = path.join(dir, `${p}.arrow`);
    segments.push({ file, footer: writeSegment(file, makeChunk(events.slice(p * 600, (p + 1) * 600), p * 10_000), {}) });
  }
  return { idKey: 0, memoryVersion: 0, segments, memory: makeChunk(events.slice(3600), 900_000), schema: {} };
}

function task(analysis: string, params: Record<string, unknown>, sources: ScanSource[]): QueryTask {
  const plan = parseRequest(analysis, { event_collection: 'e', timeframe, ...params }, { nowMs: START + 4 * DAY });
  return { plan, sources, limits: DEFAULT_QUERY_LIMITS, deadlineMs: Date.now() + 60_000, timeoutMs: 60_000 };
}

t.test('a paced task lets the event loop turn between segments and answers as one run at once', async (t) => {
  const scan = await source(t);
  const files = await loadSegmentFiles();
  const env = () => ({ views: new ColumnViews(), cache: new ChunkCache(files) });
  const requests: [string, Record<string, unknown>][] = [
    ['count', { filters: [{ property_name: 'price', operator: 'gte', property_value: 20 }] }],
    ['average', { target_property: 'price', group_by: 'country', interval: 'daily' }],
    ['count_unique', { target_property: 'price' }],
    ['percentile', { target_property: 'price', percentile: 90 }],
    ['extraction', { latest: 7 }],
  ];
  for (const [analysis, params] of requests) {
    const once = runTask(task(analysis, params, [scan]), env());
    let asked = 0;
    let turned = 0;
    const timer = setInterval(() => turned++, 0);
    const paced = await runTaskPaced(task(analysis, params, [scan]), env(), () => (asked++, true));
    clearInterval(timer);
    t.same(paced, once, `${analysis}: the same answer`);
    if (analysis === 'extraction') continue; // read in one step
    t.ok(asked >= scan.segments.length, `${analysis}: asked before each of the ${scan.segments.length} segments`);
    t.ok(turned > 0, `${analysis}: the event loop turned meanwhile`);
    // Not asked to turn: it runs in one go, as runTask.
    let stayed = true;
    setImmediate(() => (stayed = false));
    const promise = runTaskPaced(task(analysis, params, [scan]), env(), () => false);
    t.ok(stayed, `${analysis}: ran to its end before any turn`);
    t.same(await promise, once);
  }
  // A fan-out share: its encoded partial states, byte for byte.
  const share = { ...task('sum', { target_property: 'price', group_by: 'country' }, [scan]), whole: scan };
  const encoded = runTask(share, env());
  t.same(await runTaskPaced(share, env(), () => true), encoded, 'a share\'s partial states');
});
