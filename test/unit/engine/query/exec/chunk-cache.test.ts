/**
 * The decoded-segment cache on real segment files: under its budget, and scan-resistant: when a
 * query reads more than fits, the segments it read first stay cached and each later run of the
 * same query hits them, where plain LRU would hit none.
 */
import t from 'tap';
import type { SegmentRef } from '../../../../../engine/storage/chunk.js';
import { columnsBytes, dictStringBytes, systemBytes } from '../../../../../engine/storage/chunk-bytes.js';
import { compactColumns, readFooter, readSegment } from '../../../../../engine/storage/segment/reader.js';
import { ChunkCache } from '../../../../../engine/query/exec/chunk-cache.js';
import { countingFiles } from '../../../../helpers/query/counting-files.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';

/** Segments of 1,000 rows: a number and a 7-value string. */
function segments(count: number): SegmentRef[] {
  return writeDaySegments(t, count, 1000, (s, i) => ({ price: i * 0.5 + s, tag: `t${i % 7}` }));
}

/** A cache whose reads are counted; `fit` segments' price columns fit its budget. */
function countingCache(refs: readonly SegmentRef[], fit: number): { cache: ChunkCache; reads: () => number } {
  const probe = readSegment(refs[0].file, ['price']);
  const one = columnsBytes(probe) + systemBytes(probe);
  const { files, reads } = countingFiles();
  return { cache: new ChunkCache(files, Math.floor((fit + 0.5) * one)), reads };
}

t.test('a query that reads more than fits keeps the share that fits, run after run', async (t) => {
  const refs = segments(5);
  const { cache, reads } = countingCache(refs, 3);
  const run = () => {
    const before = reads();
    cache.beginQuery();
    for (const ref of refs) {
      const chunk = cache.load(ref, ['price']);
      // Read as a scan does, from the stored integers (`num` would make Float64 values, 8x the bytes).
      const { values, factor } = chunk.columns.get('price')!.scaled!;
      t.equal(values[1] / factor, 0.5 + refs.indexOf(ref), 'the right values, cached or not');
    }
    return reads() - before;
  };
  t.equal(run(), 5, 'the first run reads every segment');
  t.equal(run(), 2, 'later runs read only what did not fit');
  t.equal(run(), 2);
});

t.test('without beginQuery the cache is plain LRU', async (t) => {
  const refs = segments(5);
  const { cache, reads } = countingCache(refs, 3);
  for (let round = 0; round < 2; round++) for (const ref of refs) cache.load(ref, ['price']);
  t.equal(reads(), 10, 'a cyclic scan larger than the cache misses every time');
  cache.load(refs[4], ['price']);
  t.equal(reads(), 10, 'the most recent segment is cached');
});

t.test('a new query makes room from entries the running query has not read', async (t) => {
  const refs = segments(5);
  const { cache, reads } = countingCache(refs, 3);
  cache.beginQuery();
  for (const ref of refs.slice(0, 3)) cache.load(ref, ['price']);
  cache.beginQuery();
  for (const ref of refs.slice(2)) cache.load(ref, ['price']);
  t.equal(reads(), 5, 'segment 2 was a hit; 3 and 4 evicted 0 and 1');
  cache.beginQuery();
  for (const ref of refs.slice(2)) cache.load(ref, ['price']);
  t.equal(reads(), 5, 'segments 2-4 all cached');
  // Adding a column to a cached segment that cannot grow keeps the entry it had.
  cache.load(refs[2], ['price', 'tag']);
  t.equal(reads(), 6);
  cache.load(refs[2], ['price']);
  t.equal(reads(), 6, 'its price column is still cached');
});

t.test("a cache full of another query's columns makes room for this query's", async (t) => {
  const refs = segments(5);
  const { cache, reads } = countingCache(refs, 3);
  // Price and tag of every segment do not fit: the first query keeps what it read first.
  for (let run = 0; run < 2; run++) {
    cache.beginQuery();
    for (const ref of refs) cache.load(ref, ['price', 'tag']);
  }
  const before = reads();
  // Price alone of three segments fits: the second query drops the tag columns it does not
  // read, and its later runs read what still does not fit, not all five.
  const run = () => {
    const start = reads();
    cache.beginQuery();
    for (const ref of refs) cache.load(ref, ['price']);
    return reads() - start;
  };
  const first = run();
  t.ok(first <= 5 && reads() > before);
  t.equal(run(), 2, 'the price columns of three segments stay');
  t.equal(run(), 2);
});

/** Segments of 1,000 rows: a number, a 7-value string, and an id with a value a row. */
function segmentsWithIds(count: number): SegmentRef[] {
  return writeDaySegments(t, count, 1000, (s, i) => ({ price: i * 0.5 + s, tag: `t${i % 7}`, user: `u${s}-${i}` }));
}

t.test('warming decodes a fresh segment before any query: every column but ids', async (t) => {
  const refs = segmentsWithIds(3);
  t.same(compactColumns(refs[0].file).sort(), ['price', 'tag'], 'the id column (a dictionary entry a row) is left out');
  const { cache, reads } = countingCache(refs, 100);
  for (const ref of refs) t.equal(cache.warm(ref), 'warmed');
  t.equal(reads(), 6, 'a read a column (warming stops between columns for a waiting query)');
  cache.beginQuery();
  for (const ref of refs) {
    const chunk = cache.load(ref, ['price', 'tag']);
    const { values, factor } = chunk.columns.get('price')!.scaled!;
    t.equal(values[3] / factor, 1.5 + refs.indexOf(ref), 'the values as stored');
  }
  t.equal(reads(), 6, 'a query over the warmed columns reads no file');
  cache.load(refs[0], ['user']);
  t.equal(reads(), 7, 'the id column is read when a query asks for it');
  t.equal(cache.warm(refs[1]), 'cached', 'a segment already cached stays as it is');
  t.equal(reads(), 7);
});

t.test('every column of a segment partly cached (an extraction) reads only the columns it lacks', async (t) => {
  const [ref] = segmentsWithIds(1);
  const asked: (readonly string[] | undefined)[] = [];
  const cache = new ChunkCache({
    readSegment: (file: string, columns?: readonly string[]) => {
      asked.push(columns);
      return readSegment(file, columns);
    },
    readFooter,
    compactColumns,
  });
  t.equal(cache.warm(ref), 'warmed');
  t.same(asked, [['price'], ['tag']], 'warming read every column but the ids');
  const chunk = cache.load(ref, null);
  t.same(asked.slice(2), [['user']], 'the extraction read the ids alone');
  t.same([...chunk.columns.keys()].sort(), ['price', 'tag', 'user']);
  t.equal(chunk.columns.get('user')!.stringAt!(chunk.columns.get('user')!.str![7]), 'u0-7', 'the ids read');
  t.equal(chunk.columns.get('tag')!.stringAt!(chunk.columns.get('tag')!.str![9]), 't2', 'the columns cached before');
  cache.load(ref, null);
  cache.load(ref, ['user']);
  t.equal(asked.length, 3, 'the segment is then cached whole');
});

t.test('a segment warmed whole holds its ids too', async (t) => {
  const refs = segmentsWithIds(2);
  const { cache, reads } = countingCache(refs, 100);
  t.equal(cache.warm(refs[1], true), 'warmed');
  t.equal(cache.warm(refs[0]), 'warmed');
  t.equal(reads(), 5, 'warming whole reads each of the segment\'s columns once, the other one\'s but ids once');
  cache.beginQuery();
  const user = cache.load(refs[1], ['price', 'tag', 'user']).columns.get('user')!;
  t.equal(user.dict![user.str![5]], 'u1-5', 'the ids as stored');
  t.equal(reads(), 5, 'a query over every column of the segment warmed whole reads no file');
  t.equal(systemBytes(cache.load(refs[1], null)), 3 * 8 * 1000, 'and its times are decoded: ts, created_at, seq');
  t.equal(reads(), 5);
  cache.load(refs[0], ['user']);
  t.equal(reads(), 6, 'the other segment was warmed without its ids');
});

t.test('the ids warmRest adds are handed to its hook before they are counted, so what the hook adds is in the budget', async (t) => {
  const refs = segmentsWithIds(1);
  const files = { readSegment, readFooter, compactColumns };
  const plain = new ChunkCache(files, 64 << 20);
  t.equal(plain.warm(refs[0]), 'warmed');
  t.equal(plain.warmRest(refs[0], 1_000), 'warmed');
  const seen: string[] = [];
  const hooked = new ChunkCache(files, 64 << 20, undefined, (column) => {
    seen.push(column.path);
    column.decodedBytes += 8 * column.dictSize; // as columns.ts storedKeys counts the keys it adds
  });
  t.equal(hooked.warm(refs[0]), 'warmed');
  t.same(seen, [], 'not the columns warm() reads');
  t.equal(hooked.warmRest(refs[0], 1_000), 'warmed');
  t.same(seen, ['user'], 'the id column warmRest reads');
  t.equal(hooked.usedBytes - plain.usedBytes, 8 * 1000, 'its keys are counted: a distinct id a row');
});

t.test('a segment whose ids do not fit is warmed without them', async (t) => {
  const refs = segmentsWithIds(1);
  // Room for the price and tag columns (and a little more), not for the ids and times.
  const probe = readSegment(refs[0].file, compactColumns(refs[0].file));
  let reading = 0;
  const files = { readSegment: (file: string, columns?: readonly string[]) => (reading++, readSegment(file, columns)), readFooter, compactColumns };
  const cache = new ChunkCache(files, Math.floor(1.2 * (columnsBytes(probe) + systemBytes(probe))));
  t.equal(cache.warm(refs[0], true), 'warmed');
  cache.beginQuery();
  const before = reading;
  cache.load(refs[0], ['price', 'tag']);
  t.equal(reading, before, 'the columns without ids are cached');
  cache.load(refs[0], ['user']);
  t.equal(reading, before + 1, 'the ids were not');
});

/** A counting cache of `budget` bytes over real files. */
function cacheOf(budget: number): { cache: ChunkCache; reads: () => number } {
  let reads = 0;
  const files = { readSegment: (file: string, columns?: readonly string[]) => (reads++, readSegment(file, columns)), readFooter, compactColumns };
  return { cache: new ChunkCache(files, budget), reads: () => reads };
}

/** What a segment takes in a cache whole: every column and its times. */
function wholeBytes(ref: SegmentRef): number {
  const whole = readSegment(ref.file);
  void [whole.ts, whole.createdAt, whole.seq];
  return columnsBytes(whole) + systemBytes(whole) + dictStringBytes(whole);
}

/** One query reading every column of `refs` but the times; the files it read. */
function readAll(cache: ChunkCache, reads: () => number, refs: readonly SegmentRef[]): number {
  const start = reads();
  cache.beginQuery();
  for (const ref of refs) cache.load(ref, ['price', 'tag', 'user']);
  return reads() - start;
}

t.test('the newest segment warmed whole is held: queries that read more than fits neither evict nor trim it', async (t) => {
  const refs = segmentsWithIds(50);
  const newest = refs[49];
  const { cache, reads } = cacheOf(10 * wholeBytes(newest));
  t.equal(cache.warm(newest, true), 'warmed', 'warmed into an empty cache');
  const query = () => readAll(cache, reads, refs.slice(0, 49));
  query();
  t.ok(query() > 0, 'the query reads more than the cache holds: later runs read files again');
  const before = reads();
  cache.beginQuery();
  const chunk = cache.load(newest, null);
  t.equal(reads(), before, 'every column of the held segment is read from memory');
  t.equal(systemBytes(chunk), 3 * 8 * 1000, 'its times too');
  cache.forget([newest.file]);
  cache.load(newest, null);
  t.equal(reads(), before + 1, 'a segment forgotten (replaced by a merge) is no longer held');
});

t.test('a full cache makes room for the newest segment; the held ones stay within their share', async (t) => {
  const refs = segmentsWithIds(52);
  const { cache, reads } = cacheOf(10 * wholeBytes(refs[0]));
  const query = () => readAll(cache, reads, refs.slice(0, 50));
  query();
  t.ok(query() > 0, 'the query reads more than the cache holds');
  t.equal(cache.warm(refs[50], true), 'warmed', 'a full cache makes room for a segment warmed whole');
  // An eighth of the budget holds one of these segments: the second held lets the first go.
  t.equal(cache.warm(refs[51], true), 'warmed');
  query();
  query();
  const before = reads();
  cache.beginQuery();
  cache.load(refs[51], null);
  t.equal(reads(), before, 'the newest held is still cached whole');
  cache.load(refs[50], null);
  t.equal(reads(), before + 1, 'the one it replaced was evicted like any other');
});

t.test('warming fills free room only: it never evicts what queries read', async (t) => {
  const refs = segments(5);
  // The budget holds the price columns of three segments; their tag columns are small.
  const { cache, reads } = countingCache(refs, 3);
  cache.beginQuery();
  for (const ref of refs.slice(0, 3)) cache.load(ref, ['price']);
  t.equal(reads(), 3);
  t.equal(cache.warm(refs[3]), 'full', 'no room: not warmed');
  t.equal(cache.warm(refs[4]), 'full');
  cache.beginQuery();
  for (const ref of refs.slice(0, 3)) cache.load(ref, ['price']);
  t.equal(reads(), 3 + 2, 'what the query read is still cached (the two refused warms each read their file once)');
});

t.test('forgotten segments leave the cache, and their room goes to warming', async (t) => {
  const refs = segments(4);
  // The budget holds two warmed segments (price and tag).
  const probe = readSegment(refs[0].file, compactColumns(refs[0].file));
  const warmed = columnsBytes(probe) + systemBytes(probe);
  let reading = 0;
  const files = { readSegment: (file: string, columns?: readonly string[]) => (reading++, readSegment(file, columns)), readFooter, compactColumns };
  const cache = new ChunkCache(files, Math.floor(2.5 * warmed));
  const reads = () => reading;
  t.equal(cache.warm(refs[0]), 'warmed');
  t.equal(cache.warm(refs[1]), 'warmed');
  t.equal(cache.warm(refs[2]), 'full');
  cache.forget([refs[0].file, refs[1].file]);
  t.equal(cache.warm(refs[2]), 'warmed', 'room again once the replaced segments are forgotten');
  const before = reads();
  cache.load(refs[0], ['price']);
  t.equal(reads(), before + 1, 'a forgotten segment is read again if asked for');
});

/** A stop that says a query waits on its `at`-th question (1-based) and not before or after. */
function stopAt(at: number): () => boolean {
  let asked = 0;
  return () => ++asked === at;
}

t.test('warming stopped for a waiting query goes on where it stopped, and ends as a warm in one go', async (t) => {
  const refs = segmentsWithIds(2);
  const once = cacheOf(64 << 20);
  t.equal(once.cache.warm(refs[0]), 'warmed');
  const wholeOnce = cacheOf(64 << 20);
  t.equal(wholeOnce.cache.warm(refs[0], true), 'warmed');

  // Without ids: stopped before its second column; a query then reads that column itself.
  const paused = cacheOf(64 << 20);
  t.equal(paused.cache.warm(refs[0], false, stopAt(2)), 'paused', 'stopped before the second column');
  t.equal(paused.reads(), 1, 'one column read before it stopped');
  paused.cache.beginQuery();
  paused.cache.load(refs[0], ['tag']);
  t.equal(paused.reads(), 2, 'the waiting query reads the column it lacks');
  t.equal(paused.cache.warm(refs[0], false, stopAt(99)), 'warmed', 'goes on (the entry is warming\'s, not a query\'s)');
  t.equal(paused.reads(), 2, 'and reads nothing twice');
  t.equal(paused.cache.usedBytes, once.cache.usedBytes, 'the same bytes as a warm in one go');
  t.equal(paused.cache.warmedCompactBytes, once.cache.warmedCompactBytes, 'and the same bytes a row for the pool');
  t.equal(paused.cache.warm(refs[0]), 'cached', 'warmed: a later warm finds it cached');

  // Whole: stopped at every step (each column, then the times), it still ends held and whole.
  const whole = cacheOf(64 << 20);
  let calls = 0;
  let outcome = 'paused';
  while (outcome === 'paused' && calls < 10) {
    calls++;
    outcome = whole.cache.warm(refs[0], true, stopAt(calls % 2 === 1 ? 1 : 2));
  }
  t.equal(outcome, 'warmed');
  t.ok(calls > 3, `stopped along the way (${calls} calls)`);
  t.equal(whole.reads(), 3, 'each column read once');
  t.equal(whole.cache.usedBytes, wholeOnce.cache.usedBytes, 'the same bytes as whole in one go, times decoded');
  t.equal(whole.cache.warmedCompactBytes, wholeOnce.cache.warmedCompactBytes);
  whole.cache.beginQuery();
  t.equal(systemBytes(whole.cache.load(refs[0], null)), 3 * 8 * 1000, 'its times decoded');
  t.equal(whole.reads(), 3, 'every column from memory');

  // Stopped while warmed whole, then posted again without (a newer segment is the one held by
  // then): it goes on with the columns without ids and is warmed, not left half as 'cached'.
  const demoted = cacheOf(64 << 20);
  t.equal(demoted.cache.warm(refs[0], true, stopAt(2)), 'paused');
  t.equal(demoted.cache.warm(refs[0]), 'warmed');
  t.equal(demoted.cache.usedBytes, once.cache.usedBytes, 'the columns without ids, as a warm without ids in one go');

  // The ids added after: stopped before its column, then on with the allowance it had.
  const rest = cacheOf(64 << 20);
  t.equal(rest.cache.warm(refs[1]), 'warmed');
  t.equal(rest.cache.warmRest(refs[1], 1_000, stopAt(1)), 'paused');
  t.equal(rest.cache.warmRest(refs[1], 1_000), 'warmed');
  const restOnce = cacheOf(64 << 20);
  t.equal(restOnce.cache.warm(refs[1]), 'warmed');
  t.equal(restOnce.cache.warmRest(refs[1], 1_000), 'warmed');
  t.equal(rest.cache.usedBytes, restOnce.cache.usedBytes, 'the same as added in one go');
  t.equal(rest.cache.warmRest(refs[1], 1_000), 'cached', 'then nothing is left to add');
});

t.test('a warm that finds no room drops what it added, stopped before or not', async (t) => {
  const refs = segments(2);
  const probe = readSegment(refs[0].file, ['price']);
  // Room for the price column, not for price and tag.
  const { cache } = cacheOf(columnsBytes(probe) + 10);
  t.equal(cache.warm(refs[0], false, stopAt(2)), 'paused', 'the price column is in');
  t.ok(cache.usedBytes > 0);
  t.equal(cache.warm(refs[0]), 'full', 'the tag column does not fit');
  t.equal(cache.usedBytes, 0, 'the price column went with it: warming leaves no half segment');
});
