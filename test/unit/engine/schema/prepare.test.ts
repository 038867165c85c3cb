import t from 'tap';
import { ApiError } from '../../../../engine/base/errors.js';
import { validateCollectionName } from '../../../../engine/schema/collection-name.js';
import { flattenEvent, newLeaves } from '../../../../engine/schema/flatten.js';
import { prepareEvent } from '../../../../engine/schema/prepare.js';
import { parseTimestamp } from '../../../../engine/schema/timestamp.js';

const ctx = { ip: '1.2.3.4', userAgent: 'agent/1.0' };
const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);

function codeOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (error) {
    if (error instanceof ApiError) return error.error_code;
    throw error;
  }
}

t.test('property names: 255 characters pass, 256 fail, no periods, not empty', async (t) => {
  t.equal(codeOf(() => prepareEvent({ ['a'.repeat(255)]: 1 }, NOW, 'x', ctx)), null);
  t.equal(codeOf(() => prepareEvent({ ['a'.repeat(256)]: 1 }, NOW, 'x', ctx)), 'InvalidPropertyNameError');
  t.equal(codeOf(() => prepareEvent({ 'a.b': 1 }, NOW, 'x', ctx)), 'InvalidPropertyNameError');
  t.equal(codeOf(() => prepareEvent({ a: { 'b.c': 1 } }, NOW, 'x', ctx)), 'InvalidPropertyNameError');
  t.equal(codeOf(() => prepareEvent({ '': 1 }, NOW, 'x', ctx)), 'InvalidPropertyNameError');
});

t.test('string values: 9,999 characters pass, 10,000 fail, at any depth and in lists', async (t) => {
  t.equal(codeOf(() => prepareEvent({ s: 'x'.repeat(9_999) }, NOW, 'x', ctx)), null);
  t.equal(codeOf(() => prepareEvent({ s: 'x'.repeat(10_000) }, NOW, 'x', ctx)), 'InvalidPropertyValueError');
  t.equal(codeOf(() => prepareEvent({ a: { b: 'x'.repeat(10_000) } }, NOW, 'x', ctx)), 'InvalidPropertyValueError');
  t.equal(codeOf(() => prepareEvent({ l: ['x'.repeat(10_000)] }, NOW, 'x', ctx)), 'InvalidPropertyValueError');
});

t.test('numbers within ±2^63, lists of one primitive type', async (t) => {
  t.equal(codeOf(() => prepareEvent({ n: 2 ** 63 - 1 }, NOW, 'x', ctx)), null);
  t.equal(codeOf(() => prepareEvent({ n: -(2 ** 63) }, NOW, 'x', ctx)), null);
  t.equal(codeOf(() => prepareEvent({ n: 1e19 }, NOW, 'x', ctx)), 'InvalidPropertyValueError');
  t.equal(codeOf(() => prepareEvent({ l: [1, null, 2] }, NOW, 'x', ctx)), null);
  t.equal(codeOf(() => prepareEvent({ l: [1, 'a'] }, NOW, 'x', ctx)), 'InvalidPropertyValueError');
  t.equal(codeOf(() => prepareEvent({ l: [{ a: 1 }] }, NOW, 'x', ctx)), 'InvalidPropertyValueError');
  t.equal(codeOf(() => prepareEvent({ l: [[1]] }, NOW, 'x', ctx)), 'InvalidPropertyValueError');
  t.equal(codeOf(() => prepareEvent([1], NOW, 'x', ctx)), 'InvalidEventError');
  t.equal(codeOf(() => prepareEvent('x', NOW, 'x', ctx)), 'InvalidEventError');
});

t.test('svc namespace: server fields set, client extras refused', async (t) => {
  const { event, tsMs } = prepareEvent({ a: 1, svc: { id: 'mine', created_at: 'x' } }, NOW, 'abc', ctx);
  const svc = event.svc as Record<string, unknown>;
  t.equal(svc.id, 'abc');
  t.equal(svc.created_at, '2024-05-01T12:00:00.000Z');
  t.equal(svc.timestamp, '2024-05-01T12:00:00.000Z');
  t.equal(tsMs, NOW);
  t.equal(codeOf(() => prepareEvent({ svc: { other: 1 } }, NOW, 'x', ctx)), 'InvalidSvcNamespaceProperty');
  t.equal(codeOf(() => prepareEvent({ svc: 5 }, NOW, 'x', ctx)), 'InvalidSvcNamespaceProperty');
  t.equal(codeOf(() => prepareEvent({ svc: { uniqueness_token: 'x'.repeat(64) } }, NOW, 'x', ctx)), null);
  t.equal(codeOf(() => prepareEvent({ svc: { uniqueness_token: 'x'.repeat(65) } }, NOW, 'x', ctx)),
    'InvalidSvcNamespaceProperty');
  t.equal(codeOf(() => prepareEvent({ svc: { timestamp: 'yesterday' } }, NOW, 'x', ctx)), 'InvalidSvcNamespaceProperty');
  t.equal(codeOf(() => prepareEvent({ svc: { location: { coordinates: [200, 0] } } }, NOW, 'x', ctx)),
    'InvalidSvcNamespaceProperty');
});

t.test('timestamps with -0800, -08:00 and Z are the same instant', async (t) => {
  const utc = Date.UTC(2024, 0, 15, 18, 30, 0, 123);
  t.equal(parseTimestamp('2024-01-15T10:30:00.123-0800'), utc);
  t.equal(parseTimestamp('2024-01-15T10:30:00.123-08:00'), utc);
  t.equal(parseTimestamp('2024-01-15T18:30:00.123Z'), utc);
  t.equal(parseTimestamp('2024-01-15T18:30:00Z'), utc - 123);
  t.ok(Number.isNaN(parseTimestamp('2024-02-30T00:00:00Z')));
  t.ok(Number.isNaN(parseTimestamp('2023-02-29T00:00:00Z')));
  t.equal(parseTimestamp('2024-02-29T00:00:00Z'), Date.UTC(2024, 1, 29));
  const plain = prepareEvent({ svc: { timestamp: '2024-01-15T10:30:00.123-08:00' } }, NOW, 'x', ctx);
  t.equal(plain.tsMs, utc, 'the stored instant');
  // Add-ons read svc.timestamp as text: they get it in UTC. (Without add-ons nothing reads the text.)
  const addons = [{ name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'when' }];
  const enriched = prepareEvent({ svc: { timestamp: '2024-01-15T10:30:00.123-08:00', addons } }, NOW, 'x', ctx);
  t.equal(enriched.tsMs, utc);
  t.equal((enriched.event.svc as Record<string, unknown>).timestamp, '2024-01-15T18:30:00.123Z');
  const defaulted = prepareEvent({ svc: { addons } }, NOW, 'x', ctx);
  t.equal((defaulted.event.svc as Record<string, unknown>).timestamp, new Date(NOW).toISOString(), 'no timestamp: the receipt time');
});

t.test('placeholders are replaced at any depth and in lists', async (t) => {
  const { event } = prepareEvent({
    ip: '${svc.ip}', deep: { a: { b: { ua: '${svc.user_agent}' } } }, list: ['${svc.ip}', 'x'], other: 'a ${svc.ip}',
  }, NOW, 'x', ctx);
  t.equal(event.ip, '1.2.3.4');
  t.same(event.deep, { a: { b: { ua: 'agent/1.0' } } });
  t.same(event.list, ['1.2.3.4', 'x']);
  t.equal(event.other, 'a ${svc.ip}');
});

t.test('flatten gives dotted paths, an empty object as a structural leaf, and leaves svc internals out', async (t) => {
  const { event } = prepareEvent({ a: { b: { c: 1 } }, l: [1, 2], n: null, e: {} ,
    svc: { uniqueness_token: 'u', location: { coordinates: [1, 2] } } }, NOW, 'x', ctx);
  const leaves = newLeaves();
  flattenEvent(event, leaves);
  const pairs = leaves.paths.slice(0, leaves.count).map((p, i) => [p, leaves.values[i]]);
  t.same(Object.fromEntries(pairs), {
    'a.b.c': 1, l: [1, 2], n: null, 'e.': '{}', 'svc.uniqueness_token': 'u', 'svc.location.coordinates': [1, 2],
  });
});

t.test('collection names', async (t) => {
  const bad = ['', '$x', '_x', '.x', 'x.', 'a'.repeat(65), 5];
  for (const name of bad) t.equal(codeOf(() => validateCollectionName(name)), 'InvalidCollectionNameError', String(name));
  for (const name of ['purchases', 'a'.repeat(64), 'a.b', 'sign ups', 'ü']) {
    t.doesNotThrow(() => validateCollectionName(name));
  }
});
