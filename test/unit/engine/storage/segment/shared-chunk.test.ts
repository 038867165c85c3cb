/**
 * Segment columns in shared memory (shared-chunk.ts): a segment read from a real file, its columns
 * put in SharedArrayBuffers and posted through a real MessageChannel, reads on the other side as
 * the file does, over the same memory (not a copy); a column of lists stays unshared.
 */
import { MessageChannel } from 'node:worker_threads';
import t, { type Test } from 'tap';
import { replaceColumns, TAG_NUM, type Column, type ColumnChunk } from '../../../../../engine/storage/chunk.js';
import { readSegment } from '../../../../../engine/storage/segment/reader.js';
import { SegmentColumn } from '../../../../../engine/storage/segment/decode-column.js';
import {
  inSharedMemory, isSharedColumn, peerChunk, shareChunk, type SharedChunk,
} from '../../../../../engine/storage/segment/shared-chunk.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

/** Every kind of column a segment holds: scaled and float numbers, short and id dictionaries, booleans, mixed types, nulls, lists. */
const [ref] = writeDaySegments(t, 1, 3000, (_s, i) => ({
  price: i % 10 === 0 ? null : (i % 400) * 0.25,
  amount: (i % 400) * 0.25,
  ratio: Math.sqrt(i),
  country: `C${i % 7}`,
  user: `user-${i}`,
  member: i % 3 === 0,
  mixed: i % 4 === 0 ? 'text' : i % 4 === 1 ? i : i % 4 === 2 ? true : null,
  sometimes: i % 5 === 0 ? `s${i % 11}` : undefined as never,
  tags: i % 6 === 0 ? ['a', `b${i % 3}`] : null,
}));

/** A column's values row by row, as readers see them (tags, numbers, strings, lists). */
function rowsOf(column: Column): unknown[] {
  return Array.from(column.tags, (tag, row) => [
    tag, column.num === null ? null : column.num[row], column.str === null ? null : column.dict![column.str[row]],
    column.lists === null ? null : column.lists[row],
  ]);
}

function sameChunks(t: Test, got: ColumnChunk, want: ColumnChunk, paths: readonly string[]): void {
  t.same([...got.ts], [...want.ts], 'times');
  t.same([...got.seq], [...want.seq], 'seqs');
  t.same([...got.createdAt], [...want.createdAt], 'created_at');
  for (const path of paths) t.same(rowsOf(got.columns.get(path)!), rowsOf(want.columns.get(path)!), path);
}

/** `chunk` as another thread receives it: posted through a real MessageChannel. */
async function posted(chunk: SharedChunk): Promise<SharedChunk> {
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<SharedChunk>((resolve) => port2.once('message', resolve));
  port1.postMessage(chunk);
  const got = await received;
  port1.close();
  return got;
}

t.test('a shared chunk posted to another thread reads as the file, over the same memory', async (t) => {
  const read = readSegment(ref.file);
  const paths = [...read.columns.keys()].sort();
  t.same(paths, ['amount', 'country', 'member', 'mixed', 'price', 'ratio', 'sometimes', 'tags', 'user']);
  const owned = replaceColumns(read, new Map([...read.columns].map(([path, column]) => [path, inSharedMemory(column)])));
  t.notOk(isSharedColumn(owned.columns.get('tags')!), 'lists are JS values: not shared');
  for (const path of paths.filter((path) => path !== 'tags')) t.ok(isSharedColumn(owned.columns.get(path)!), `${path} in shared memory`);
  t.ok((owned.columns.get('amount') as SegmentColumn).scaled !== null, 'amounts kept as stored integers');
  t.ok((owned.columns.get('user') as SegmentColumn).padded !== null, 'ids kept as the stored padded dictionary');
  void owned.ts; // decoded before sharing: shared with the columns
  const shared = shareChunk(owned)!;
  t.same(shared.columns.map((column) => column.path).sort(), paths.filter((path) => path !== 'tags'));
  t.ok(shared.parts.ts!.buffer instanceof SharedArrayBuffer, 'times decoded before are shared too');
  t.equal(shared.parts.createdAt, null, 'times not decoded are not: a peer reads them from the file');
  const peer = peerChunk(await posted(shared));
  sameChunks(t, peer, readSegment(ref.file), paths.filter((path) => path !== 'tags'));
  t.notOk(peer.columns.has('tags'));
  // The same memory: a byte written on one side is seen on the other.
  const ownCodes = owned.columns.get('country')!.str!;
  const peerCodes = peer.columns.get('country')!.str!;
  const before = peerCodes[5];
  ownCodes[5] = before + 1;
  t.equal(peerCodes[5], before + 1, 'a write on one side shows on the other');
  ownCodes[5] = before;
});

t.test('a chunk not read by reader.ts, or with no column shared, has nothing to share', async (t) => {
  const read = readSegment(ref.file, ['tags']);
  const shared = shareChunk(read)!;
  t.same(shared.columns, [], 'a column of lists alone: nothing');
  const plain = { rows: 1, ts: new Float64Array(1), createdAt: new Float64Array(1), seq: new Float64Array(1), columns: new Map() };
  t.equal(shareChunk(plain), null);
  const column = { path: 'x', tags: new Uint8Array([TAG_NUM]), num: new Float64Array([1]), str: null, dict: null, lists: null };
  t.equal(inSharedMemory(column), column, 'a column not read from a segment stays as it is');
});
