/**
 * Single-event appends of one turn are written as one call (engine/services/single-appends.ts):
 * each caller still gets its own result, its own context's placeholders and its own refusal, and
 * the events are stored exactly once, also after a crash.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { collectionIdKey } from '../../../../engine/storage/event-ids.js';
import { EventBuilder, openEngine, type TallyEngine } from '../../../../engine/index.js';
import { abandonDataDirLock } from '../../../../engine/base/data-dir-lock.js';
import { decodeRecords } from '../../../../engine/wal/record.js';

/** Records in the data directory's WAL files, as replay would read them. */
function walRecords(dataDir: string): number {
  const walDir = path.join(dataDir, 'wal');
  let records = 0;
  for (const name of fs.readdirSync(walDir)) records += decodeRecords(fs.readFileSync(path.join(walDir, name))).payloads.length;
  return records;
}

async function open(dataDir: string): Promise<TallyEngine> {
  return openEngine({ dataDir, queryWorkers: 0, flushIntervalMs: 3_600_000 });
}

function eventsOf(engine: TallyEngine, project: string, collection: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const chunk of engine.collections.scan(project, collection, 0, 8.64e15)) {
    for (let i = 0; i < chunk.rows; i++) out.push(new EventBuilder(chunk, collectionIdKey(project, collection)).event(i) as Record<string, unknown>);
  }
  return out;
}

/** What `promise` rejects with; a resolution is a failure of the test. */
function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => new Error('resolved, not refused'), (error: unknown) => error);
}

t.test('single appends of one turn share a WAL record; each keeps its own result, context and refusal', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-singles-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const engine = await open(dir);
  const project = engine.projects.list()[0]!.id;
  const count = 50;
  t.equal(walRecords(dir), 0);
  // Different bodies, collections and contexts; every seventh event is invalid (a property name with a period).
  const calls = Array.from({ length: count }, (_, i) => engine.events.append(project, [{
    collection: i % 2 === 0 ? 'even' : 'odd',
    event: i % 7 === 3 ? { 'bad.name': i } : { n: i, text: `event ${i} `.repeat(i % 5), ip: '${svc.ip}', ua: '${svc.user_agent}' },
  }], { ip: `10.0.0.${i}`, userAgent: `agent/${i}` }));
  const results = await Promise.all(calls);
  t.equal(walRecords(dir), 1, 'the 50 appends made in one turn went as one WAL record');
  for (let i = 0; i < count; i++) {
    t.equal(results[i]!.length, 1, 'each caller gets one result');
    const result = results[i]![0]!;
    if (i % 7 === 3) t.match(result, { ok: false, error: { error_code: 'InvalidPropertyNameError' } }, `event ${i} is refused alone`);
    else t.match(result, { ok: true, offset: Number }, `event ${i} is stored`);
  }
  const check = (engine: TallyEngine, when: string) => {
    const stored = [...eventsOf(engine, project, 'even'), ...eventsOf(engine, project, 'odd')];
    const expected = Array.from({ length: count }, (_, i) => i).filter((i) => i % 7 !== 3);
    t.same(stored.map((e) => e.n).sort((a, b) => (a as number) - (b as number)), expected, `${when}: each valid event exactly once`);
    for (const event of stored) {
      const n = event.n as number;
      t.same([event.text, event.ip, event.ua], [`event ${n} `.repeat(n % 5), `10.0.0.${n}`, `agent/${n}`], `${when}: event ${n} has its own body and context`);
    }
  };
  check(engine, 'stored');
  // A single append alone in its turn is written at once, as before.
  const [alone] = await engine.events.append(project, [{ collection: 'alone', event: { n: 1000 } }], { ip: '10.0.0.1', userAgent: 'x' });
  t.match(alone, { ok: true });
  t.equal(walRecords(dir), 2, 'in a record of its own');
  // Crash (no close) and reopen: the WAL record of the shared call replays every event once.
  abandonDataDirLock(dir);
  const reopened = await open(dir);
  check(reopened, 'replayed');
  t.same(eventsOf(reopened, project, 'alone').map((e) => e.n), [1000]);
  await reopened.close();
  await engine.close().catch(() => {});
});

t.test('a single append to an unknown project or a closed engine is refused at once', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-singles-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const engine = await open(dir);
  const project = engine.projects.list()[0]!.id;
  const ctx = { ip: '10.0.0.1', userAgent: 'x' };
  t.match(await refusal(engine.events.append('nope', [{ collection: 'c', event: { a: 1 } }], ctx)), { error_code: 'ResourceNotFoundError' });
  // Made in the turn close() starts in: refused, never half written.
  const pending = engine.events.append(project, [{ collection: 'c', event: { a: 1 } }], ctx);
  const closing = engine.close();
  t.match(await refusal(pending), { error_code: 'ServiceUnavailableError' });
  await closing;
  t.match(await refusal(engine.events.append(project, [{ collection: 'c', event: { a: 1 } }], ctx)), { error_code: 'ServiceUnavailableError' });
});
