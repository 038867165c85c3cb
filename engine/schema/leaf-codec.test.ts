/**
 * Leaves as bytes (leaf-codec.ts): what a worker hands the write path and what the WAL keeps. Every
 * value type, repeated and distinct paths and strings, unicode, lists and numbers at the edges
 * come back as they went in, from any byte offset; damaged bytes are refused, not misread.
 */
import t from 'tap';
import { flattenEvent, newLeaves, type Leaves } from './flatten.js';
import { LeafEncoder, decodeLeaves } from './leaf-codec.js';

function leavesOf(events: Record<string, unknown>[]): Leaves {
  const leaves = newLeaves();
  for (const event of events) flattenEvent(event, leaves);
  return leaves;
}

const EVENTS: Record<string, unknown>[] = [
  { n: 0, neg: -0, tiny: 5e-324, big: 1.7976931348623157e308, frac: 0.1 + 0.2, int: 9007199254740991 },
  { s: '', quote: '" \\ \n \t \u0000', astral: '😀 𝄞', cjk: '日本語', accents: 'ünïcødé', 'clé ✓': { 'ключ': 'значение' } },
  { b: true, f: false, nil: null, list: [1, 2.5, null], strs: ['a', null, 'ß'], bools: [true, false], none: [] },
  { nested: { a: { b: { c: 'deep' } }, empty: {} }, mixed: 5 },
  { mixed: 'five' }, { mixed: [5] }, { mixed: { five: 5 } }, { mixed: null }, {},
  { s: 'plain', repeated: 'plain', user: 'u1' }, { s: 'plain', user: 'u2' },
];

t.test('every leaf comes back as it went in', async (t) => {
  const leaves = leavesOf(EVENTS);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const back = decodeLeaves(bytes, newLeaves());
  t.equal(back.count, leaves.count);
  t.same(back.paths.slice(0, back.count), leaves.paths.slice(0, leaves.count));
  t.same(back.values.slice(0, back.count), leaves.values.slice(0, leaves.count));
  const at = back.paths.indexOf('neg');
  t.ok(Object.is(back.values[at], -0), '-0 stays -0');
  t.equal(back.values[back.paths.indexOf('tiny')], 5e-324);
});

t.test('from any byte offset, and into leaves that held more', async (t) => {
  const leaves = leavesOf(EVENTS);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const out = leavesOf([...EVENTS, ...EVENTS]); // stale entries past count must not matter
  for (let shift = 1; shift < 8; shift++) {
    const host = new Uint8Array(bytes.byteLength + shift);
    host.set(bytes, shift);
    const back = decodeLeaves(host.subarray(shift), out);
    t.same(back.values.slice(0, back.count), leaves.values.slice(0, leaves.count), `offset ${shift}`);
  }
});

t.test('only the first `count` leaves are encoded; an encoder is reused between calls', async (t) => {
  const encoder = new LeafEncoder();
  const first = leavesOf(EVENTS);
  encoder.encode(first, first.count);
  const leaves = leavesOf([{ a: 'x', b: 1 }, { a: 'y', b: 2 }]);
  const back = decodeLeaves(encoder.encode(leaves, 2), newLeaves());
  t.same(back.paths.slice(0, back.count), ['a', 'b']);
  t.same(back.values.slice(0, back.count), ['x', 1]);
  t.equal(decodeLeaves(encoder.encode(leaves, 0), newLeaves()).count, 0);
});

t.test('a lone surrogate comes back as U+FFFD, as it does from a segment', async (t) => {
  const leaves = leavesOf([{ s: 'a\ud800b', t: 'ok' }]);
  const back = decodeLeaves(new LeafEncoder().encode(leaves, leaves.count), newLeaves());
  t.same(back.values.slice(0, 2), ['a\ufffdb', 'ok']);
});

t.test('strings are fresh copies, not views that keep the buffer', async (t) => {
  const long = 'x'.repeat(100);
  const leaves = leavesOf([{ s: long }]);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const back = decodeLeaves(bytes, newLeaves());
  bytes.fill(0);
  t.equal(back.values[0], long);
});

t.test('damaged bytes are refused', async (t) => {
  const leaves = leavesOf(EVENTS);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  t.throws(() => decodeLeaves(bytes.subarray(0, 16), newLeaves()), /truncated header/);
  t.throws(() => decodeLeaves(bytes.subarray(0, bytes.length - 1), newLeaves()), /bad header/);
  const wrongMagic = new Uint8Array(bytes);
  wrongMagic[0] ^= 1;
  t.throws(() => decodeLeaves(wrongMagic, newLeaves()), /bad header/);
  const wrongKind = new Uint8Array(bytes);
  const kindsAt = wrongKind.length - Buffer.byteLength(leaves.paths.filter((p, i, all) => all.indexOf(p) === i).join('')) -
    new Uint32Array(wrongKind.buffer, 0, 8)[6] - leaves.count;
  wrongKind[kindsAt] = 9;
  t.throws(() => decodeLeaves(wrongKind, newLeaves()), /unknown kind 9/);
});
