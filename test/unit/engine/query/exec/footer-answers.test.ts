/**
 * What segment footers answer without reading a segment, checked against brute force over the
 * rows and with the segment files removed: minimum and maximum without filters or groups
 * (execute.ts footerAnswer), over numbers mixed with strings, nulls and missing values, with
 * boundary segments and unflushed rows read; and numeric range filters, which skip a segment
 * none of whose numbers is in range (scan.ts outsideNumbers).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { mulberry32 } from '../../../../helpers/random.js';
import { openEngine, type TallyEngine } from '../../../../../engine/index.js';

const ctx = { ip: '203.0.113.9', userAgent: 'test/1.0' };
const DAY = 86_400_000;
const START = Date.UTC(2024, 0, 1);
const whole = { start: '2024-01-01T00:00:00Z', end: '2024-01-11T00:00:00Z' };
/** Cuts days 2 and 6 in half: their segments are read, the others answered from footers. */
const cut = { start: '2024-01-03T12:00:00Z', end: '2024-01-07T12:00:00Z' };

interface Row { ts: number; price?: unknown; sparse?: unknown; label: string }

function makeRows(seed: number, count: number): Row[] {
  const random = mulberry32(seed);
  return Array.from({ length: count }, () => {
    const ts = START + Math.floor(random() * 10 * DAY);
    const roll = random();
    const price = roll < 0.8 ? Math.round((random() - 0.3) * 100_000) / 100 : roll < 0.9 ? 'n/a' : roll < 0.95 ? null : undefined;
    const day = Math.floor((ts - START) / DAY);
    // Numbers on three days only, strings on the others: segments without a number are read.
    const sparse = day % 3 === 0 ? random() * 1000 - 500 : `s${day}`;
    return { ts, price, sparse, label: `l${Math.floor(random() * 5)}` };
  });
}

function event(row: Row): Record<string, unknown> {
  const out: Record<string, unknown> = { label: row.label, sparse: row.sparse, svc: { timestamp: new Date(row.ts).toISOString() } };
  if (row.price !== undefined) out.price = row.price;
  return out;
}

function expected(rows: Row[], property: 'price' | 'sparse', timeframe: { start: string; end: string }, max: boolean): number | null {
  const from = Date.parse(timeframe.start);
  const to = Date.parse(timeframe.end);
  let best: number | null = null;
  for (const row of rows) {
    const value = row[property];
    if (row.ts < from || row.ts >= to || typeof value !== 'number') continue;
    if (best === null || (max ? value > best : value < best)) best = value;
  }
  return best;
}

async function storeWith(t: Test, rows: Row[], unflushed: Row[]): Promise<{ engine: TallyEngine; project: string; dir: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-extremes-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const engine = await openEngine({ dataDir: dir, queryWorkers: 1, flushIntervalMs: 3_600_000, cacheWarming: false });
  t.teardown(() => engine.close());
  const project = engine.projects.list()[0].id;
  const appended = await engine.events.append(project, rows.map((row) => ({ collection: 'views', event: event(row) })), ctx);
  t.equal(appended.filter((result) => !result.ok).length, 0);
  await engine.flush();
  if (unflushed.length > 0) await engine.events.append(project, unflushed.map((row) => ({ collection: 'views', event: event(row) })), ctx);
  return { engine, project, dir };
}

function run(engine: TallyEngine, project: string, analysis: string, params: Record<string, unknown>): Promise<unknown> {
  return engine.queries.run(project, analysis, { event_collection: 'views', ...params }).then((body) => (body as { result: unknown }).result);
}

t.test('minimum and maximum agree with the rows, footers and scans alike', async (t) => {
  const rows = makeRows(11, 4_000);
  // Unflushed rows hold the extremes of the whole timeframe: the write buffer is always read.
  const unflushed: Row[] = [
    { ts: START + 4 * DAY + 5, price: 123_456.5, sparse: 'x', label: 'l0' },
    { ts: START + 8 * DAY + 5, price: -98_765.25, sparse: 'x', label: 'l0' },
  ];
  const { engine, project } = await storeWith(t, rows, unflushed);
  const all = [...rows, ...unflushed];
  for (const timeframe of [whole, cut]) {
    for (const property of ['price', 'sparse'] as const) {
      for (const max of [false, true]) {
        const analysis = max ? 'maximum' : 'minimum';
        t.equal(await run(engine, project, analysis, { target_property: property, timeframe }), expected(all, property, timeframe, max),
          `${analysis} of ${property} over ${timeframe.start}`);
      }
    }
    const multi = await run(engine, project, 'multi_analysis', {
      timeframe,
      analyses: {
        low: { analysis_type: 'minimum', target_property: 'price' },
        high: { analysis_type: 'maximum', target_property: 'price' },
        rows: { analysis_type: 'count' },
      },
    });
    const from = Date.parse(timeframe.start);
    const to = Date.parse(timeframe.end);
    t.same(multi, {
      low: expected(all, 'price', timeframe, false),
      high: expected(all, 'price', timeframe, true),
      rows: all.filter((row) => row.ts >= from && row.ts < to).length,
    }, `multi_analysis over ${timeframe.start}`);
  }
  // A filter that keeps every row takes the scan: the same answers.
  const everyRow = [{ property_name: 'label', operator: 'exists', property_value: true }];
  t.equal(await run(engine, project, 'maximum', { target_property: 'price', timeframe: whole, filters: everyRow }), expected(all, 'price', whole, true));
  t.equal(await run(engine, project, 'minimum', { target_property: 'price', timeframe: whole, filters: everyRow }), expected(all, 'price', whole, false));
});

t.test('a target with values but no number is still refused', async (t) => {
  const rows = makeRows(12, 500).map((row) => ({ ...row, price: typeof row.price === 'number' ? `p${row.price}` : row.price }));
  const { engine, project } = await storeWith(t, rows, []);
  const refused = await run(engine, project, 'maximum', { target_property: 'price', timeframe: whole }).then(() => null, (error: unknown) => error);
  t.match(refused, { error_code: 'NonNumericTargetPropertyError' });
});

t.test('segments wholly inside the timeframe are not read: their files may be gone', async (t) => {
  const rows = makeRows(13, 3_000).map((row) => ({ ...row, sparse: 1 }));
  const { engine, project, dir } = await storeWith(t, rows, []);
  const files = fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.arrow'));
  t.ok(files.length >= 10, `${files.length} segment files`);
  for (const file of files) fs.rmSync(path.join(dir, file));
  t.equal(await run(engine, project, 'maximum', { target_property: 'price', timeframe: whole }), expected(rows, 'price', whole, true));
  t.equal(await run(engine, project, 'minimum', { target_property: 'price', timeframe: whole }), expected(rows, 'price', whole, false));
});

t.test('a numeric range filter skips the segments none of whose numbers is in range', async (t) => {
  // Day d holds prices d*100 .. d*100 + 99.99 (and strings and lists, which such a filter never matches).
  const random = mulberry32(14);
  const rows = Array.from({ length: 3_000 }, () => {
    const day = Math.floor(random() * 10);
    const roll = random();
    const price = roll < 0.8 ? day * 100 + Math.floor(random() * 10_000) / 100 : roll < 0.9 ? `${day * 100 + 50}` : [day * 100 + 50];
    return { ts: START + day * DAY + Math.floor(random() * DAY), price, sparse: 0, label: 'x' };
  });
  // Each day's extremes, so that filters can sit exactly on them.
  const edges = [0, 4, 5].flatMap((day) => {
    const prices = rows.filter((row) => typeof row.price === 'number' && Math.floor((row.ts - START) / DAY) === day).map((row) => row.price as number);
    return [Math.min(...prices), Math.max(...prices)];
  });
  const { engine, project } = await storeWith(t, rows as Row[], []);
  const count = (filters: unknown[]) => run(engine, project, 'count', { timeframe: whole, filters });
  const brute = (test: (price: number) => boolean) => rows.filter((row) => typeof row.price === 'number' && test(row.price)).length;
  for (const v of [...edges, 250, 499.99, 500, 1e9, -1]) {
    t.equal(await count([{ property_name: 'price', operator: 'gt', property_value: v }]), brute((p) => p > v), `gt ${v}`);
    t.equal(await count([{ property_name: 'price', operator: 'gte', property_value: v }]), brute((p) => p >= v), `gte ${v}`);
    t.equal(await count([{ property_name: 'price', operator: 'lt', property_value: v }]), brute((p) => p < v), `lt ${v}`);
    t.equal(await count([{ property_name: 'price', operator: 'lte', property_value: v }]), brute((p) => p <= v), `lte ${v}`);
  }
  t.equal(await count([{ property_name: 'price', operator: 'gte', property_value: '550' }]), rows.filter((row) => typeof row.price === 'string' && row.price >= '550').length,
    'a string bound compares strings, and skips nothing');
  // A store whose caches are cold, with only day 5's segment (2024-01-06) left on disk: a filter
  // on its range reads nothing else.
  const cold = await storeWith(t, rows as Row[], []);
  const files = fs.readdirSync(cold.dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.arrow'));
  t.ok(files.length >= 10, `${files.length} segment files`);
  for (const file of files) if (!file.includes('2024-01-06')) fs.rmSync(path.join(cold.dir, file));
  const coldCount = (filters: unknown[]) => run(cold.engine, cold.project, 'count', { timeframe: whole, filters });
  t.equal(await coldCount([{ property_name: 'price', operator: 'gte', property_value: 500 }, { property_name: 'price', operator: 'lt', property_value: 600 }]),
    brute((p) => p >= 500 && p < 600));
  t.equal(await run(cold.engine, cold.project, 'sum', { timeframe: whole, target_property: 'price', filters: [{ property_name: 'price', operator: 'gt', property_value: 500 }, { property_name: 'price', operator: 'lte', property_value: 599.5 }] }),
    rows.reduce((total, row) => (typeof row.price === 'number' && row.price > 500 && row.price <= 599.5 ? total + row.price : total), 0));
});
