/**
 * The lean Arrow IPC reader against apache-arrow: the same values from files apache-arrow wrote,
 * null for what it does not know (so readSegment falls back), and Tally's segments read alike
 * by both paths.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tableFromArrays, tableFromJSON, tableToIPC } from 'apache-arrow';
import t from 'tap';
import { IpcFile } from '../../../../../engine/storage/segment/ipc-read.js';
import { readSegment, readSegmentArrow } from '../../../../../engine/storage/segment/reader.js';
import { buildChunk, viewChunk, type TestRow } from '../../../../helpers/test-chunk.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-ipc-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('reads ints, doubles and dictionary strings (with nulls) as apache-arrow wrote them', async (t) => {
  const file = path.join(tempDir(), 'plain.arrow');
  const table = tableFromArrays({
    i: Int32Array.from([3, -7, 0, 2 ** 30]),
    f: Float64Array.from([1.5, -0, 1e300, Number.MIN_VALUE]),
    s: ['é 😀', null, 'x', 'é 😀'],
  });
  fs.writeFileSync(file, tableToIPC(table, 'file'));
  const ipc = IpcFile.open(file);
  t.ok(ipc !== null, 'known types open');
  t.equal(ipc!.rows, 4);
  t.same(ipc!.fields.map((field) => field.name), ['i', 'f', 's']);
  t.same(Array.from(ipc!.read(0).values as Int32Array).slice(0, 4), [3, -7, 0, 2 ** 30]);
  t.same(Array.from(ipc!.read(1).values as Float64Array).slice(0, 4), [1.5, -0, 1e300, Number.MIN_VALUE]);
  const strings = ipc!.read(2);
  t.equal(strings.nullCount, 1);
  const dictionary = strings.dictionary!.data[0];
  const text = (code: number) => Buffer.from((dictionary.values as Uint8Array)
    .subarray(dictionary.valueOffsets![code], dictionary.valueOffsets![code + 1])).toString('utf8');
  const codes = strings.values as Int32Array;
  t.same([text(codes[0]), text(codes[2]), text(codes[3])], ['é 😀', 'x', 'é 😀']);
  t.equal((strings.nullBitmap![0] >> 1) & 1, 0, 'row 1 is null');
  ipc!.close();
});

t.test('returns null for a type it does not know, so the caller uses apache-arrow', async (t) => {
  const file = path.join(tempDir(), 'struct.arrow');
  fs.writeFileSync(file, tableToIPC(tableFromJSON([{ o: { x: 1 } }, { o: { x: 2 } }]), 'file'));
  t.equal(IpcFile.open(file), null);
});

t.test('a Tally segment reads the same through IpcFile and through apache-arrow', async (t) => {
  const rows: TestRow[] = Array.from({ length: 300 }, (_, i) => ({
    ts: Date.UTC(2024, 2, 5) + i * 997,
    props: {
      s: i % 7 === 0 ? null : `v${i % 13}`, n: i % 5 === 0 ? 'text' : i / 4, b: i % 3 === 0,
      l: i % 11 === 0 ? [i, null] : undefined,
    },
  }));
  const file = path.join(tempDir(), 'segment.arrow');
  writeSegment(file, buildChunk(rows), { s: 'string', n: 'num', b: 'bool', l: 'list' });
  const lean = readSegment(file);
  const arrow = readSegmentArrow(file);
  t.same(viewChunk(lean), viewChunk(arrow));
  t.same(Array.from(lean.ts), Array.from(arrow.ts));
  t.same(Array.from(lean.seq), Array.from(arrow.seq));
  t.same(viewChunk(readSegment(file, ['n'])), viewChunk(readSegmentArrow(file, ['n'])), 'projected');
});

t.test('a file is parsed once per thread; a path that names another file is parsed again', async (t) => {
  const file = path.join(tempDir(), 'again.arrow');
  const write = (values: Int32Array, strings: string[]) => fs.writeFileSync(file, tableToIPC(tableFromArrays({ i: values, s: strings }), 'file'));
  write(Int32Array.from([1, 2, 3]), ['a', 'b', 'a']);
  const first = IpcFile.open(file)!;
  const firstFields = first.fields;
  first.close();
  const second = IpcFile.open(file)!;
  t.equal(second.fields, firstFields, 'the second open reuses the parsed layout');
  t.same(Array.from(second.read(0).values as Int32Array).slice(0, 3), [1, 2, 3]);
  const text = (ipc: IpcFile) => {
    const data = ipc.read(1);
    const dictionary = data.dictionary!.data[0];
    return Array.from(data.values as Int32Array).slice(0, data.length).map((code) => Buffer.from((dictionary.values as Uint8Array)
      .subarray(dictionary.valueOffsets![code], dictionary.valueOffsets![code + 1])).toString('utf8'));
  };
  t.same(text(second), ['a', 'b', 'a'], 'dictionaries read through the kept layout');
  t.same(text(second), ['a', 'b', 'a'], 'and again, from the dictionary header it keeps');
  second.close();
  // Replaced in place (as no segment ever is): another inode, size or mtime is another file.
  fs.rmSync(file);
  write(Int32Array.from([4, 5, 6, 7, 8]), ['x', 'y', 'z', 'x', 'y']);
  const third = IpcFile.open(file)!;
  t.equal(third.rows, 5);
  t.not(third.fields, firstFields, 'parsed anew');
  t.same(text(third), ['x', 'y', 'z', 'x', 'y']);
  third.close();
});
