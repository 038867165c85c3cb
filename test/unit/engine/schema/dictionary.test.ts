/**
 * The schema dictionary (dictionary.ts): observeView, which the write path calls once per batch
 * on the batch's encoded leaves, records what observe() per event records, in the same order; and
 * fits() says yes exactly when every new path of a batch fits under COLLECTION_PROPERTIES_MAX at
 * once, which is when check() would pass each of its events.
 */
import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { isApiError } from '../../../../engine/base/errors.js';
import { COLLECTION_PROPERTIES_MAX } from '../../../../engine/base/limits.js';
import type { SchemaType } from '../../../../engine/storage/chunk.js';
import { SchemaDictionary } from '../../../../engine/schema/dictionary.js';
import { flattenEvent, newLeaves, type Leaves } from '../../../../engine/schema/flatten.js';
import { makeFragment, type Fragment } from '../../../../engine/schema/fragment.js';
import { LeafEncoder, viewLeaves } from '../../../../engine/schema/leaf-codec.js';

/** The events' leaves in one Leaves, and each event's [from, to). */
function leavesOf(events: readonly Record<string, unknown>[]): { leaves: Leaves; from: number[]; to: number[] } {
  const leaves = newLeaves();
  const from: number[] = [];
  const to: number[] = [];
  for (const event of events) {
    flattenEvent(event, leaves);
    from.push(leaves.start);
    to.push(leaves.count);
  }
  return { leaves, from, to };
}

/** observe() of events `which` (indices) in order, as the write path does without a view. */
function byObserve(dictionary: SchemaDictionary, events: readonly Record<string, unknown>[], which: readonly number[]): SchemaDictionary {
  const { leaves, from, to } = leavesOf(events);
  for (const e of which) {
    leaves.start = from[e];
    leaves.count = to[e];
    dictionary.observe(leaves);
  }
  return dictionary;
}

/** observeView() of the same events, from the batch's encoded leaves. */
function byView(dictionary: SchemaDictionary, events: readonly Record<string, unknown>[], which: readonly number[]): SchemaDictionary {
  const { leaves, from, to } = leavesOf(events);
  const view = viewLeaves(new LeafEncoder().encode(leaves, leaves.count));
  dictionary.observeView(view, which.map((e) => from[e]), which.map((e) => to[e]), which.length);
  return dictionary;
}

/** toJSON as ordered pairs: t.same alone does not compare key order. */
const entries = (dictionary: SchemaDictionary) => Object.entries(dictionary.toJSON());
const all = (events: readonly unknown[]) => events.map((_, e) => e);

t.test('observeView records the types observe records, in the same order', async (t) => {
  const events: Record<string, unknown>[] = [
    { late: null, n: 1, nested: { empty: {}, s: null }, svc: { addons: [{ name: 'svc:url_parser' }] } },
    { late: null, list: [null], nested: { s: 'text' }, flag: null },
    { late: 'now a string', n: 'a string after a number', flag: false, empty_list: [] },
    { late: 5, list: ['a'], svc: { location: { coordinates: [1.5, 2.5] } } },
    { only_null: null, n: null, geo_again: { coordinates: [1, 2] } },
  ];
  const expected = entries(byObserve(new SchemaDictionary(), events, all(events)));
  t.same(entries(byView(new SchemaDictionary(), events, all(events))), expected);
  t.same(expected, [
    ['svc.created_at', 'datetime'], ['svc.id', 'string'], ['svc.timestamp', 'datetime'],
    ['late', 'string'], ['n', 'num'], ['nested.s', 'string'], ['list', 'list'], ['flag', 'bool'],
    ['empty_list', 'list'], ['svc.location.coordinates', 'geo'], ['only_null', 'null'], ['geo_again.coordinates', 'list'],
  ], 'first non-null type wins, in first-seen order; structural paths are left out');
});

t.test('observeView of a record that keeps add-on results once records what observe of their leaves does', async (t) => {
  // Events as the fast batch reader gives them: own properties, then results given whole.
  const nullCity = makeFragment({ city: null, code: 1 });
  const city = makeFragment({ city: 'Lyon', code: 'FR' });
  const empty = makeFragment({});
  const events: [Record<string, unknown>, [string, Fragment][]][] = [
    [{ own: 1 }, [['geo', nullCity]]],
    [{ second: true, own: 2, 'geo.n': null }, [['agent', empty], ['geo', city]]],
    [{ own: 'x', 'agent.seen': 'first as a string' }, [['geo', nullCity], ['again', city]]],
    [{ own: 3 }, [['agent', makeFragment({ seen: 7, n: true })], ['geo', city]]],
    [{}, [['again', nullCity]]],
  ];
  const given = newLeaves();
  const whole: Record<string, unknown>[] = [];
  const from: number[] = [];
  const to: number[] = [];
  let hidden = 0;
  for (const [own, results] of events) {
    from.push(given.count + hidden);
    for (const [path, value] of Object.entries(own)) {
      given.paths[given.count] = path;
      given.values[given.count++] = value;
    }
    for (const [name, fragment] of results) {
      given.paths[given.count] = name;
      given.values[given.count++] = fragment;
      hidden += fragment.leafPaths.length - 1;
    }
    to.push(given.count + hidden);
    whole.push({ ...own, ...Object.fromEntries(results.map(([name, fragment]) => [name, fragment.value])) });
  }
  const view = viewLeaves(new LeafEncoder().encode(given, given.count));
  t.ok(view.compact, 'the record has a fragment table');
  for (const which of [all(events), [1, 2, 3], [0, 4], [2], [3, 4], []]) {
    const expected = entries(byObserve(new SchemaDictionary(), whole, which));
    const viewed = new SchemaDictionary();
    viewed.observeView(view, which.map((e) => from[e]), which.map((e) => to[e]), which.length);
    t.same(entries(viewed), expected, `events ${which.join(', ') || 'none'}`);
  }
});

t.test('observeView over a dictionary that already knows some paths, and over some of the events', async (t) => {
  const initial: Record<string, SchemaType> = { known: 'num', was_null: 'null', 'svc.id': 'string', other: 'string' };
  const events: Record<string, unknown>[] = [
    { known: 'a string now', was_null: null, fresh: null },
    { was_null: [1, 2], fresh: 'x', skipped: 1 },
    { fresh: 2, skipped: 'y', other: null },
    { was_null: 'late', last: true },
  ];
  for (const which of [all(events), [0, 2], [1, 3], [3], []]) {
    const expected = entries(byObserve(new SchemaDictionary(initial), events, which));
    t.same(entries(byView(new SchemaDictionary(initial), events, which)), expected, `events ${which.join(', ') || 'none'}`);
  }
  t.same(entries(byView(new SchemaDictionary(initial), events, [0, 2])).slice(3), [
    ['known', 'num'], ['was_null', 'null'], ['other', 'string'], ['fresh', 'num'], ['skipped', 'string'],
  ], 'events 0 and 2 only: event 1\'s types are not taken');
  // Every path known with a type: nothing to do, nothing changes.
  const full = new SchemaDictionary({ a: 'num', b: 'string' });
  byView(full, [{ a: 'x', b: 1 }, { b: null }], [0, 1]);
  t.same(entries(full).slice(3), [['a', 'num'], ['b', 'string']]);
});

t.test('on generated batches observeView and observe agree', async (t) => {
  const random = mulberry32(5);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const values = [null, null, 1, -0, 'text', true, false, [1, null], ['a'], [], {}, { coordinates: [1, 2] }, { x: null, y: 'y' }];
  let rounds = 0;
  for (let round = 0; round < 200; round++) {
    const events = Array.from({ length: 1 + Math.floor(random() * 12) }, () => {
      const event: Record<string, unknown> = {};
      for (let k = 0; k < 6; k++) if (random() < 0.5) event[pick(['a', 'b', 'c', 'd', 'e', 'f', 'g'])] = pick(values);
      if (random() < 0.2) event.svc = pick([{ location: { coordinates: [3, 4] } }, { addons: [] }]);
      return event;
    });
    const initial: Record<string, SchemaType> = random() < 0.5 ? {} : { b: 'null', d: 'string', 'svc.location.coordinates': 'null' };
    const which = all(events).filter(() => random() < 0.8);
    const expected = entries(byObserve(new SchemaDictionary(initial), events, which));
    const got = entries(byView(new SchemaDictionary(initial), events, which));
    if (JSON.stringify(got) !== JSON.stringify(expected)) t.same(got, expected, `round ${round}: ${JSON.stringify(events)}`);
    else rounds++;
  }
  t.equal(rounds, 200, 'every round agreed');
});

/** A dictionary holding `size` paths p0 … (one of them known only as null). */
function dictionaryOf(size: number): SchemaDictionary {
  const initial: Record<string, SchemaType> = {};
  for (let i = 0; i < size; i++) initial[`p${i}`] = i === 0 ? 'null' : 'num';
  return new SchemaDictionary(initial);
}

/** Whether check() passes one event holding every one of `paths`. */
function checks(dictionary: SchemaDictionary, paths: readonly string[]): boolean {
  const leaves = newLeaves();
  for (const path of paths) {
    leaves.paths[leaves.count] = path;
    leaves.values[leaves.count++] = path.endsWith('.') ? '{}' : 1;
  }
  try {
    dictionary.check(leaves);
    return true;
  } catch (error) {
    if (isApiError(error) && error.error_code === 'TooManyPropertiesError') return false;
    throw error;
  }
}

t.test('fits: every new non-structural path fits under the limit at once', async (t) => {
  const max = COLLECTION_PROPERTIES_MAX;
  const near = dictionaryOf(max - 2);
  t.equal(near.size, max - 2);
  t.ok(near.fits(['new1', 'new2']), 'two new paths reach the limit: they fit');
  t.notOk(near.fits(['new1', 'new2', 'new3']), 'three do not');
  t.ok(near.fits(['p0', 'p1', 'p500', 'new1', 'new2']), 'known paths, null-typed ones included, do not count');
  t.ok(near.fits(['new1', 'a.', 'svc.addons.', 'new2', 'b.c.']), 'structural paths do not count');
  t.notOk(near.fits(['a.', 'new1', 'new2', 'new3', 'b.']), 'structural paths do not help either');
  t.ok(near.fits([]), 'nothing new fits');
  const full = dictionaryOf(max);
  t.ok(full.fits(['p0', 'p1', `p${max - 1}`, 'x.']), 'a full dictionary takes paths it knows');
  t.notOk(full.fits(['p1', 'new']), 'but not one more');
  // Past the limit (a dictionary from an older, larger bound): nothing new, and known paths still fit.
  const over = dictionaryOf(max + 5);
  t.ok(over.fits(['p1', 'p2']));
  t.notOk(over.fits(['new']));
});

t.test('fits is true exactly when check() passes the batch\'s paths, whatever the size', async (t) => {
  const random = mulberry32(9);
  const max = COLLECTION_PROPERTIES_MAX;
  let agreed = 0;
  let fitting = 0;
  const rounds = 300;
  for (let round = 0; round < rounds; round++) {
    const size = max - Math.floor(random() * 8);
    const dictionary = dictionaryOf(size);
    const paths = new Set<string>();
    const count = Math.floor(random() * 12);
    while (paths.size < count) {
      const roll = random();
      paths.add(roll < 0.3 ? `p${Math.floor(random() * size)}` : roll < 0.5 ? `s${Math.floor(random() * 5)}.` : `new${Math.floor(random() * 20)}`);
    }
    const list = [...paths];
    const added = list.filter((path) => !path.startsWith('p') && !path.endsWith('.')).length;
    const fits = dictionary.fits(list);
    if (fits === (added === 0 || size + added <= max) && fits === checks(dictionary, list)) agreed++;
    else t.fail(`round ${round}: size ${size}, paths ${list.join(' ')}: fits ${fits}, check ${checks(dictionary, list)}`);
    if (fits) fitting++;
  }
  t.equal(agreed, rounds, 'fits agreed with the count and with check() in every round');
  t.ok(fitting > rounds / 5 && fitting < rounds - rounds / 5, `both answers came up (${fitting} fitted)`);
});

t.test('when fits says yes, observeView takes the batch past no limit check() would have refused', async (t) => {
  const max = COLLECTION_PROPERTIES_MAX;
  const events = [{ new1: 1 }, { new2: 'x', p3: 4 }, { new1: null, empty: {} }];
  const { leaves } = leavesOf(events);
  const view = viewLeaves(new LeafEncoder().encode(leaves, leaves.count));
  const near = dictionaryOf(max - 2);
  t.ok(near.fits(view.paths), 'the batch fits');
  byView(near, events, all(events));
  t.equal(near.size, max, 'the dictionary is at the limit, not past it');
  t.same(entries(near).slice(-2), [['new1', 'num'], ['new2', 'string']]);
  t.notOk(dictionaryOf(max - 1).fits(view.paths), 'one path fewer of room: it does not');
});
