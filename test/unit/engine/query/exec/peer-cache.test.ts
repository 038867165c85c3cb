/**
 * One cache for every query worker (chunk-cache.ts share, setPeers), on real segment files: a
 * segment one cache warmed is read by another from the first one's shared memory, without a file
 * read and without counting its columns twice; what the peer lacks is read for the query alone;
 * once the owner drops it, the peer reads the file again.
 */
import t from 'tap';
import type { SegmentRef } from '../../../../../engine/storage/chunk.js';
import { columnsBytes } from '../../../../../engine/storage/chunk-bytes.js';
import { readSegment } from '../../../../../engine/storage/segment/reader.js';
import { countingFiles } from '../../../../helpers/query/counting-files.js';
import type { SegmentColumn } from '../../../../../engine/storage/segment/decode-column.js';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

const ROWS = 2000;

/** Segments of a number, a 7-value string, an id (left out by warming) and a list (never shared). */
function segments(count: number): SegmentRef[] {
  return writeDaySegments(t, count, ROWS, (s, i) => ({
    price: i * 0.5 + s, tag: `t${i % 7}`, user: `u${s}-${i}`, list: i % 2 === 0 ? [s, i] : null,
  }));
}

/** A cache whose file reads are counted; `sharing` as a pool of two or more workers makes it. */
function countingCache(budget: number, sharing: boolean): { cache: ChunkCache; reads: () => number } {
  const { files, reads } = countingFiles();
  return { cache: new ChunkCache(files, budget, 8 << 20, undefined, sharing), reads };
}

t.test('a segment one cache warmed, another reads from its memory: no file read, no bytes counted twice', async (t) => {
  const [ref] = segments(1);
  const owner = countingCache(64 << 20, true);
  const peer = countingCache(64 << 20, false);
  t.equal(owner.cache.warm(ref), 'warmed');
  const shared = owner.cache.share(ref.file)!;
  t.same(shared.columns.map((column) => column.path).sort(), ['price', 'tag'], 'the columns warming holds (not ids, not lists)');
  peer.cache.setPeers([shared]);
  peer.cache.beginQuery();
  const chunk = peer.cache.load(ref, ['price', 'tag']);
  t.equal(peer.reads(), 0, 'no file read');
  t.equal(peer.cache.peerReads, 1);
  t.equal(peer.cache.usedBytes, 0, 'the shared columns cost this cache nothing');
  const price = chunk.columns.get('price') as SegmentColumn;
  const tag = chunk.columns.get('tag') as SegmentColumn;
  t.same([price.num![0], price.num![ROWS - 1]], [0, (ROWS - 1) * 0.5]);
  t.same([...tag.dict!].sort(), ['t0', 't1', 't2', 't3', 't4', 't5', 't6']);
  // Times were not shared (not decoded by the owner): read from the file when asked.
  t.equal(chunk.ts[ROWS - 1] - chunk.ts[0], (ROWS - 1) * 1000);
  peer.cache.load(ref, ['price']);
  const made = 8 * ROWS + price.decodedBytes + tag.decodedBytes;
  t.ok(price.decodedBytes === 8 * ROWS && tag.decodedBytes > 0);
  t.equal(peer.cache.usedBytes, made, 'what it made from them (Float64 prices, strings, times) counted here');
  t.equal(peer.reads(), 0);
  // Ids and lists are not shared: read from the file for this query alone, not kept.
  const withIds = peer.cache.load(ref, ['price', 'user', 'list']);
  t.equal(peer.reads(), 1);
  t.equal(withIds.columns.get('user')!.dict![withIds.columns.get('user')!.str![7]], 'u0-7');
  t.same(withIds.columns.get('list')!.lists![2], [0, 2]);
  t.equal(withIds.columns.get('price')!.num![3], 1.5, 'the shared column beside them');
  peer.cache.load(ref, ['user']);
  t.equal(peer.reads(), 2, 'not kept');
  t.equal(peer.cache.usedBytes, made);
  // The owner forgets it (a merge replaced it): its peers are told, and read the file again.
  owner.cache.forget([ref.file]);
  t.same(owner.cache.takeUnshared(), [ref.file]);
  t.same(owner.cache.takeUnshared(), [], 'named once');
  peer.cache.setPeers([], [ref.file]);
  t.equal(peer.cache.usedBytes, 0, 'its entry of the shared columns dropped');
  peer.cache.load(ref, ['price', 'tag']);
  t.equal(peer.reads(), 3, 'from the file');
  t.equal(peer.cache.usedBytes, columnsBytes(readSegment(ref.file, ['price', 'tag'])), 'and kept as its own, counted');
});

t.test('an owner names the shared segments it evicts or trims, not those a query adds columns to', async (t) => {
  const refs = segments(3);
  const probe = countingCache(64 << 20, true);
  probe.cache.warm(refs[0]);
  const oneWarmed = probe.cache.usedBytes;
  const owner = countingCache(Math.floor(2.5 * oneWarmed), true);
  t.equal(owner.cache.warm(refs[0]), 'warmed');
  t.ok(owner.cache.share(refs[0].file));
  t.equal(owner.cache.warm(refs[1]), 'warmed');
  t.ok(owner.cache.share(refs[1].file));
  // A query reads another column of a shared segment: the share holds (its columns stay in the entry).
  owner.cache.beginQuery();
  owner.cache.load(refs[1], ['price', 'tag', 'user']);
  t.same(owner.cache.takeUnshared(), [], 'a column added');
  // A query reads more than fits: the least recently used shared segment goes, and is named.
  owner.cache.beginQuery();
  owner.cache.load(refs[2], ['price', 'tag', 'user']);
  owner.cache.load(refs[1], ['price', 'tag', 'user']);
  t.same(owner.cache.takeUnshared(), [refs[0].file], 'evicted: its peers let go of it');
});

t.test('a cache that does not share keeps its columns as read: nothing to share', async (t) => {
  const [ref] = segments(1);
  const alone = countingCache(64 << 20, false);
  t.equal(alone.cache.warm(ref), 'warmed');
  t.equal(alone.cache.share(ref.file), null, 'no column in shared memory');
  const owner = countingCache(64 << 20, true);
  t.equal(owner.cache.share(ref.file), null, 'nothing held');
  owner.cache.beginQuery();
  owner.cache.load(ref, ['price']);
  t.equal(owner.cache.share(ref.file), null, 'what a query reads stays its own (no copy on the query path)');
});
