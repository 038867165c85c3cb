/**
 * Sums, averages and counts grouped by one column, minima and maxima filtered by one column, and
 * plain sums and averages, answered from the segments' footers and sidecars (the per-value sums,
 * least and greatest numbers of sketches.ts computeGroupStats; value-counts.ts groupSumsAnswer,
 * groupExtremesAnswer; a column's numSum, execute.ts footerAnswer): equal to
 * the last bit to the same queries scanning the same segments (their sidecars rewritten without
 * them), with the segment files removed, over seeded random prices of two decimals.
 */
import fs from 'node:fs';
import t, { type Test } from 'tap';
import type { SegmentRef } from '../../../../../engine/storage/chunk.js';
import { decodeSidecar, encodeSidecar } from '../../../../../engine/storage/segment/footer.js';
import { SIDECAR_SUFFIX } from '../../../../../engine/storage/segment/layout.js';
import { QueryService } from '../../../../../engine/query/exec/service.js';
import { mulberry32 } from '../../../../helpers/random.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

const DEVICES = ['desktop', 'mobile', 'tablet', 'tv', 'console'];
const WEEK = { event_collection: 'e', timeframe: { start: '2024-01-01T00:00:00.000Z', end: '2024-01-08T00:00:00.000Z' } };

/** Six day segments of 3,000 rows; on day 4 one row has no device, so that day has no sums. */
function segments(t: Test, seed: number): SegmentRef[] {
  const random = mulberry32(seed);
  return writeDaySegments(t, 6, 3000, (s, i) => ({
    price: Math.round(random() * random() * 20_000) / 100,
    quantity: 1 + Math.floor(random() * 5),
    member: random() < 0.3,
    ...(s === 4 && i === 17 ? {} : { device: DEVICES[Math.floor(DEVICES.length * random() ** 1.5)] }),
  }));
}

/**
 * Copies of `refs` whose footers have no sums and whose sidecars list the value counts without
 * their sums and extremes: queries scan them.
 */
function withoutSums(refs: readonly SegmentRef[]): SegmentRef[] {
  return refs.map((ref) => {
    const file = ref.file.replace(/\.arrow$/, '-scanned.arrow');
    fs.copyFileSync(ref.file, file);
    const { values, sketches } = decodeSidecar(fs.readFileSync(ref.file + SIDECAR_SUFFIX), ref.file);
    const columns = Object.fromEntries(Object.entries(ref.footer.columns).map(([column, { numSum, ...stats }]) => {
      void numSum;
      return [column, stats];
    }));
    const footer = { ...ref.footer, columns };
    const bare = Object.fromEntries(Object.entries(values).map(([column, counts]) => [column, { values: counts.values, rows: counts.rows }]));
    fs.writeFileSync(file + SIDECAR_SUFFIX, encodeSidecar(footer, sketches, bare));
    return { file, footer };
  });
}

function service(t: Test, refs: readonly SegmentRef[]): QueryService {
  const queries = new QueryService({
    source: () => ({ idKey: 0, memoryVersion: 0, segments: refs, memory: null, schema: {} }),
    clock: () => Date.UTC(2024, 0, 8),
    workers: 0,
  });
  t.teardown(() => queries.close());
  return queries;
}

const QUERIES: [string, Record<string, unknown>][] = [
  ['average', { target_property: 'price', group_by: 'device' }],
  ['sum', { target_property: 'price', group_by: 'device' }],
  ['sum', { target_property: 'quantity', group_by: 'device', interval: 'daily' }],
  ['average', { target_property: 'quantity', group_by: 'device', timeframe: { start: '2024-01-02T12:00:00.000Z', end: '2024-01-07T00:00:00.000Z' } }],
  ['count', { group_by: 'device' }],
  ['maximum', { target_property: 'price', filters: [{ property_name: 'member', operator: 'eq', property_value: true }] }],
  ['minimum', { target_property: 'price', filters: [{ property_name: 'device', operator: 'in', property_value: ['tv', 'console'] }] }],
  ['maximum', { target_property: 'quantity', filters: [{ property_name: 'device', operator: 'ne', property_value: 'desktop' }] }],
  ['minimum', { target_property: 'price', filters: [{ property_name: 'device', operator: 'eq', property_value: 'none' }] }],
  ['sum', { target_property: 'price' }],
  ['average', { target_property: 'quantity' }],
];

t.test('the sidecar sums answer as a scan does, to the last bit, with the segment files gone', async (t) => {
  for (const seed of [1, 2, 3]) {
    const refs = segments(t, seed);
    const sums = decodeSidecar(fs.readFileSync(refs[0].file + SIDECAR_SUFFIX), refs[0].file).values.device.sums;
    t.ok(sums?.price !== undefined && sums.quantity !== undefined, 'a day whose every row has a device has sums of price and quantity');
    const member = decodeSidecar(fs.readFileSync(refs[0].file + SIDECAR_SUFFIX), refs[0].file).values.member;
    t.ok(member.greatest?.price !== undefined && member.sums === undefined, 'a column of booleans has extremes, no sums');
    t.equal(typeof refs[0].footer.columns.price.numSum, 'number', 'a column of numbers only has its sum in the footer');
    t.equal(refs[0].footer.columns.device.numSum, undefined);
    t.equal(decodeSidecar(fs.readFileSync(refs[4].file + SIDECAR_SUFFIX), refs[4].file).values.device?.sums, undefined,
      'a day with a row without a device has none');
    const scanned = service(t, withoutSums(refs));
    const answered = service(t, refs);
    const expected = [];
    for (const [analysis, params] of QUERIES) expected.push(await scanned.run('p', analysis, { ...WEEK, ...params }));
    // Every day but the fourth (which has no sums) and the boundary ones is answered unread.
    for (const [s, ref] of refs.entries()) if (s !== 4) fs.rmSync(ref.file);
    for (const [q, [analysis, params]] of QUERIES.entries()) {
      if (params.timeframe !== undefined) continue; // cuts days 2 and 7: their files are read
      t.strictSame(await answered.run('p', analysis, { ...WEEK, ...params }), expected[q], `seed ${seed}: ${analysis} ${JSON.stringify(params)}`);
    }
  }
});

t.test('a boundary day is scanned, the days inside answered from sums', async (t) => {
  const refs = segments(t, 9);
  const scanned = service(t, withoutSums(refs));
  const answered = service(t, refs);
  const [analysis, params] = QUERIES[3];
  const expected = await scanned.run('p', analysis, { ...WEEK, ...params });
  // Day 2 (a boundary) and day 5 (no sums) are read; days 3, 4 and 6 answer from their sidecars.
  for (const s of [2, 3, 5]) fs.rmSync(refs[s].file);
  t.strictSame(await answered.run('p', analysis, { ...WEEK, ...params }), expected);
});

t.test('a footer has no sum where the sum overflows (the manifest is JSON): such a segment is scanned', async (t) => {
  const refs = writeDaySegments(t, 1, 4, () => ({ big: 1.5e308 }));
  t.equal(refs[0].footer.columns.big.numSum, undefined);
  t.equal(refs[0].footer.columns.big.numMax, 1.5e308);
  const { result } = await service(t, refs).run('p', 'sum', { ...WEEK, target_property: 'big' }) as { result: unknown };
  t.equal(result, Infinity, 'as the scan adds it');
});
