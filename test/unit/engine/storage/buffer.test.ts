import t, { type Test } from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { makeFragment, type Fragment } from '../../../../engine/schema/fragment.js';
import { flattenEvent, newLeaves } from '../../../../engine/schema/flatten.js';
import { LeafEncoder, viewLeaves } from '../../../../engine/schema/leaf-codec.js';
import { WriteBuffer, newViewCache } from '../../../../engine/storage/buffer.js';
import { TAG_BOOL, TAG_LIST, TAG_NUM, TAG_STR, type ColumnChunk } from '../../../../engine/storage/chunk.js';
import { EventBuilder } from '../../../../engine/storage/event-json.js';

/** Appends an event as row `seq`. */
function add(buffer: WriteBuffer, seq: number, event: Record<string, unknown>): void {
  const leaves = newLeaves();
  flattenEvent(event, leaves);
  buffer.append(1_000 + seq, 2_000 + seq, seq, leaves, 0, leaves.count);
}

/** The chunk's rows read back: seq, the event rebuilt from its columns (without svc), and each present column's value. */
function rows(chunk: ColumnChunk): { seq: number; ts: number; event: Record<string, unknown>; values: Record<string, unknown> }[] {
  const builder = new EventBuilder(chunk, 0);
  const out = [];
  for (let row = 0; row < chunk.rows; row++) {
    const values: Record<string, unknown> = {};
    for (const column of chunk.columns.values()) {
      switch (column.tags[row]) {
        case TAG_NUM: values[column.path] = column.num![row]; break;
        case TAG_BOOL: values[column.path] = column.num![row] === 1; break;
        case TAG_STR: values[column.path] = column.dict![column.str![row]]; break;
        case TAG_LIST: values[column.path] = column.lists![row]; break;
        case 0: break;
        default: values[column.path] = null;
      }
    }
    const { svc: _svc, ...event } = builder.event(row);
    out.push({ seq: chunk.seq[row], ts: chunk.ts[row], event, values });
  }
  return out;
}

const event = (i: number): Record<string, unknown> => i % 3 === 0
  ? { n: i, s: `s${i % 5}`, nested: { b: i % 2 === 0, l: [i, 'x'] } }
  : { n: i, other: `o${i}`, empty: null };

t.test('after a flush the buffer keeps exactly the later rows, in memory it writes over', async (t) => {
  const buffer = new WriteBuffer();
  const expected = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    const e = event(i);
    const values: Record<string, unknown> = i % 3 === 0
      ? { n: i, s: `s${i % 5}`, 'nested.b': i % 2 === 0, 'nested.l': [i, 'x'] }
      : { n: i, other: `o${i}`, empty: null };
    return { seq: i, ts: 1_000 + i, event: e, values };
  });
  for (let i = 0; i < 3_000; i++) add(buffer, i, event(i));
  t.same(rows(buffer.snapshot()), expected(0, 3_000), 'all rows before the flush');
  const kept = buffer.dropPrefix(2_500);
  t.equal(kept, buffer, 'the same buffer, emptied and refilled');
  t.equal(buffer.rows, 500);
  t.equal(buffer.firstSeq, 2_500);
  t.same(rows(buffer.snapshot()), expected(2_500, 3_000), 'the rows after the flushed ones');
  for (let i = 3_000; i < 3_100; i++) add(buffer, i, i % 2 === 0 ? { fresh: i } : event(i));
  const after = rows(buffer.snapshot());
  t.equal(after.length, 600);
  t.same(after[after.length - 2], { seq: 3_098, ts: 4_098, event: { fresh: 3_098 }, values: { fresh: 3_098 } },
    'a row with a new column has no value from an older row in its other columns');
  t.same(after.slice(0, 500), expected(2_500, 3_000), 'earlier rows unchanged');
  t.equal(buffer.tsMin, 3_500);
  t.equal(buffer.tsMax, 4_099);
});

t.test('columns that no kept row uses are gone after a flush, and come back empty', async (t) => {
  const buffer = new WriteBuffer();
  add(buffer, 0, { only_first: 'x', n: 1 });
  add(buffer, 1, { n: 2 });
  buffer.dropPrefix(1);
  t.same([...buffer.snapshot().columns.keys()], ['n'], 'only the kept row\'s column');
  add(buffer, 2, { n: 3 });
  add(buffer, 3, { only_first: 'y' });
  const chunk = buffer.snapshot();
  t.same(rows(chunk).map((r) => r.values), [{ n: 2 }, { n: 3 }, { only_first: 'y' }]);
  t.same(chunk.columns.get('only_first')!.dict, ['y'], 'its dictionary starts over');
});

t.test('a flush of every row empties the buffer; trim lets an empty buffer\'s memory go', async (t) => {
  const buffer = new WriteBuffer();
  for (let i = 0; i < 5_000; i++) add(buffer, i, event(i));
  buffer.dropPrefix(5_000);
  t.equal(buffer.rows, 0);
  t.equal(buffer.snapshot().rows, 0);
  t.ok(buffer.trim() >= 5_000, 'trim reports the rows of capacity it let go');
  t.equal(buffer.trim(), 0, 'nothing more to let go');
  add(buffer, 5_000, event(5_000));
  t.same(rows(buffer.snapshot()).map((r) => r.seq), [5_000], 'usable after trim');
  t.equal(buffer.trim(), 0);
  t.equal(buffer.rows, 1, 'trim keeps a buffer that holds rows');
});

t.test('after a flush a column\'s members are null until a row uses them again (chunk.ts)', async (t) => {
  const buffer = new WriteBuffer();
  add(buffer, 0, { v: 'text' });
  add(buffer, 1, { v: [1, 2] });
  buffer.dropPrefix(2);
  add(buffer, 2, { v: 7 });
  const column = buffer.snapshot().columns.get('v')!;
  t.same({ num: column.num !== null, str: column.str, dict: column.dict, lists: column.lists },
    { num: true, str: null, dict: null, lists: null });
  add(buffer, 3, { v: 'again' });
  t.same(rows(buffer.snapshot()).map((r) => r.values), [{ v: 7 }, { v: 'again' }], 'the string member comes back');
});

t.test('a column of near-unique strings stops interning: every value reads back, a repeat gets a code of its own', async (t) => {
  const buffer = new WriteBuffer();
  // 5,000 distinct ids, then ids seen before; beside them a column of three values.
  const idOf = (i: number) => `id-${i < 5_000 ? i : i - 5_000}`;
  for (let i = 0; i < 6_000; i++) add(buffer, i, { id: idOf(i), kind: `k${i % 3}` });
  const chunk = buffer.snapshot();
  const id = chunk.columns.get('id')!;
  const kind = chunk.columns.get('kind')!;
  t.equal(id.repeats, true, 'the id column says its dictionary may repeat');
  t.equal(id.dict!.length, 6_000, 'past the check, every string is appended as it comes');
  t.equal(new Set(id.dict).size, 5_000);
  t.equal(kind.repeats, undefined, 'a column of few values stays interned');
  t.same(kind.dict, ['k0', 'k1', 'k2']);
  t.same(rows(chunk).map((row) => row.values), Array.from({ length: 6_000 }, (_, i) => ({ id: idOf(i), kind: `k${i % 3}` })));

  // Rows kept by a flush are appended again: the check starts over, so few of them intern.
  buffer.dropPrefix(5_990);
  const kept = buffer.snapshot().columns.get('id')!;
  t.equal(kept.repeats, undefined, '10 kept rows are interned again');
  t.same(kept.dict, Array.from({ length: 10 }, (_, k) => idOf(5_990 + k)));
});

t.test('a column whose strings repeat enough keeps interning past the check', async (t) => {
  const buffer = new WriteBuffer();
  for (let i = 0; i < 10_000; i++) add(buffer, i, { user: `u${i % 1_500}` });
  const column = buffer.snapshot().columns.get('user')!;
  t.equal(column.repeats, undefined);
  t.equal(column.dict!.length, 1_500, 'each string once');
});

// ---------------------------------------------------------------------------------------------
// appendView (rows from a prepared batch's encoded leaves) against append (rows from leaves), and
// dropPrefix against a fresh buffer given only the kept rows.

/** Numbers as text that tells -0 from 0; lists item by item. */
function exact(value: unknown): unknown {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : value;
  return Array.isArray(value) ? value.map(exact) : value;
}

/** What a chunk holds, read through its tags: per path (sorted) each row's tag and value. */
function cells(chunk: ColumnChunk) {
  const columns: Record<string, [number, unknown][]> = {};
  for (const path of [...chunk.columns.keys()].sort()) {
    const column = chunk.columns.get(path)!;
    columns[path] = Array.from(column.tags.subarray(0, chunk.rows), (tag, row) => {
      switch (tag) {
        case TAG_NUM: return [tag, exact(column.num![row])];
        case TAG_BOOL: return [tag, column.num![row] === 1 ? true : column.num![row] === 0 ? false : `bool ${column.num![row]}`];
        case TAG_STR: return [tag, column.dict![column.str![row]]];
        case TAG_LIST: return [tag, exact(column.lists![row])];
        default: return [tag, null];
      }
    });
  }
  return { rows: chunk.rows, ts: [...chunk.ts], createdAt: [...chunk.createdAt], seq: [...chunk.seq], columns };
}

/** Which members of each column are there (chunk.ts: null when no row of the chunk uses it), and repeats. */
function members(chunk: ColumnChunk) {
  return Object.fromEntries([...chunk.columns.values()].map((column) => [column.path, {
    num: column.num !== null, str: column.str !== null, dict: column.dict !== null, lists: column.lists !== null,
    repeats: column.repeats === true,
  }]));
}

/** t.same for large chunks: tap's deep comparison is slow, so it runs only to show a difference. */
function sameCells(t: Test, got: ColumnChunk, expected: ColumnChunk, what: string): void {
  const [a, b] = [cells(got), cells(expected)];
  if (JSON.stringify(a) === JSON.stringify(b)) t.pass(what);
  else t.strictSame(a, b, what); // strict: loosely, the text "-0" equals 0
}

interface Row {
  readonly seq: number;
  readonly event: Record<string, unknown>;
}

const rowsOf = (events: Record<string, unknown>[], firstSeq = 0): Row[] => events.map((event, i) => ({ seq: firstSeq + i, event }));
const tsOf = (seq: number) => 1_000 + (seq * 7_919) % 5_000; // out of order, as clients send them

function appendRows(buffer: WriteBuffer, rows: readonly Row[]): WriteBuffer {
  for (const { seq, event } of rows) {
    const leaves = newLeaves();
    flattenEvent(event, leaves);
    buffer.append(tsOf(seq), 2_000 + seq, seq, leaves, 0, leaves.count);
  }
  return buffer;
}

/** Appends `rows` as batches of `sizes` (cycled): each batch encoded once, viewed once, with one cache. */
function appendViews(buffer: WriteBuffer, rows: readonly Row[], sizes: readonly number[] = [rows.length]): WriteBuffer {
  appendBatches([buffer], rows, sizes);
  return buffer;
}

/**
 * Appends `rows` as batches of `sizes` (cycled), each encoded once and viewed once. A row's
 * `results` follow its own leaves as the fast batch reader gives them (one leaf each, the result
 * its value), so the record keeps them in its fragment table. Rows go to `buffers` in turn (one
 * store each, with its own cache, as a batch spans collections); rows for which `refused` is true
 * are in the record but not applied.
 */
function appendBatches(
  buffers: readonly WriteBuffer[], rows: readonly (Row & { readonly results?: ResultRow['results'] })[],
  sizes: readonly number[], refused = (_seq: number) => false,
): void {
  const encoder = new LeafEncoder();
  for (let at = 0, batch = 0; at < rows.length; batch++) {
    const batchRows = rows.slice(at, at + sizes[batch % sizes.length]);
    at += batchRows.length;
    const leaves = newLeaves();
    const ranges: [number, number][] = [];
    let hidden = 0;
    for (const { event, results = [] } of batchRows) {
      const from = leaves.count + hidden;
      flattenEvent(event, leaves);
      for (const [name, fragment] of results) {
        leaves.paths[leaves.count] = name;
        leaves.values[leaves.count++] = fragment;
        hidden += fragment.leafPaths.length - 1;
      }
      ranges.push([from, leaves.count + hidden]);
    }
    const view = viewLeaves(encoder.encode(leaves, leaves.count));
    const caches = buffers.map(() => newViewCache(view));
    batchRows.forEach(({ seq }, i) => {
      if (refused(seq)) return;
      const b = seq % buffers.length;
      buffers[b].appendView(tsOf(seq), 2_000 + seq, seq, view, ranges[i][0], ranges[i][1], caches[b]);
    });
  }
}

/**
 * Events with every kind of leaf at shifting paths: one string at several paths in one event and
 * across events, a path whose type changes from row to row, lists, nulls, structural leaves,
 * paths that come and go, and `id`, a column of near-unique strings that repeat within a batch.
 */
function variedEvents(count: number, seed: number): Record<string, unknown>[] {
  const random = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const shared = ['red', 'green', 'blue', '', 'ünïcødé 😀', 'x'.repeat(300)];
  return Array.from({ length: count }, (_, i) => {
    const event: Record<string, unknown> = { id: `id-${i % 3 === 0 && i > 0 ? i - 1 : i}` };
    if (random() < 0.8) event.a = pick(shared);
    if (random() < 0.6) event.b = pick(shared);
    if (random() < 0.5) event.nested = { c: pick(shared), d: pick([1, -0, 0, 2.5, -1e300, true, false, null]) };
    if (random() < 0.4) event.shifting = pick([pick(shared), i, -0, true, false, null, [i, null], ['s', pick(shared)], [true], []]);
    if (random() < 0.3) event.tags = pick([['a', 'b'], ['b', null], [], null]);
    if (random() < 0.1) event.empty = {};
    if (random() < 0.05) event[`rare${i % 7}`] = i % 2 === 0 ? pick(shared) : i;
    if (i % 10 === 0) event.kind = `k${i % 3}`;
    return event;
  });
}

t.test('appendView gives the snapshot append gives', async (t) => {
  const rows = rowsOf(variedEvents(6_000, 1));
  const appended = appendRows(new WriteBuffer(), rows).snapshot();
  const cases: [string, WriteBuffer][] = [
    ['one batch', appendViews(new WriteBuffer(), rows)],
    ['batches of varied sizes', appendViews(new WriteBuffer(), rows, [1, 500, 37, 2_000, 3])],
    ['batches of one row', appendViews(new WriteBuffer(), rows, [1])],
  ];
  // Batches through append and appendView in turn, in one buffer.
  const mixed = new WriteBuffer();
  for (let at = 0, k = 0; at < rows.length; at += 700, k++) {
    const batch = rows.slice(at, at + 700);
    if (k % 2 === 0) appendViews(mixed, batch, [300]);
    else appendRows(mixed, batch);
  }
  cases.push(['append and appendView in turn', mixed]);
  const expected = cells(appended);
  t.ok(expected.columns.id.every(([tag]) => tag === TAG_STR), 'every row has an id');
  t.equal(appended.columns.get('id')!.repeats, true, 'the id column switched to repeats');
  t.equal(appended.columns.get('a')!.repeats, undefined, 'a column of few values did not');
  for (const [what, buffer] of cases) {
    const chunk = buffer.snapshot();
    sameCells(t, chunk, appended, `${what}: the same rows, columns and values`);
    t.same(members(chunk), members(appended), `${what}: the same members, and the same columns in repeats`);
    t.same([...chunk.columns.keys()], [...appended.columns.keys()], `${what}: columns in the order first seen`);
    t.same([buffer.rows, buffer.tsMin, buffer.tsMax, buffer.firstSeq, buffer.lastSeq],
      [6_000, Math.min(...expected.ts), Math.max(...expected.ts), 0, 5_999], `${what}: rows, times and seqs`);
  }
});

t.test('appendView: one string at two paths, and strings that a column codes differently', async (t) => {
  // The view's string table holds "same" once; each column must code it in its own dictionary.
  const events = [
    { a: 'same', b: 'same' }, { b: 'same', a: 'other' }, { a: 'same' }, { b: 'other', a: 'same' },
    { c: ['same'], a: 'same' }, { a: '["same"]', b: 'same' },
  ];
  const appended = appendRows(new WriteBuffer(), [...rowsOf([{ b: 'first' }], 0), ...rowsOf(events, 1)]).snapshot();
  // The buffer already holds a row, so b's dictionary codes differ from a's.
  const viewed = appendViews(appendRows(new WriteBuffer(), rowsOf([{ b: 'first' }], 0)), rowsOf(events, 1)).snapshot();
  t.same(cells(viewed), cells(appended));
  t.same(cells(viewed).columns.b.map(([, value]) => value), ['first', 'same', 'same', null, 'other', null, 'same']);
  t.same(viewed.columns.get('b')!.dict, ['first', 'same', 'other'], 'b\'s dictionary, each string once');
  t.same(viewed.columns.get('a')!.dict, ['same', 'other', '["same"]'], 'a\'s dictionary, each string once');
});

t.test('appendView: a column crosses the uniqueness check in the middle of a batch', async (t) => {
  // 4,096 strings into one column: the check falls on a row whose string the batch coded before.
  const events = Array.from({ length: 4_200 }, (_, i) => ({ id: `u${i === 4_095 ? 4_094 : i}`, n: i }));
  const rows = rowsOf(events);
  const appended = appendRows(new WriteBuffer(), rows).snapshot();
  for (const sizes of [[4_200], [4_090, 110], [1]]) {
    const viewed = appendViews(new WriteBuffer(), rows, sizes).snapshot();
    sameCells(t, viewed, appended, `batches of ${sizes.join(', ')}`);
    t.equal(viewed.columns.get('id')!.repeats, true, `batches of ${sizes.join(', ')}: repeats, as with append`);
  }
});

// Rows whose add-on results the record keeps once (LeafView.compact), as the fast batch reader
// gives them: each result is one leaf whose value is the result, after the event's own leaves.

interface ResultRow extends Row {
  readonly results: readonly (readonly [string, Fragment])[];
}

/** The event a row's leaves stand for: its own properties, then each result under its name. */
function whole({ event, results }: ResultRow): Record<string, unknown> {
  const out: Record<string, unknown> = { ...event };
  for (const [name, fragment] of results) out[name] = fragment.value;
  return out;
}

t.test('appendView: add-on results the record keeps once give the rows their leaves give', async (t) => {
  const places = Array.from({ length: 40 }, (_, k) => makeFragment({
    city: k % 9 === 0 ? null : `city ${k % 13}`, country: ['FR', 'DE', 'ünï 😀'][k % 3], latitude: k === 0 ? -0 : k / 3,
    coordinates: [k, k + 0.5], in_eu: k % 2 === 0, nested: { deep: { code: k } },
  }));
  const agents = [
    makeFragment({ browser: { family: 'Chrome', major: '120', minor: null }, bot: false }),
    makeFragment({ browser: { family: 'Safari', major: 17 }, bot: true, tags: [] }),
    makeFragment({}),
  ];
  // One result per row whose strings are all new: the column crosses the uniqueness check on a
  // row that reuses an earlier result, so it switches to repeats as append would.
  const ids = Array.from({ length: 3_000 }, (_, k) => makeFragment({ id: `r${k}`, n: k }));
  const rows: ResultRow[] = variedEvents(6_000, 4).map((event, i) => ({
    seq: i, event,
    results: [
      ['geo', places[(i * 7) % places.length]],
      ...(i % 3 === 0 ? [['agent', agents[i % agents.length]] as const] : []),
      ['ids', ids[i % ids.length]],
      ...(i % 11 === 0 ? [['geo_again', places[(i * 7) % places.length]] as const] : []), // one result, two names
    ],
  }));
  const expectedOf = (kept: readonly ResultRow[]) => appendRows(new WriteBuffer(), kept.map((row) => ({ seq: row.seq, event: whole(row) })));
  const expected = expectedOf(rows).snapshot();
  t.equal(expected.columns.get('ids.id')!.repeats, true, 'the results\' id column switched to repeats');
  for (const sizes of [[6_000], [1, 500, 37, 2_000, 3], [1]]) {
    const buffer = new WriteBuffer();
    appendBatches([buffer], rows, sizes);
    const chunk = buffer.snapshot();
    sameCells(t, chunk, expected, `batches of ${sizes.join(', ')}: the same rows, columns and values`);
    t.same(members(chunk), members(expected), `batches of ${sizes.join(', ')}: the same members, and repeats`);
  }
  // Two stores in one batch, their rows interleaved, and rows refused between applied ones.
  const refused = (seq: number) => seq % 5 === 1 || (seq >= 700 && seq < 760);
  const buffers = [new WriteBuffer(), new WriteBuffer()];
  appendBatches(buffers, rows, [1_000, 333], refused);
  for (const [b, buffer] of buffers.entries()) {
    const kept = rows.filter(({ seq }) => seq % 2 === b && !refused(seq));
    sameCells(t, buffer.snapshot(), expectedOf(kept).snapshot(), `store ${b} of two, with refused rows: its rows`);
  }
});

t.test('after dropPrefix the kept rows are what a fresh buffer given only them holds', async (t) => {
  const events = variedEvents(6_000, 2);
  const more = variedEvents(300, 3).map((event, i) => i % 4 === 0 ? { fresh: i, rare0: 'back' } : event);
  for (const drop of [0, 1, 2, 2_500, 4_095, 5_990, 5_999]) {
    for (const how of ['append', 'appendView'] as const) {
      const rows = rowsOf(events);
      const buffer = how === 'append' ? appendRows(new WriteBuffer(), rows) : appendViews(new WriteBuffer(), rows, [1_000]);
      buffer.snapshot(); // a cached snapshot must not outlive the drop
      t.equal(buffer.dropPrefix(drop), buffer, `${how}, drop ${drop}: the same buffer`);
      const fresh = appendRows(new WriteBuffer(), rows.slice(drop));
      const what = `${how}, drop ${drop}`;
      sameCells(t, buffer.snapshot(), fresh.snapshot(), `${what}: the kept rows`);
      t.same([buffer.rows, buffer.tsMin, buffer.tsMax, buffer.firstSeq, buffer.lastSeq],
        [fresh.rows, fresh.tsMin, fresh.tsMax, fresh.firstSeq, fresh.lastSeq], `${what}: rows, times and seqs`);
      // More rows afterwards: new paths, paths only dropped rows had, types that change.
      const next = rowsOf(more, 6_000);
      appendRows(buffer, next.slice(0, 150));
      appendViews(buffer, next.slice(150), [40]);
      appendRows(fresh, next);
      sameCells(t, buffer.snapshot(), fresh.snapshot(), `${what}: and the rows appended after`);
      t.same([buffer.rows, buffer.tsMin, buffer.tsMax, buffer.lastSeq], [fresh.rows, fresh.tsMin, fresh.tsMax, fresh.lastSeq],
        `${what}: rows, times and seqs after`);
      // A second flush of the same buffer.
      buffer.dropPrefix(100);
      sameCells(t, buffer.snapshot(), appendRows(new WriteBuffer(), [...rows, ...next].slice(drop + 100)).snapshot(),
        `${what}: after a second drop`);
    }
  }
});

t.test('detachedSnapshotInSteps holds the rows there were when it began, while rows are appended', async (t) => {
  const rows = rowsOf(variedEvents(60_000, 9).map((event, i) => ({ ...event, ...Object.fromEntries(
    Array.from({ length: 20 }, (_, c) => [`c${c}`, i % (c + 2) === 0 ? `v${i % 7}` : i * c])) })));
  const buffer = appendRows(new WriteBuffer(), rows.slice(0, 50_000));
  const expected = appendRows(new WriteBuffer(), rows.slice(0, 50_000)).snapshot();
  // Rows (some with new paths) appended on each turn of the event loop the copy gives up.
  let next = 50_000;
  let turns = 0;
  const appendMore = () => {
    if (next >= rows.length) return;
    turns++;
    appendRows(buffer, rows.slice(next, next += 1_000));
    add(buffer, next++, { appended_meanwhile: next });
    setImmediate(appendMore);
  };
  setImmediate(appendMore);
  const chunk = await buffer.detachedSnapshotInSteps();
  t.ok(turns > 0, `rows were appended on ${turns} turns during the copy`);
  t.ok(buffer.rows > 50_000, 'the buffer has the rows appended meanwhile');
  sameCells(t, chunk, expected, 'the chunk holds the first 50,000 rows as they were');
  t.notOk(chunk.columns.has('appended_meanwhile'), 'no column only later rows have');
  t.ok([...chunk.columns.values()].every((column) => column.tags.length === 50_000), 'every column has those rows alone');
  // A cached snapshot may be held by a scan (scanSource) not yet posted to a query worker: the
  // flush gets a copy of its own, whose buffers it transfers, and the scan's stay whole.
  while (next < rows.length) await new Promise((resolve) => setImmediate(resolve));
  const cached = buffer.snapshot();
  const detached = await buffer.detachedSnapshotInSteps();
  t.not(detached, cached, 'a copy, not the cached snapshot');
  const transfer = [detached.ts, detached.createdAt, detached.seq, ...[...detached.columns.values()].map((c) => c.tags)]
    .map((array) => array.buffer as ArrayBuffer);
  structuredClone(detached, { transfer: [...new Set(transfer)] });
  t.equal(cached.ts.length, buffer.rows, 'the cached snapshot is intact after the copy went to another thread');
  t.doesNotThrow(() => structuredClone(cached), 'and can still be posted to a query worker');
  t.equal(buffer.snapshot(), cached, 'the buffer goes on handing it out until the next append');
});

t.test('after dropPrefix every kind of value and a missing one come back', async (t) => {
  const events = [
    { s: 'drop me', n: 1, b: true, l: [1], z: null, gone: 'x' },
    { s: 'kept', n: -0, b: false, l: ['a', null], z: null },
    { n: 2.5, l: [], other: 'o' },
    { s: 'kept', b: true, l: [true, false], z: 'not null now', e: {} },
    {},
    { s: '', n: -1e300, l: null },
  ];
  const buffer = appendRows(new WriteBuffer(), rowsOf(events));
  buffer.dropPrefix(1);
  const kept = buffer.snapshot();
  const fresh = appendRows(new WriteBuffer(), rowsOf(events).slice(1)).snapshot();
  t.same(cells(kept), cells(fresh));
  t.same(cells(kept).columns.s, [[TAG_STR, 'kept'], [0, null], [TAG_STR, 'kept'], [0, null], [TAG_STR, '']]);
  t.same(cells(kept).columns.n, [[TAG_NUM, '-0'], [TAG_NUM, 2.5], [0, null], [0, null], [TAG_NUM, -1e300]]);
  t.same(cells(kept).columns.l.map(([, value]) => value), [['a', null], [], [true, false], null, null]);
  t.notOk(kept.columns.has('gone'), 'a column only dropped rows used is gone');
  t.same(members(kept), members(fresh), 'members that no kept row uses are null (chunk.ts)');
});
