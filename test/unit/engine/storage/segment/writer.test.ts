import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { tableFromIPC } from 'apache-arrow';
import { AssertionError } from '../../../../../engine/base/assert.js';
import { HyperLogLog } from '../../../../../engine/sketch/hyperloglog.js';
import type { SchemaType } from '../../../../../engine/storage/chunk.js';
import { readFooter, readSegment, readSegmentArrow } from '../../../../../engine/storage/segment/reader.js';
import { buildChunk, valueAt, type TestRow } from '../../../../helpers/test-chunk.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';
import { SORT_PREFIX_BYTES, encodeUtf8, prefixOrder } from '../../../../../engine/storage/segment/arrow-data.js';

const T0 = Date.UTC(2024, 2, 5, 14, 30);

function tempFile(name = 'segment.arrow'): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tally-writer-')), name);
}

const rows: TestRow[] = [
  { ts: T0 + 2, props: { 'user.id': 'u1', n: 3, flag: true, tags: ['a', 'b'] } },
  { ts: T0, props: { 'user.id': 'u2', n: 'three', flag: null, tags: [1, 2] } },
  { ts: T0 + 9, props: { 'user.id': 'u1', n: -1.5, tags: ['c', null] } },
];
const schema: Record<string, SchemaType> = {
  'user.id': 'string', n: 'num', flag: 'bool', tags: 'list',
};

t.test('writes a standard Arrow IPC file a plain tableFromIPC reads', async (t) => {
  const file = tempFile();
  writeSegment(file, buildChunk(rows), schema);
  const table = tableFromIPC(fs.readFileSync(file));
  t.equal(table.numRows, 3);
  const names = table.schema.fields.map((field) => field.name);
  t.same(names, [
    'svc.timestamp', 'svc.created_at', '_seq',
    'user.id', 'user.id:codes', 'n', 'n:str', 'flag', 'flag:null', 'tags', 'tags:list_num',
  ]);
  // Three codes of one bit take a byte packed, less than their ZSTD frame: the string field keeps
  // its dictionary but no valid row, and its codes are the bits of each row of `user.id:codes`.
  const user = table.schema.fields.find((field) => field.name === 'user.id')!;
  t.equal(user.metadata.get('tally.codes'), 'bitpacked');
  t.same([...table.getChild('user.id')!], [null, null, null]);
  const codes = table.schema.fields.find((field) => field.name === 'user.id:codes')!;
  t.same([String(codes.type), codes.metadata.get('tally.bits'), codes.metadata.get('tally.role')], ['FixedSizeList[1]<Bool>', '1', 'codes']);
  const dictionary = table.getChild('user.id')!.data[0].dictionary!;
  const decoded = [...table.getChild('user.id:codes')!].map((bits) => {
    const code = [...bits!].reduce((sum: number, bit, index) => sum + (bit ? 2 ** index : 0), 0);
    return dictionary.get(code);
  });
  t.same(decoded, ['u1', 'u2', 'u1']);
  // Numbers with one decimal are stored as Int8 of value × 10, the scale in the field's metadata.
  const n = table.schema.fields.find((field) => field.name === 'n')!;
  t.equal(String(n.type), 'Int8');
  t.equal(n.metadata.get('tally.scale'), '1');
  t.same([...table.getChild('n')!], [30, null, -15]);
  t.same([...table.getChild('n:str')!], [null, 'three', null]);
  t.same([...table.getChild('flag')!], [true, null, null]);
  t.same([...table.getChild('flag:null')!], [null, true, null]);
  t.same(table.getChild('tags')!.get(0)!.toArray(), ['a', 'b']);
  t.same([...table.getChild('tags')!.get(2)!], ['c', null]);
  t.equal(table.getChild('tags')!.get(1), null);
  t.same([...table.getChild('tags:list_num')!.get(1)!], [1, 2]);
  // svc.timestamp as Int32 differences from the previous row, the first from tally.base.
  const ts = table.schema.fields.find((field) => field.name === 'svc.timestamp')!;
  t.same([ts.metadata.get('tally.encoding'), ts.metadata.get('tally.base')], ['delta', String(T0 + 2)]);
  t.same([...table.getChild('svc.timestamp')!], [0, -2, 9]);
});

t.test('returns the footer and stores it in the sidecar with one sketch per column and few values', async (t) => {
  const file = tempFile();
  const footer = writeSegment(file, buildChunk(rows, 10), schema);
  t.match(footer, { rows: 3, tsMin: T0, tsMax: T0 + 9, seqMin: 10, seqMax: 14 });
  const n = { present: 3, numMin: -1.5, numMax: 3, strMin: 'three', strMax: 'three' };
  t.same(footer.columns.n, n);
  t.same(footer.columns.flag, { present: 2 });
  t.same(footer.columns['user.id'], { present: 3, strMin: 'u1', strMax: 'u2' });
  const stored = readFooter(file);
  const { sketches, values, ...rest } = stored;
  t.same(rest, footer);
  // Distinct present, non-null values of the columns without lists; "tags" has lists.
  t.same(values, {
    'user.id': { values: ['u1', 'u2'], rows: [2, 1] },
    n: { values: ['three', 3, -1.5], rows: [1, 1, 1] },
    flag: { values: [true], rows: [1] },
  });
  t.same(Object.keys(sketches).sort(), ['flag', 'n', 'tags', 'user.id']);
  t.equal(Math.round(HyperLogLog.deserialize(sketches['user.id']).estimate()), 2);
  t.equal(Math.round(HyperLogLog.deserialize(sketches.tags).estimate()), 3);
  t.equal(Math.round(HyperLogLog.deserialize(sketches.flag).estimate()), 1);
});

t.test('leaves no .tmp behind and replaces an existing segment', async (t) => {
  const file = tempFile();
  writeSegment(file, buildChunk(rows), schema);
  writeSegment(file, buildChunk(rows.slice(0, 1)), schema);
  const names = fs.readdirSync(path.dirname(file)).sort();
  t.same(names, ['segment.arrow', 'segment.arrow.meta']);
  t.equal(readFooter(file).rows, 1);
});

t.test('refuses an empty chunk: a segment has rows (0-row guard)', async (t) => {
  const file = tempFile();
  t.throws(() => writeSegment(file, buildChunk([]), {}), AssertionError);
  t.same(fs.readdirSync(path.dirname(file)), []);
});

t.test('asserts seq strictly increases', async (t) => {
  const chunk = buildChunk(rows);
  (chunk.seq as Float64Array)[2] = chunk.seq[0];
  t.throws(() => writeSegment(tempFile(), chunk, schema), AssertionError);
});

t.test('stores a path the schema lacks by its first present type', async (t) => {
  const file = tempFile();
  writeSegment(file, buildChunk([{ ts: T0, props: {} }, { ts: T0, props: { x: 'a' } }]), {});
  const table = tableFromIPC(fs.readFileSync(file));
  t.equal(String(table.schema.fields.find((field) => field.name === 'x')!.type), 'Dictionary<Int8, Utf8>');
});

t.test('a large dictionary is stored sorted, padded to a fixed width when that is smaller, and reads back the same', async (t) => {
  // ids of 2-5 characters (padded), paths of 10-200 (kept Utf8: padding to 200 would not pay),
  // strings with a zero byte (kept Utf8), and a small dictionary (kept in first-seen order).
  const many: TestRow[] = Array.from({ length: 3_000 }, (_, i) => ({
    ts: T0 + i,
    props: {
      id: `u${(i * 7_919) % 2_000}`,
      url: `/p/${'x'.repeat(((i * 31) % 190))}${i % 700}`,
      nul: i % 3 === 0 ? `a\u0000${i % 400}` : `é${i % 400}`,
      small: ['zeta', 'alpha', 'mid'][i % 3],
      ...(i % 5 === 0 ? {} : { maybe: `m${i % 900}😀` }),
    },
  }));
  const wide: Record<string, SchemaType> = { id: 'string', url: 'string', nul: 'string', small: 'string', maybe: 'string' };
  const file = tempFile();
  const chunk = buildChunk(many);
  writeSegment(file, chunk, wide);
  const table = tableFromIPC(fs.readFileSync(file));
  const field = (name: string) => table.schema.fields.find((f) => f.name === name)!;
  const dictionary = (name: string) => (field(name).type as unknown as { dictionary: { toString(): string } }).dictionary.toString();
  t.equal(dictionary('id'), 'FixedSizeBinary[5]', 'short ids are padded');
  t.equal(field('id').metadata.get('tally.encoding'), 'padded');
  t.equal(dictionary('url'), 'Utf8', 'values of very different lengths are not');
  t.equal(dictionary('nul'), 'Utf8', 'values with a zero byte are not');
  t.equal(dictionary('small'), 'Utf8');
  t.equal(field('url').metadata.get('tally.encoding'), undefined);
  // A plain Arrow reader gets each id as its bytes followed by zeros; dropping them gives the id.
  const ids = table.getChild('id')!;
  const unpad = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8').replace(/\0+$/, '');
  t.same(Array.from({ length: 5 }, (_, i) => unpad(ids.get(i) as Uint8Array)), many.slice(0, 5).map((row) => row.props.id));
  // The stored dictionaries are sorted by their first 16 bytes (ties keep their order): neighbours share prefixes.
  const urlDictionary = (table.getChild('url')!.data[0].dictionary!.toArray() as string[]);
  const prefixes = urlDictionary.map((url) => url.slice(0, 16));
  t.same(prefixes, [...prefixes].sort(), 'the url dictionary is sorted by its first 16 bytes');
  t.ok(new Set(prefixes).size > 1 && new Set(urlDictionary).size === urlDictionary.length, 'with many prefixes and each url once');
  const idDictionary = Array.from(table.getChild('id')!.data[0].dictionary!, (bytes) => unpad(bytes as Uint8Array));
  t.same(idDictionary, [...idDictionary].sort(), 'the id dictionary is sorted');
  t.same(table.getChild('small')!.data[0].dictionary!.toArray(), ['zeta', 'alpha', 'mid'], 'a small one keeps its order');
  // Tally's own reader and apache-arrow's give back every row's value.
  for (const read of [readSegment, readSegmentArrow]) {
    const back = read(file);
    for (const path of Object.keys(wide)) {
      const column = back.columns.get(path)!;
      const original = chunk.columns.get(path)!;
      t.same(Array.from({ length: many.length }, (_, row) => valueAt(column, row)),
        Array.from({ length: many.length }, (_, row) => valueAt(original, row)), `${read.name}: ${path}`);
    }
  }
});

t.test('prefixOrder orders values by their first 16 UTF-8 bytes, shorter first, ties in their given order', async (t) => {
  let state = 7;
  const random = (n: number) => ((state = (state * 1_103_515_245 + 12_345) >>> 0) % n);
  const alphabet = ['a', 'b', 'z', 'é', '😀', '0', '~'];
  const values = Array.from({ length: 2_000 }, (_, i) => i % 50 === 0 ? ''
    : i % 7 === 0 ? `${'same-prefix-0123'}${i}` // 16 equal bytes, then different: ties
    : Array.from({ length: 1 + random(20) }, () => alphabet[random(alphabet.length)]).join(''));
  const { bytes, offsets } = encodeUtf8(values);
  const got = Array.from(prefixOrder(bytes, offsets));
  const prefix = (i: number) => Buffer.from(values[i], 'utf8').subarray(0, SORT_PREFIX_BYTES);
  const want = values.map((_, i) => i).sort((a, b) => Buffer.compare(prefix(a), prefix(b)) || a - b);
  t.same(got, want);
});
