/**
 * Filters over a segment wholly inside the timeframe take the dense loops (rows read in order,
 * no selection vector): booleans, numeric ranges with values on the bounds, and strings, checked
 * against a plain computation over the same rows, alone and after another filter.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { ScanSource } from '../../../../engine/storage/chunk.js';
import { writeSegment } from '../../../../engine/storage/segment/writer.js';
import { QueryService } from '../../../../engine/query/exec/service.js';
import { makeChunk, type TestEvent } from '../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 6, 1);
const ROWS = 5000;
const events: TestEvent[] = Array.from({ length: ROWS }, (_, i) => ({
  ts: START + i * 1000,
  props: { flag: i % 3 === 0, price: (i * 37) % 100, kind: `k${(i * 7) % 11}` },
}));

async function service(t: { teardown(fn: () => void): void }): Promise<QueryService> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-dense-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 's0.arrow');
  const footer = writeSegment(file, makeChunk(events), {});
  const source = { idKey: 0, memoryVersion: 0, segments: [{ file, footer }], memory: null, schema: {} } as unknown as ScanSource;
  const queries = new QueryService({ source: () => source, clock: () => START + 30 * 86_400_000, workers: 0 });
  t.teardown(() => queries.close());
  return queries;
}

type Props = { flag: boolean; price: number; kind: string };
const timeframe = { start: '2024-06-01T00:00:00Z', end: '2024-08-01T00:00:00Z' };

t.test('dense filters select what a plain loop selects', async (t) => {
  const queries = await service(t);
  const rows = events.map((event) => event.props as unknown as Props);
  const filter = (property_name: string, operator: string, property_value: unknown) => ({ property_name, operator, property_value });
  const cases: [string, ReturnType<typeof filter>[], (row: Props) => boolean][] = [
    ['flag eq true', [filter('flag', 'eq', true)], (row) => row.flag],
    ['flag eq false', [filter('flag', 'eq', false)], (row) => !row.flag],
    ['flag ne true', [filter('flag', 'ne', true)], (row) => !row.flag],
    ['flag in [true, false]', [filter('flag', 'in', [true, false])], () => true],
    ['price in [10, 20) (values on both bounds)', [filter('price', 'gte', 10), filter('price', 'lt', 20)], (row) => row.price >= 10 && row.price < 20],
    ['price in (10, 20]', [filter('price', 'gt', 10), filter('price', 'lte', 20)], (row) => row.price > 10 && row.price <= 20],
    ['kind in [k3, k5]', [filter('kind', 'in', ['k3', 'k5'])], (row) => row.kind === 'k3' || row.kind === 'k5'],
    ['kind eq k3 then flag eq true', [filter('kind', 'eq', 'k3'), filter('flag', 'eq', true)], (row) => row.kind === 'k3' && row.flag],
    ['price gte 50 then kind ne k1', [filter('price', 'gte', 50), filter('kind', 'ne', 'k1')], (row) => row.price >= 50 && row.kind !== 'k1'],
  ];
  for (const [name, filters, keep] of cases) {
    const kept = rows.filter(keep);
    const params = { event_collection: 'e', timeframe, filters, target_property: 'price' };
    const sum = await queries.run('p', 'sum', params) as { result: number };
    t.equal(sum.result, kept.reduce((total, row) => total + row.price, 0), `sum, ${name}`);
    const max = await queries.run('p', 'maximum', params) as { result: number | null };
    t.equal(max.result, kept.length === 0 ? null : Math.max(...kept.map((row) => row.price)), `maximum, ${name}`);
    const min = await queries.run('p', 'minimum', params) as { result: number | null };
    t.equal(min.result, kept.length === 0 ? null : Math.min(...kept.map((row) => row.price)), `minimum, ${name}`);
  }
});
