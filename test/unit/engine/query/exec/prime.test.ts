/**
 * A query worker's priming (prime.ts): its made-up segments, written and read by the real writer
 * and reader, answer every primed request as the same rows held in memory do; it runs a request
 * a step and then removes its folder; a folder it cannot write leaves nothing behind.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { DEFAULT_QUERY_LIMITS } from '../../../../../engine/query/exec/service.js';
import { appendPrimedDay, Primer, PRIMED_DAYS, PRIMED_REQUESTS } from '../../../../../engine/query/exec/prime.js';
import { loadSegmentFiles } from '../../../../../engine/query/exec/segment-reader.js';
import { runTask } from '../../../../../engine/query/exec/task.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import { WriteBuffer } from '../../../../../engine/storage/buffer.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';
import { PRIME_ROUNDS } from '../../../../../engine/base/limits.js';

const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);

/** `value` with every number rounded to 9 significant digits: sums over segments add in another order than over one chunk. */
function rounded(value: unknown): unknown {
  if (typeof value === 'number') return Number(value.toPrecision(9));
  if (Array.isArray(value)) return value.map(rounded);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]));
  return value;
}

/** A temporary folder made os.tmpdir() for the test (the primer makes its folder there), removed after. */
function ownTmpdir(t: Test): string {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-prime-test-'));
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  t.teardown(() => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  return tmp;
}

function primeFolders(dir: string): string[] {
  return fs.readdirSync(dir).filter((name) => name.startsWith('tally-prime-'));
}

t.test('the primed requests over segments answer as the same rows in memory, a request a step', async (t) => {
  const tmp = ownTmpdir(t);
  const files = await loadSegmentFiles();
  const primer = new Primer(files, writeSegment);
  t.equal(primeFolders(tmp).length, 1, 'the made-up segments are in a folder of their own');
  let steps = 1;
  while (primer.step()) steps++;
  t.equal(steps, PRIMED_DAYS.length - 1 + PRIMED_REQUESTS.length * PRIME_ROUNDS, 'a segment written a step, then a request a step, every round');
  t.equal(primer.steps, steps);
  t.same(primeFolders(tmp), [], 'the folder is gone after the last step');
  t.notOk(primer.step(), 'nothing runs after the last step');

  // The same rows, all in memory: no segment, footer, pair table or sketch answers for them.
  const buffer = new WriteBuffer();
  for (const day of PRIMED_DAYS) appendPrimedDay(buffer, day);
  const source = { idKey: 0, memoryVersion: 0, segments: [], memory: buffer.snapshot(), schema: {} };
  const timeframe = { start: new Date(START).toISOString(), end: new Date(START + PRIMED_DAYS.length * DAY).toISOString() };
  t.equal(primer.answers.length, PRIMED_REQUESTS.length);
  PRIMED_REQUESTS.forEach(([analysis, params], index) => {
    const plan = parseRequest(analysis, { event_collection: 'primed', timeframe, ...params }, { nowMs: START + 4 * DAY });
    const sources = plan.kind === 'funnel' ? plan.steps.map(() => source) : [source];
    const inMemory = runTask({ plan, sources, limits: DEFAULT_QUERY_LIMITS, deadlineMs: Date.now() + 60_000, timeoutMs: 60_000 },
      { views: new ColumnViews(), cache: new ChunkCache(files) });
    t.same(rounded(primer.answers[index]), rounded(inMemory), `${analysis} ${JSON.stringify(params)}`);
  });
  const rows = PRIMED_DAYS.reduce((sum, day) => sum + day.rows, 0);
  t.same(primer.answers[0], { result: rows }, 'the plain count is every row');
  t.equal((primer.answers[PRIMED_REQUESTS.length - 1].result as unknown[]).length, 100, 'the extraction has its 100 events');
});

t.test('a write that fails (a full disk): the primer throws and leaves no folder behind', async (t) => {
  const tmp = ownTmpdir(t);
  let writes = 0;
  const failing: typeof writeSegment = (...args) => {
    if (++writes === 2) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    return writeSegment(...args);
  };
  const primer = new Primer(await loadSegmentFiles(), failing);
  t.ok(primer.step(), 'the first segment written');
  t.throws(() => primer.step(), /ENOSPC/);
  t.equal(writes, 2, 'it stopped at the failed write');
  t.same(primeFolders(tmp), [], 'the folder and the segment written before are gone');
});
