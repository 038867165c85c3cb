/**
 * A data dir written by layout version 1 (segments that also kept each event's JSON in `_raw`)
 * still opens and answers: its columns are read as version 2 reads its own.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { openEngine } from '../../../../../engine/index.js';

// dist/engine/storage/segment → the repository's test/fixtures.
const FIXTURE = fileURLToPath(new URL('../../../../../../test/fixtures/layout-v1', import.meta.url));
const PROJECT = 'f83b5c3f4048f7572c32629f';

t.test('a layout-1 store answers queries and extractions from its columns', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-compat-'));
  fs.cpSync(FIXTURE, dir, { recursive: true });
  const engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 0, orgKey: 'a'.repeat(64) });
  const timeframe = { start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' };
  t.same(await engine.queries.run(PROJECT, 'count', { event_collection: 'old', timeframe }), { result: 2 });
  t.same(await engine.queries.run(PROJECT, 'sum', { event_collection: 'old', timeframe, target_property: 'n' }), { result: 3 });
  const { result } = await engine.queries.run(PROJECT, 'extraction', { event_collection: 'old', timeframe }) as
    { result: Record<string, unknown>[] };
  t.same(result.map(({ svc: _svc, ...rest }) => rest), [
    { n: 1, s: 'x', nested: { a: true } },
    { n: 2, s: 'y', list: [1, 2] },
  ]);
  t.match((result[0].svc as { id: string }).id, /^[0-9a-f]{24}$/);
  await engine.close();
});
