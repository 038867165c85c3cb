import t from 'tap';
import { flattenEvent, newLeaves } from '../schema/flatten.js';
import { WriteBuffer } from './buffer.js';
import { TAG_BOOL, TAG_LIST, TAG_NUM, TAG_STR, type ColumnChunk } from './chunk.js';
import { EventBuilder } from './event-json.js';

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
