/**
 * A cached query whose refresh failed (in a cluster: the nodes storing its collection down a
 * moment) runs again after CACHED_QUERY_RETRY_MS, not a whole refresh rate later; a success goes
 * back to the refresh rate.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ApiError } from '../../../../engine/base/errors.js';
import { CACHED_QUERY_RETRY_MS } from '../../../../engine/base/limits.js';
import { SavedQueries } from '../../../../engine/catalog/saved-queries.js';

t.test('a failed refresh is retried soon, a successful one after the refresh rate', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-saved-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const now = Date.UTC(2024, 4, 1);
  let fail = true;
  let runs = 0;
  const saved: SavedQueries = new SavedQueries({
    dataDir, clock: () => now,
    guards: { open: () => {}, project: () => {} },
    validate: () => {},
    run: async () => {
      runs++;
      if (fail) throw new ApiError('ServiceUnavailableError', 'Partition 3 of tally.events is unavailable');
      return { result: 42 };
    },
    commit: async (records) => {
      for (const record of records) saved.apply(record.id, record.state as never);
    },
  });
  t.teardown(() => saved.close());
  await saved.put('p', 'q', { query: { analysis_type: 'count', event_collection: 'c' }, refresh_rate: 14_400 });
  await t.rejects(saved.result('p', 'q'), { error_code: 'ServiceUnavailableError', message: /^Partition 3/ }, 'the failure, while there is no result');
  const failed = saved.get('p', 'q').run_information!;
  t.equal(failed.last_run_status, 'failure');
  t.equal(Date.parse(failed.next_run_date!) - now, CACHED_QUERY_RETRY_MS, 'retried after CACHED_QUERY_RETRY_MS');
  t.equal(runs, 1);
  // The same cycle after a success: the next run a refresh rate later.
  fail = false;
  await saved.put('p', 'r', { query: { analysis_type: 'count', event_collection: 'c' }, refresh_rate: 14_400 });
  t.same((await saved.result('p', 'r')).result, 42);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(Date.parse(saved.get('p', 'r').run_information!.next_run_date!) - now, 14_400_000);
});
