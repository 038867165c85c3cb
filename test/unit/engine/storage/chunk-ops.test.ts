/**
 * Flushes and merges copy rows with chunk-ops.ts: every row's value must come through a gather, a
 * concatenation and an interning of repeated strings unchanged, and each result's dictionary must
 * hold each string once and only the strings its rows use. Checked on seeded random rows of every
 * kind (numbers, strings, booleans, nulls, lists, missing paths, mixed kinds in one path).
 */
import t, { type Test } from 'tap';
import { TAG_STR, type Column, type ColumnChunk, type Primitive } from '../../../../engine/storage/chunk.js';
import { concatChunks, gatherChunk, internRepeats } from '../../../../engine/storage/chunk-ops.js';
import { StringInterner } from '../../../../engine/storage/string-interner.js';
import { mulberry32 } from '../../../helpers/random.js';
import { buildChunk, valueAt, type TestRow, type TestValue } from '../../../helpers/test-chunk.js';

function randomRows(seed: number, count: number, firstTs: number): TestRow[] {
  const random = mulberry32(seed);
  const pick = (): TestValue => {
    const kind = Math.floor(random() * 7);
    if (kind === 0) return undefined;
    if (kind === 1) return null;
    if (kind === 2) return Math.round(random() * 1e6) / 100;
    if (kind === 3) return random() < 0.5;
    if (kind === 4) return [Math.floor(random() * 3), 'x'] as Primitive[];
    return `v${Math.floor(random() ** 2 * 500)}${random() < 0.05 ? 'é€' : ''}`;
  };
  return Array.from({ length: count }, (_, i) => ({
    ts: firstTs + i,
    props: {
      mixed: pick(),
      id: random() < 0.9 ? `id-${Math.floor(random() * count * 4)}` : undefined,
      n: random() < 0.8 ? Math.floor(random() * 100) : undefined,
      ...(random() < 0.1 && { rare: `r${Math.floor(random() * 3)}` }),
    },
  }));
}

/** Row `row` of `chunk` as plain values, by path (missing paths left out). */
function rowOf(chunk: ColumnChunk, row: number): Record<string, TestValue> {
  const out: Record<string, TestValue> = {};
  for (const [path, column] of chunk.columns) {
    const value = valueAt(column, row);
    if (value !== undefined) out[path] = value;
  }
  return { ...out, ts: chunk.ts[row], seq: chunk.seq[row], createdAt: chunk.createdAt[row] };
}

/** Each string once, and each one used by some row. */
function dictionaryIsCompact(t: Test, column: Column, rows: number): void {
  if (column.dict === null) return;
  t.equal(new Set(column.dict).size, column.dict.length, `${column.path}: no string twice`);
  const used = new Set<number>();
  for (let row = 0; row < rows; row++) if (column.tags[row] === TAG_STR) used.add(column.str![row]);
  t.equal(used.size, column.dict.length, `${column.path}: every entry used`);
}

t.test('concatenating and gathering keep every row and make compact dictionaries', async (t) => {
  const chunks = [buildChunk(randomRows(1, 3000, 0), 1), buildChunk(randomRows(2, 2500, 5000), 10_000),
    buildChunk(randomRows(3, 10, 9000), 20_000)];
  const merged = concatChunks(chunks);
  const expected = chunks.flatMap((chunk) => Array.from({ length: chunk.rows }, (_, row) => rowOf(chunk, row)));
  t.equal(merged.rows, expected.length);
  t.same(Array.from({ length: merged.rows }, (_, row) => rowOf(merged, row)), expected, 'concatenated rows');
  for (const column of merged.columns.values()) dictionaryIsCompact(t, column, merged.rows);

  const random = mulberry32(9);
  const indices = Int32Array.from({ length: merged.rows }, (_, i) => i).filter(() => random() < 0.3);
  const gathered = gatherChunk(merged, indices);
  t.same(Array.from({ length: gathered.rows }, (_, row) => rowOf(gathered, row)),
    Array.from(indices, (row) => expected[row]), 'gathered rows');
  for (const column of gathered.columns.values()) dictionaryIsCompact(t, column, gathered.rows);

  const none = gatherChunk(merged, Int32Array.from(indices.filter((row) => merged.columns.get('rare')!.tags[row] === 0)));
  t.notOk(none.columns.has('rare'), 'a path no gathered row holds is left out');
});

t.test('a column whose dictionary repeats strings is interned to each string once', async (t) => {
  const chunk = buildChunk(randomRows(4, 4000, 0));
  const column = chunk.columns.get('id')!;
  // As a write buffer keeps near-unique strings: one entry per row, repeats and all.
  const dict: string[] = [];
  const str = new Int32Array(chunk.rows);
  for (let row = 0; row < chunk.rows; row++) {
    if (column.tags[row] !== TAG_STR) continue;
    str[row] = dict.length;
    dict.push(`${column.dict![column.str![row]]}`);
  }
  const repeating: ColumnChunk = { ...chunk, columns: new Map([...chunk.columns, ['id', { ...column, str, dict, repeats: true }]]) };
  t.ok(new Set(dict).size < dict.length, 'the input repeats strings');
  const interned = internRepeats(repeating);
  t.same(Array.from({ length: chunk.rows }, (_, row) => rowOf(interned, row)),
    Array.from({ length: chunk.rows }, (_, row) => rowOf(chunk, row)));
  dictionaryIsCompact(t, interned.columns.get('id')!, chunk.rows);
  t.equal(interned.columns.get('mixed'), chunk.columns.get('mixed'), 'other columns are taken as they are');
});

t.test('the interner gives each distinct string one code, in first-seen order, through growth', async (t) => {
  const random = mulberry32(7);
  const interner = new StringInterner(4);
  const reference = new Map<string, number>();
  const samples = ['', 'a', 'é', '\u{1F600}', 'a\u0000b', 'ab', 'ba'];
  for (let i = 0; i < 200_000; i++) {
    const value = i < samples.length ? samples[i] : `k${Math.floor(random() * 60_000)}${i % 7 === 0 ? 'é' : ''}`;
    if (!reference.has(value)) reference.set(value, reference.size);
    if (interner.intern(value) !== reference.get(value)) {
      t.fail(`code of ${JSON.stringify(value)}`);
      return;
    }
  }
  t.same(interner.strings, [...reference.keys()]);
});
