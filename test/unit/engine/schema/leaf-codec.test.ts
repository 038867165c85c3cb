/**
 * Leaves as bytes (leaf-codec.ts): what a worker hands the write path and what the WAL keeps. Every
 * value type, repeated and distinct paths and strings, unicode, lists and numbers at the edges
 * come back as they went in, from any byte offset; damaged bytes are refused, not misread.
 */
import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { appendLeaves, makeFragment, newAppended, type Fragment } from '../../../../engine/schema/fragment.js';
import { PathJoiner, flattenEvent, newLeaves, type Leaves } from '../../../../engine/schema/flatten.js';
import {
  KIND_FALSE, KIND_LIST, KIND_NULL, KIND_NUM, KIND_STR, KIND_TRUE, LeafEncoder, decodeLeaves, leafValue,
  leavesOfView, viewLeaves,
} from '../../../../engine/schema/leaf-codec.js';

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

/** Numbers as text that tells -0 from 0; lists item by item: t.same alone takes -0 for 0. */
function exact(value: unknown): unknown {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : value;
  return Array.isArray(value) ? value.map(exact) : value;
}

/** Leaves [0, count) as [path, value] pairs, -0 told apart. */
function pairsOf(leaves: Leaves): [string, unknown][] {
  return Array.from({ length: leaves.count }, (_, i) => [leaves.paths[i], exact(leaves.values[i])]);
}

t.test('a view gives every leaf decodeLeaves gives, kind by kind', async (t) => {
  const leaves = leavesOf(EVENTS);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const before = Buffer.from(bytes);
  const view = viewLeaves(bytes);
  t.same(Buffer.from(bytes), before, 'reading a view leaves the bytes as they were (the WAL writes them after)');
  const decoded = decodeLeaves(bytes, newLeaves());
  t.equal(view.count, leaves.count);
  const fromView: [string, unknown][] = Array.from({ length: view.count }, (_, i) => [view.paths[view.pathOf[i]], exact(leafValue(view, i))]);
  t.same(fromView, pairsOf(decoded), 'path and value of every leaf, as decodeLeaves has them');
  t.same(fromView, pairsOf(leaves), 'and as they went in');
  t.same(pairsOf(leavesOfView(view, leavesOf([...EVENTS, ...EVENTS]))), pairsOf(leaves), 'leavesOfView over leaves that held more');
  const kindOf = (value: unknown) => value === null ? KIND_NULL : value === true ? KIND_TRUE : value === false ? KIND_FALSE
    : typeof value === 'number' ? KIND_NUM : typeof value === 'string' ? KIND_STR : KIND_LIST;
  t.same([...view.kinds], leaves.values.slice(0, leaves.count).map(kindOf), 'each leaf\'s kind');
  t.same(new Set(view.kinds), new Set([KIND_NULL, KIND_NUM, KIND_STR, KIND_TRUE, KIND_FALSE, KIND_LIST]), 'every kind is there');
  t.same(view.paths, [...new Set(leaves.paths.slice(0, leaves.count))], 'each path once, in first-seen order');
  t.same([...view.nums].map(exact), leaves.values.slice(0, leaves.count).filter((v) => typeof v === 'number').map(exact),
    'the numbers in leaf order');
  t.ok(Object.is(leafValue(view, leaves.paths.indexOf('neg')), -0), '-0 stays -0');
  t.equal(leafValue(view, leaves.paths.indexOf('astral')), '😀 𝄞');
  t.equal(leafValue(view, leaves.paths.indexOf('clé ✓.ключ')), 'значение');
  const list = leaves.paths.indexOf('list');
  t.same(leafValue(view, list), [1, 2.5, null]);
  t.not(leafValue(view, list), leafValue(view, list), 'a list is a fresh array each time');
  const empty = viewLeaves(new LeafEncoder().encode(leaves, 0));
  t.same({ count: empty.count, paths: empty.paths, strings: empty.strings }, { count: 0, paths: [], strings: [] }, 'no leaves');
});

t.test('a view reads from any byte offset', async (t) => {
  const leaves = leavesOf(EVENTS);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  for (let shift = 1; shift < 8; shift++) {
    const host = new Uint8Array(bytes.byteLength + shift);
    host.set(bytes, shift);
    const view = viewLeaves(host.subarray(shift));
    t.same(Array.from({ length: view.count }, (_, i) => exact(leafValue(view, i))), pairsOf(leaves).map(([, v]) => v), `offset ${shift}`);
  }
});

/** Where each part of an encoding lies (leaf-codec.ts grammar), from its header. */
function layout(bytes: Uint8Array) {
  const [, count, pathCount, strCount, numCount] = new Uint32Array(bytes.buffer, bytes.byteOffset, 8);
  const pathOf = 32 + 8 * numCount;
  const refs = pathOf + 4 * count;
  const pathBytes = refs + 4 * count;
  const kinds = pathBytes + 4 * pathCount + 4 * strCount;
  return { count, pathCount, strCount, numCount, pathOf, refs, pathBytes, kinds };
}

function setU32(bytes: Uint8Array, at: number, value: number): void {
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(at, value, true);
}

t.test('a view refuses damaged bytes: references out of range, unknown kinds, truncation', async (t) => {
  const leaves = leavesOf(EVENTS);
  const bytes = new LeafEncoder().encode(leaves, leaves.count);
  const at = layout(bytes);
  const kinds = [...bytes.subarray(at.kinds, at.kinds + at.count)];
  const damaged = (what: string, damage: (copy: Uint8Array) => void, message: RegExp) => {
    const copy = new Uint8Array(bytes);
    damage(copy);
    t.throws(() => viewLeaves(copy), message, what);
    t.throws(() => decodeLeaves(copy, newLeaves()), message, `${what} (decodeLeaves)`);
  };
  t.ok(viewLeaves(new Uint8Array(bytes)), 'the undamaged copy is read');
  const last = at.count - 1;
  damaged('a path index one past the table', (copy) => setU32(copy, at.pathOf + 4 * last, at.pathCount), /path out of range/);
  damaged('a path index far out', (copy) => setU32(copy, at.pathOf, 0xffffffff), /path out of range/);
  const str = kinds.indexOf(KIND_STR);
  damaged('a string index one past the table', (copy) => setU32(copy, at.refs + 4 * str, at.strCount), /string out of range/);
  const list = kinds.indexOf(KIND_LIST);
  damaged('a list\'s string index out of range', (copy) => setU32(copy, at.refs + 4 * list, at.strCount + 7), /string out of range/);
  for (const kind of [7, 9, 0xff]) damaged(`kind ${kind}`, (copy) => { copy[at.kinds + last] = kind; }, new RegExp(`unknown kind ${kind}`));
  damaged('a fragment reference in a record with no fragment table', (copy) => { copy[at.kinds + last] = 6; }, /fragment out of range/);
  damaged('one number leaf too many', (copy) => { copy[at.kinds + kinds.indexOf(KIND_TRUE)] = KIND_NUM; }, /too few numbers/);
  damaged('a path longer than its table', (copy) => setU32(copy, at.pathBytes, 1_000_000), /string past the end/);
  damaged('a path shorter than it was', (copy) => setU32(copy, at.pathBytes, new DataView(copy.buffer).getUint32(at.pathBytes, true) - 1),
    /string table length mismatch/);
  damaged('a wrong count', (copy) => setU32(copy, 4, at.count + 1), /bad header/);
  damaged('a wrong magic', (copy) => { copy[3] ^= 0x80; }, /bad header/);
  let refused = 0;
  for (let length = 0; length < bytes.length; length++) {
    try {
      viewLeaves(bytes.subarray(0, length));
    } catch (error) {
      if (/leaves: (truncated header|bad header)/.test((error as Error).message)) refused++;
    }
  }
  t.equal(refused, bytes.length, `each of the ${bytes.length} truncations is refused`);
  const longer = new Uint8Array(bytes.length + 8);
  longer.set(bytes);
  t.throws(() => viewLeaves(longer), /bad header/, 'bytes past the end');
});

/**
 * Events whose paths and values defeat the encoder's guesses in every way: paths reordered,
 * missing and new from one event to the next, one string at several paths, several strings at
 * one path, one list object at several paths and a path's list changing.
 */
function shiftingEvents(random: () => number, count: number): Record<string, unknown>[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const shared = ['red', 'green', 'blue', '', 'ünï', 'red '];
  const lists = [[1, 2], ['red', null], [true], []];
  const paths = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  const events: Record<string, unknown>[] = [];
  for (let e = 0; e < count; e++) {
    const event: Record<string, unknown> = {};
    const order = paths.filter(() => random() < 0.7);
    if (random() < 0.5) order.reverse();
    if (random() < 0.2) order.push(`new${e}`);
    for (const path of order) {
      const roll = random();
      event[path] = roll < 0.5 ? pick(shared) : roll < 0.6 ? `only${e}` : roll < 0.7 ? pick([0, -0, 1.5, -1e300, 5e-324])
        : roll < 0.8 ? pick([true, false, null]) : roll < 0.9 ? pick(lists) : [e, e + 1];
    }
    if (random() < 0.3) event.nested = { [pick(paths)]: pick(shared), x: { y: pick(shared) } };
    events.push(event);
  }
  return events;
}

t.test('leaves whose paths and strings change from event to event come back exactly', async (t) => {
  const random = mulberry32(3);
  const encoder = new LeafEncoder();
  for (let round = 0; round < 40; round++) {
    const leaves = leavesOf(shiftingEvents(random, 1 + Math.floor(random() * 60)));
    const bytes = encoder.encode(leaves, leaves.count);
    const back = decodeLeaves(bytes, newLeaves());
    const what = `round ${round}`;
    if (JSON.stringify(pairsOf(back)) !== JSON.stringify(pairsOf(leaves))) t.same(pairsOf(back), pairsOf(leaves), what);
    t.same(Buffer.from(bytes), Buffer.from(new LeafEncoder().encode(leaves, leaves.count)),
      `${what}: the same bytes as a fresh encoder's, whatever it guessed from the rounds before`);
    const view = viewLeaves(bytes);
    const texts = leaves.values.slice(0, leaves.count).filter((v) => typeof v === 'string' || Array.isArray(v))
      .map((v) => typeof v === 'string' ? v : JSON.stringify(v));
    t.same(view.strings, [...new Set(texts)], `${what}: each string and list once, in first-seen order`);
    t.same(view.paths, [...new Set(leaves.paths.slice(0, leaves.count))], `${what}: each path once, in first-seen order`);
  }
});

t.test('the guesses are only guesses: hand-made sequences that break each one', async (t) => {
  const list = ['x', null];
  const events = [
    { a: 's1', b: 's2', c: list }, // the guesses are set
    { b: 's1', a: 's2', c: 's1' }, // paths swapped; each string at the other's path; a list's path holds a string
    { a: 's1', c: list, b: 's2' }, // the list object again at its path, after a string was there
    { c: ['x', null], a: 's3' }, // an equal list that is another object; b missing
    { d: list, a: 's1', b: 's1', c: 's1' }, // the list object at a new path; one string at three paths
    { a: 's1' }, { a: 's1' }, { a: 's1', a2: 's1' },
  ];
  const leaves = leavesOf(events);
  const encoder = new LeafEncoder();
  const back = decodeLeaves(encoder.encode(leaves, leaves.count), newLeaves());
  t.same(pairsOf(back), pairsOf(leaves));
  // The list changes under the encoder's eyes between two encodings: the second has the new one.
  list.push('y');
  const again = decodeLeaves(encoder.encode(leaves, leaves.count), newLeaves());
  t.same(again.values[2], ['x', null, 'y'], 'a list changed since the last encoding is written as it is now');
  t.same(pairsOf(again), pairsOf(leaves));
});

/** Events as the fast batch reader gives them: own leaves, then each add-on result as one leaf. */
function withResults(events: { own: Record<string, unknown>; results: [string, Fragment][] }[]): { given: Leaves; expanded: Leaves } {
  const given = newLeaves();
  const expanded = newLeaves();
  const joiner = new PathJoiner();
  for (const { own, results } of events) {
    flattenEvent(own, given);
    flattenEvent(own, expanded);
    for (const [name, fragment] of results) {
      given.paths[given.count] = name;
      given.values[given.count++] = fragment;
    }
    const appended = newAppended();
    for (const [name, fragment] of results) {
      appended.names[appended.count] = name;
      appended.fragments[appended.count++] = fragment;
    }
    appendLeaves(appended, expanded, joiner);
  }
  return { given, expanded };
}

t.test('add-on results given whole are written once per record and read back as their leaves', async (t) => {
  const geo = makeFragment({ city: 'Lyon', coordinates: [4.85, 45.75], postal_code: null, zero: -0 });
  const other = makeFragment({ city: 'Paris', coordinates: [2.35, 48.85], postal_code: '75001', zero: 0 });
  const agent = makeFragment({ browser: { family: 'Chrome', major: '120' }, os: { family: 'Linux' }, bot: false, score: 1.5 });
  const empty = makeFragment({});
  const events = Array.from({ length: 300 }, (_, i) => ({
    own: { user: `u${i % 7}`, price: i + 0.25, tags: ['a', 'b'], ...(i % 3 === 0 ? { flag: true } : {}) },
    results: [
      ['geo', i % 5 === 0 ? other : geo],
      ['agent', agent],
      ...(i % 4 === 0 ? [['nothing', empty]] : []),
      ...(i % 10 === 0 ? [['geo_again', geo]] : []), // one result under a second name
    ] as [string, Fragment][],
  }));
  const { given, expanded } = withResults(events);
  const encoder = new LeafEncoder();
  const bytes = encoder.encode(given, given.count);
  const back = decodeLeaves(bytes, newLeaves());
  t.equal(back.count, expanded.count, 'each result counts as its leaves');
  t.same(pairsOf(back), pairsOf(expanded), 'the leaves the general path appends, in the same places');
  t.ok(back.values.some((value, i) => back.paths[i] === 'geo.zero' && Object.is(value, -0)), 'a result\'s -0 stays -0');
  const flat = new LeafEncoder().encode(expanded, expanded.count);
  t.ok(bytes.byteLength < flat.byteLength * 0.6, `${bytes.byteLength} bytes against ${flat.byteLength} with every result's leaves written per event`);
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, 8);
  t.equal(words[7], 5, 'five table entries: geo, other, agent, empty, geo under its second name');
  // The same results in the next record: a new table, not a reference into the last one.
  const next = withResults(events.slice(0, 3));
  const again = decodeLeaves(encoder.encode(next.given, next.given.count), newLeaves());
  t.same(pairsOf(again), pairsOf(next.expanded), 'a second record with the same results');
  // A view gives what decodeLeaves gives, leaf by leaf.
  const view = viewLeaves(bytes);
  t.equal(view.count, expanded.count);
  let same = 0;
  for (let i = 0; i < view.count; i++) {
    if (view.paths[view.pathOf[i]] === expanded.paths[i] && JSON.stringify(leafValue(view, i)) === JSON.stringify(expanded.values[i])) same++;
  }
  t.equal(same, view.count, 'every leaf of the view');
  t.notOk(view.paths.includes('geo'), 'an output name alone is not a path of the record');
});

t.test('a record of events with results only, and results with no leaves', async (t) => {
  const only = makeFragment({ a: 1, b: 'x' });
  const empty = makeFragment({});
  const { given, expanded } = withResults([{ own: {}, results: [['r', only]] }, { own: {}, results: [['e', empty]] }, { own: {}, results: [] }]);
  const back = decodeLeaves(new LeafEncoder().encode(given, given.count), newLeaves());
  t.same(pairsOf(back), pairsOf(expanded));
  t.equal(back.count, 2);
});

t.test('a damaged fragment table is refused', async (t) => {
  const fragment = makeFragment({ x: 'y', n: 2 });
  const { given } = withResults([{ own: { a: 's' }, results: [['r', fragment]] }, { own: { a: 't' }, results: [['r', fragment]] }]);
  const bytes = new LeafEncoder().encode(given, given.count);
  const [, stored, pathCount, strCount, numCount] = new Uint32Array(bytes.buffer, bytes.byteOffset, 8);
  const starts = 32 + 8 * numCount + 8 * stored + 4 * (pathCount + strCount);
  const kinds = starts + 4 * 2;
  const refs = 32 + 8 * numCount + 4 * stored;
  t.same([...bytes.subarray(kinds, kinds + stored)], [KIND_STR, 6, KIND_STR, 6, KIND_STR, KIND_NUM], 'the layout the cases below damage');
  const damaged = (what: string, damage: (copy: Uint8Array) => void, message: RegExp) => {
    const copy = new Uint8Array(bytes);
    damage(copy);
    t.throws(() => viewLeaves(copy), message, what);
  };
  t.ok(viewLeaves(new Uint8Array(bytes)), 'the undamaged copy is read');
  damaged('a reference past the table', (copy) => setU32(copy, refs + 4 * 1, 1), /fragment out of range/);
  damaged('a reference in the table itself', (copy) => { copy[kinds + 4] = 6; }, /fragment in the fragment table/);
  damaged('a table that ends early', (copy) => setU32(copy, starts + 4, stored - 1), /fragment table length mismatch/);
  damaged('entries out of order', (copy) => setU32(copy, starts, stored + 1), /fragment table out of order/);
  damaged('a wrong entry count', (copy) => setU32(copy, 28, 2), /bad header/);
});
