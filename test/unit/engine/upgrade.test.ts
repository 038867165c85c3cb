/**
 * Data directories written by earlier code open with this code and lose nothing (each committed
 * fixture is a data dir left by a crash: flushed segments plus WAL records not yet flushed):
 * - test/fixtures/data-dir-60f2194: the code before this session's changes (WAL payload version 2,
 *   no producer tags, no lock file);
 * - test/fixtures/data-dir-wal-tags: WAL records carrying a tag (an idempotent Kafka batch's
 *   producer fields), written by the code that introduced them;
 * - test/fixtures/data-dir-wal-zeroed: a WAL segment ending in room zeroed ahead of its writes
 *   (engine/wal/wal.ts), written by the code that introduced it;
 * - test/fixtures/data-dir-bitpacked: segments of layout version 3, whose string codes are
 *   bit-packed (storage/segment/bitpack.ts), written by the code that introduced them;
 * - test/fixtures/data-dir-blocked: a segment whose dictionary of 9,000 user ids is stored in
 *   frames (storage/segment/dict-blocks.ts), written by the code that introduced them.
 * - test/fixtures/data-dir-pairs: a segment whose sidecar holds a pair table of devices by pages
 *   (storage/segment/pair-counts.ts), written by the code that introduced them. data-dir-blocked's
 *   sidecar has none: its queries of two columns scan.
 * Regenerate with the generator in the fixtures' README if a format changes (a new fixture, never
 * a rewritten one).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { openEngine } from '../../../engine/index.js';
import { decodeSidecar } from '../../../engine/storage/segment/footer.js';
import { IpcFile } from '../../../engine/storage/segment/ipc-read.js';

const FIXTURES = fileURLToPath(new URL('../../../../test/fixtures/', import.meta.url));
const TIMEFRAME = { start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' };
const ctx = { ip: '127.0.0.1', userAgent: 'upgrade-test' };

function copyOf(name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-upgrade-'));
  fs.cpSync(path.join(FIXTURES, name), dir, { recursive: true });
  return dir;
}

for (const [name, tags] of [
  ['data-dir-60f2194', []],
  ['data-dir-wal-tags', [{ tag: JSON.stringify(['kafka', 'pv', 7, 0, 0, 3]), firstOffset: 5 }]],
  ['data-dir-wal-zeroed', []],
  ['data-dir-bitpacked', []],
] as const) {
  t.test(`${name}: every event once, tokens and tags recovered, then a clean close and reopen`, async (t) => {
    const dir = copyOf(name);
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    let engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 0 });
    const project = engine.projects.list()[0]!.id;
    t.same(engine.events.replayedTags().map(({ tag, firstOffset }) => ({ tag, firstOffset })), tags, 'WAL tags replayed');
    const extract = async () => {
      const { result } = await engine.queries.run(project, 'extraction', { event_collection: 'pv', timeframe: TIMEFRAME }) as
        { result: { n: number; page: string }[] };
      return result.map((event) => event.n).sort((a, b) => a - b);
    };
    t.same(await extract(), [0, 1, 2, 3, 4, 5, 6, 7], 'flushed and WAL-only events, each once');
    t.same(await engine.queries.run(project, 'count', { event_collection: 'pv', timeframe: TIMEFRAME, group_by: 'page' }), {
      result: [{ page: '/p0', result: 3 }, { page: '/p1', result: 2 }, { page: '/p9', result: 3 }],
    });
    // A uniqueness token stored by the old code still drops a duplicate.
    await engine.events.append(project, [{ collection: 'pv', event: { n: 99, svc: { timestamp: '2024-01-01T01:00:00Z', uniqueness_token: 't0' } } }], ctx);
    t.same(await extract(), [0, 1, 2, 3, 4, 5, 6, 7], 'the old token drops the duplicate');
    await engine.close();
    engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 0 });
    t.same(engine.events.replayedTags(), [], 'the clean close flushed the WAL');
    t.same(await extract(), [0, 1, 2, 3, 4, 5, 6, 7], 'the same after a clean close and reopen');
    await engine.close();
  });
}

t.test('data-dir-bitpacked holds what it is kept for: a layout 3 segment with bit-packed codes', async (t) => {
  const day = path.join(FIXTURES, 'data-dir-bitpacked/projects/77fec0a26396769efdad7893/pv/2024-01-01');
  const segment = fs.readdirSync(day).find((name) => name.endsWith('.arrow'))!;
  const ipc = IpcFile.open(path.join(day, segment))!;
  t.teardown(() => ipc.close());
  t.equal(ipc.metadata.get('tally.version'), '3');
  t.same(ipc.fields.filter((field) => field.metadata.get('tally.codes') === 'bitpacked').map((field) => field.name), ['page', 'svc.uniqueness_token']);
});

t.test('data-dir-blocked: a blocked dictionary of user ids answers filters, groupings and extractions, then a clean close and reopen', async (t) => {
  const day = path.join(FIXTURES, 'data-dir-blocked/projects/715efa4643eb75a1592d3f0f/pv/2024-01-01');
  const segment = fs.readdirSync(day).find((name) => name.endsWith('.arrow'))!;
  const ipc = IpcFile.open(path.join(day, segment))!;
  t.match(ipc.fields.find((field) => field.name === 'user')?.metadata.get('tally.blocks'), /^4096;\d+,\d+,\d+;/, 'the fixture holds a blocked dictionary');
  ipc.close();

  const dir = copyOf('data-dir-blocked');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 0 });
  const project = engine.projects.list()[0]!.id;
  const params = { event_collection: 'pv', timeframe: TIMEFRAME };
  // Event n (< 9000) is user-(n * 7919 % 9000); n 9000-9002 (in the WAL) are user-n.
  const check = async (when: string) => {
    t.same(await engine.queries.run(project, 'count', params), { result: 9003 }, `${when}: every event once`);
    for (const [user, n] of [['user-0', 0], ['user-7919', 1], ['user-8999', 4321], ['user-4500', 4500]] as const) {
      const { result } = await engine.queries.run(project, 'extraction', { ...params, filters: [{ property_name: 'user', operator: 'eq', property_value: user }] }) as { result: { n: number }[] };
      t.same(result.map((event) => event.n), [n], `${when}: ${user} is event ${n}`);
    }
    t.same(await engine.queries.run(project, 'count', { ...params, filters: [{ property_name: 'user', operator: 'in', property_value: ['user-9001', 'user-9999', 'nobody'] }] }),
      { result: 1 }, `${when}: an in filter, one value in the WAL's events only`);
    t.same(await engine.queries.run(project, 'count_unique', { ...params, target_property: 'user' }), { result: 9003 }, `${when}: distinct users`);
    t.same(await engine.queries.run(project, 'count', { ...params, group_by: 'page' }), {
      result: [{ page: '/p0', result: 4500 }, { page: '/p1', result: 4500 }, { page: '/p9', result: 3 }],
    }, `${when}: grouped`);
    // Two columns, from a sidecar without pair tables: scanned. user-(n × 7919 mod 9000) for n < 9000,
    // page /p(n mod 2): user-0 is n 0, user-7919 n 1, user-8999 n 4321.
    t.same(await engine.queries.run(project, 'count', { ...params, group_by: 'page', filters: [{ property_name: 'user', operator: 'in', property_value: ['user-0', 'user-7919', 'user-8999', 'user-9002'] }] }), {
      result: [{ page: '/p0', result: 1 }, { page: '/p1', result: 2 }, { page: '/p9', result: 1 }],
    }, `${when}: grouped, filtered by another column`);
  };
  await check('opened');
  await engine.close();
  engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 0 });
  await check('reopened');
  await engine.close();
});

t.test('data-dir-pairs: a pair table answers counts by two columns, with the WAL\'s events, then a clean close and reopen', async (t) => {
  const day = path.join(FIXTURES, 'data-dir-pairs/projects/d1e96c97034c521d6ae3c342/pv/2024-01-01');
  const meta = fs.readdirSync(day).find((name) => name.endsWith('.arrow.meta'))!;
  t.ok(decodeSidecar(fs.readFileSync(path.join(day, meta)), path.join(day, meta)).pairs.device?.page, 'the fixture holds a pair table of devices by pages');

  const dir = copyOf('data-dir-pairs');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 0 });
  const project = engine.projects.list()[0]!.id;
  const params = { event_collection: 'pv', timeframe: TIMEFRAME };
  // Event n < 2000: device d(n mod 3), null when n mod 10 = 9; page /p(n mod 5). n 2000-2002 (in the WAL): d9, /p9.
  const expected = (pass: (n: number) => boolean) => {
    const counts = new Map<string, number>();
    for (let n = 0; n < 2003; n++) {
      if (!pass(n)) continue;
      const page = n < 2000 ? `/p${n % 5}` : '/p9';
      counts.set(page, (counts.get(page) ?? 0) + 1);
    }
    return [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([page, result]) => ({ page, result }));
  };
  const device = (n: number) => (n >= 2000 ? 'd9' : n % 10 === 9 ? null : `d${n % 3}`);
  const check = async (when: string) => {
    t.same(await engine.queries.run(project, 'count', params), { result: 2003 }, `${when}: every event once`);
    const sorted = (body: unknown) => ({ result: [...(body as { result: { page: string }[] }).result].sort((a, b) => (a.page < b.page ? -1 : 1)) });
    const inD0D9 = { property_name: 'device', operator: 'in', property_value: ['d0', 'd9'] };
    t.same(sorted(await engine.queries.run(project, 'count', { ...params, group_by: 'page', filters: [inD0D9] })),
      { result: expected((n) => device(n) === 'd0' || device(n) === 'd9') }, `${when}: devices in d0, d9 by page`);
    t.same(sorted(await engine.queries.run(project, 'count', { ...params, group_by: 'page', filters: [{ property_name: 'device', operator: 'eq', property_value: null }] })),
      { result: expected((n) => device(n) === null) }, `${when}: null devices by page`);
  };
  await check('opened');
  await engine.close();
  engine = await openEngine({ dataDir: dir, queryWorkers: 0, ingestWorkers: 0 });
  await check('reopened');
  await engine.close();
});
