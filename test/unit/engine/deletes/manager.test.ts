import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { collectionIdKey } from '../../../../engine/storage/event-ids.js';
import { EventBuilder, openEngine, type TallyEngine } from '../../../../engine/index.js';

const ctx = { ip: '203.0.113.9', userAgent: 'test/1.0' };

async function open(dataDir: string): Promise<TallyEngine> {
  return openEngine({ dataDir, queryWorkers: 0, flushIntervalMs: 3_600_000 });
}

function eventsOf(
  engine: TallyEngine,
  project: string,
  collection: string,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const chunk of engine.collections.scan(project, collection, 0, 8.64e15)) {
    const builder = new EventBuilder(chunk, collectionIdKey(project, collection));
    for (let i = 0; i < chunk.rows; i++) out.push(builder.event(i));
  }
  return out;
}

function segmentRows(dataDir: string): number {
  const manifest = JSON.parse(fs.readFileSync(path.join(dataDir, 'manifest.json'), 'utf8'));
  return manifest.collections
    .flatMap((c: { segments: { footer: { rows: number } }[] }) => c.segments)
    .reduce((sum: number, s: { footer: { rows: number } }) => sum + s.footer.rows, 0);
}

t.test(
  'deletes through the embedded engine: scans, the rewrite, retirement and reopening',
  async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-deletes-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    let engine = await open(dir);
    const project = engine.projects.list()[0].id;
    const notified: string[] = [];
    engine.collections.onDelete((p, c) => notified.push(`${p === project}:${c}`));
    const events = Array.from({ length: 100 }, (_, i) => ({
      collection: 'c',
      event: { n: i, odd: i % 2 === 1, pii: { email: `u${i}@x` } },
    }));
    await engine.events.append(project, events, ctx);
    await engine.flush();
    await engine.collections.deleteEvents(project, 'c', {
      filters: [{ property_name: 'odd', operator: 'eq', property_value: true }],
    });
    await engine.collections.deleteProperty(project, 'c', 'pii');
    await engine.events.append(
      project,
      [{ collection: 'c', event: { n: 1000, odd: true, pii: { email: 'late@x' } } }],
      ctx,
    );
    let seen = eventsOf(engine, project, 'c');
    t.equal(seen.length, 51, 'odd events before the delete are gone; the later one stays');
    t.ok(
      seen.filter((e) => e.n !== 1000).every((e) => !('pii' in e)),
      'the property is gone from older events',
    );
    t.same(
      seen.find((e) => e.n === 1000)?.pii,
      { email: 'late@x' },
      'events written later keep it',
    );
    t.equal(segmentRows(dir), 100, 'nothing was rewritten synchronously');
    t.same(notified, ['true:c', 'true:c'], 'onDelete listeners hear of each delete');
    await engine.flush(); // the buffered event goes to a segment, then one rewrite step
    await engine.flush();
    await engine.flush();
    t.equal(
      segmentRows(dir),
      51,
      'the background rewrite removed the deleted rows from the segments',
    );
    const log = JSON.parse(fs.readFileSync(path.join(dir, 'deletes.json'), 'utf8'));
    t.same(log.entries, [], 'entries retire once nothing holds what they delete');
    await engine.close();
    engine = await open(dir);
    seen = eventsOf(engine, project, 'c');
    t.equal(seen.length, 51);
    t.ok(
      seen.filter((e) => e.n !== 1000).every((e) => !('pii' in e)),
      'rewritten raw JSON lacks the property',
    );
    const count = (await engine.queries.run(project, 'count', {
      event_collection: 'c',
      timeframe: { start: '2000-01-01', end: '2100-01-01' },
    })) as { result: number };
    t.equal(count.result, 51);
    await engine.collections.deleteEvents(project, 'c', {});
    t.equal(engine.collections.get(project, 'c'), undefined);
    t.same(eventsOf(engine, project, 'c'), []);
    await engine.close();
    engine = await open(dir);
    t.equal(
      engine.collections.get(project, 'c'),
      undefined,
      'the collection delete survives reopening',
    );
    await engine.close();
  },
);

t.test(
  'a delete that matches no row of a segment leaves the segment file alone and retires',
  async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-deletes-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const engine = await open(dir);
    const project = engine.projects.list()[0].id;
    await engine.events.append(
      project,
      Array.from({ length: 10 }, (_, i) => ({ collection: 'c', event: { n: i } })),
      ctx,
    );
    await engine.flush();
    const files = () =>
      JSON.parse(
        fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'),
      ).collections[0].segments.map((s: { file: string }) => s.file);
    const before = files();
    await engine.collections.deleteEvents(project, 'c', {
      filters: [{ property_name: 'n', operator: 'eq', property_value: 99 }],
    });
    await engine.flush();
    await engine.flush();
    t.same(files(), before, 'not rewritten');
    t.same(JSON.parse(fs.readFileSync(path.join(dir, 'deletes.json'), 'utf8')).entries, []);
    t.equal(eventsOf(engine, project, 'c').length, 10);
    await engine.close();
  },
);

t.test('planned deletes (cluster mode): checked and resolved once, applied to the events stored so far', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-deletes-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const engine = await open(dir);
  t.teardown(() => engine.close());
  const project = engine.projects.list()[0].id;
  const c = engine.collections;
  const odd = { filters: [{ property_name: 'odd', operator: 'eq', property_value: true }] };
  const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({
    collection: 'p', event: { n: from + i, odd: (from + i) % 2 === 1, pii: 'x' },
  }));
  t.same(c.planDeleteEvents(project, 'nowhere', {}), { kind: 'collection' }, 'no collection needed to plan');
  const week = c.planDeleteEvents(project, 'p', { timeframe: 'this_7_days' });
  t.ok(week.kind === 'rows' && week.endMs - week.startMs === 7 * 86_400_000, 'a relative timeframe resolved to absolute times');
  const codeOf = (f: () => unknown) => {
    try {
      f();
      return 'none';
    } catch (error) {
      return (error as { error_code?: string }).error_code;
    }
  };
  t.equal(codeOf(() => c.planDeleteEvents(project, 'p', { filters: [{ property_name: 'odd', operator: 'nope' }] })),
    'InvalidFilterError', 'a bad filter refused when planned');
  t.equal(codeOf(() => c.planDeleteProperty(project, 'p', 'svc.timestamp')), 'ResourceNotFoundError');
  const plan = c.planDeleteEvents(project, 'p', odd);
  t.equal(await c.applyDelete(project, 'p', plan), false, 'no such collection here: nothing to delete');
  await engine.events.append(project, rows(0, 10), ctx);
  t.equal(await c.applyDelete(project, 'p', plan), true);
  // Applied again with no event stored in between (a crash before its offset was durable): nothing more.
  t.equal(await c.applyDelete(project, 'p', plan), true);
  await engine.events.append(project, rows(10, 10), ctx);
  t.same(eventsOf(engine, project, 'p').map((e) => e.n), [0, 2, 4, 6, 8, ...Array.from({ length: 10 }, (_, i) => 10 + i)],
    'the odd events before it gone, every later one kept');
  const property = c.planDeleteProperty(project, 'p', 'pii');
  t.equal(await c.applyDelete(project, 'p', property), true);
  t.equal(await c.applyDelete(project, 'p', property), false, 'a property already gone: nothing to delete');
  const none = { kind: 'rows', startMs: 0, endMs: 1, filters: [] } as const;
  for (let i = 0; i < 20; i++) t.equal(await c.applyDelete(project, 'p', none), true); // applying is never rate-limited
  let refused = 0;
  for (let i = 0; i < 11; i++) {
    try {
      c.planDeleteEvents(project, 'p', odd);
    } catch (error) {
      if ((error as { error_code?: string }).error_code === 'RateLimitExceededError') refused++;
    }
  }
  t.ok(refused >= 1, 'planning takes the rate limit (429)');
  t.equal(await c.applyDelete(project, 'p', { kind: 'collection' }), true);
  t.equal(c.get(project, 'p'), undefined);
  t.equal(await c.applyDelete(project, 'p', { kind: 'collection' }), false, 'a collection already gone');
});
