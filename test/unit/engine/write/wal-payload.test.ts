/**
 * A WAL record's payload (engine/write/wal-payload.ts): the events of one append call with their leaves. Version 2
 * round-trips every field; version 1 payloads (event JSON as text), left by an older Tally, still
 * replay into the same leaves.
 */
import t from 'tap';
import { flattenEvent, newLeaves } from '../../../../engine/schema/flatten.js';
import { LeafEncoder } from '../../../../engine/schema/leaf-codec.js';
import { decodeWalPayload, encodeWalPayload, type WalEvent } from '../../../../engine/write/wal-payload.js';

const ROOM = 13;

t.test('events, tokens, collections and leaves round-trip', async (t) => {
  const leaves = newLeaves();
  const events: WalEvent[] = [];
  const sent = [
    { c: 'clicks', k: null, event: { a: 1, b: 'x' } },
    { c: 'ünïcødé', k: 'tøken-😀', event: { nested: { list: [1, null] }, ok: true } },
    { c: 'clicks', k: '', event: {} },
  ];
  for (const [i, { c, k, event }] of sent.entries()) {
    flattenEvent(event, leaves);
    events.push({ collection: c, token: k, seq: 2 ** 40 + i, timestamp: 1_700_000_000_123 + i, createdAt: 1_700_000_000_999, from: leaves.start, to: leaves.count });
  }
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const payload = encodeWalPayload('proj-1', events, bytes, ROOM, (n) => Buffer.alloc(n, 0xee));
  t.ok(payload.subarray(0, ROOM).every((b) => b === 0xee), 'the room before the payload is left alone');
  const out = newLeaves();
  const decoded = decodeWalPayload(payload.subarray(ROOM), out);
  t.equal(decoded.project, 'proj-1');
  t.same(decoded.events, events);
  t.same(out.paths.slice(0, out.count), leaves.paths.slice(0, leaves.count));
  t.same(out.values.slice(0, out.count), leaves.values.slice(0, leaves.count));
});

t.test('a version 1 payload (event JSON as text) decodes into the same events and leaves', async (t) => {
  const text = 'proj-1\n' +
    'clicks\t7\t1700000000123\t1700000000999\tnull\t{"a":1,"b":"x","svc":{"id":"0123456789abcdef01234567","timestamp":"x"}}\n' +
    'views\t8\t1700000000124\t1700000000999\t"tok\\u00e9"\t{"nested":{"list":[1,null]},"ok":true}\n';
  const out = newLeaves();
  const decoded = decodeWalPayload(Buffer.from(text), out);
  t.equal(decoded.project, 'proj-1');
  t.same(decoded.events.map((e) => [e.collection, e.seq, e.timestamp, e.createdAt, e.token]), [
    ['clicks', 7, 1700000000123, 1700000000999, null],
    ['views', 8, 1700000000124, 1700000000999, 'toké'],
  ]);
  const expected = newLeaves();
  flattenEvent({ a: 1, b: 'x', svc: { id: '0123456789abcdef01234567', timestamp: 'x' } }, expected);
  flattenEvent({ nested: { list: [1, null] }, ok: true }, expected);
  t.same(out.paths.slice(0, out.count), expected.paths.slice(0, expected.count));
  t.same(out.values.slice(0, out.count), expected.values.slice(0, expected.count));
  t.same(decoded.events.map((e) => [e.from, e.to]), [[0, 2], [2, 4]]);
});

t.test('a payload whose leaves do not match its events is refused', async (t) => {
  const leaves = newLeaves();
  flattenEvent({ a: 1 }, leaves);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const event: WalEvent = { collection: 'c', token: null, seq: 0, timestamp: 0, createdAt: 0, from: 0, to: 5 };
  const payload = encodeWalPayload('p', [event], bytes, 0, (n) => Buffer.alloc(n));
  t.throws(() => decodeWalPayload(payload, newLeaves()), /leaves out of range/);
  t.throws(() => decodeWalPayload(payload.subarray(0, payload.length - 1), newLeaves()), /leaves length mismatch/);
});

t.test('a tag rides in the header flags; untagged payloads keep the flags byte 0', async (t) => {
  const leaves = newLeaves();
  flattenEvent({ a: 1 }, leaves);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const event: WalEvent = { collection: 'c', token: null, seq: 41, timestamp: 1, createdAt: 2, from: 0, to: leaves.count };
  const plain = encodeWalPayload('p', [event], bytes, 0, (n) => Buffer.alloc(n));
  t.same([plain[0], plain[1]], [2, 0], 'version 2, no flags: as written before tags existed');
  t.equal(decodeWalPayload(plain, newLeaves()).tag, null);
  const tag = '["kafka","tøpic",7,0,100,3]';
  const tagged = encodeWalPayload('p', [event], bytes, 0, (n) => Buffer.alloc(n), tag);
  t.same([tagged[0], tagged[1]], [2, 1], 'flag bit 0: a tag follows the project');
  t.equal(tagged.length, plain.length + 2 + Buffer.byteLength(tag));
  const decoded = decodeWalPayload(tagged, newLeaves());
  t.equal(decoded.tag, tag);
  t.equal(decoded.project, 'p');
  t.same(decoded.events, [event]);
  t.throws(() => encodeWalPayload('p', [event], bytes, 0, (n) => Buffer.alloc(n), 'x'.repeat(1025)), /tag too long/);
  const unknown = Buffer.from(plain);
  unknown[1] = 2;
  t.throws(() => decodeWalPayload(unknown, newLeaves()), /unknown flags/);
});
