/**
 * Read-ahead of segment files: segmentRanges names every byte readSegment reads for the paths
 * asked (bit-packed codes, dictionaries, extras, lists included) and no path with a wide
 * dictionary; a segment's read plan reads, round by round, every byte its layout and then the
 * scan read; ReadAhead runs a plan on libuv's pool to its end, in pieces, and drops quietly a
 * file gone or a plan that fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { READ_AHEAD_READ_BYTES, READ_AHEAD_TAIL_BYTES } from '../../../../../engine/base/limits.js';
import { IpcFile } from '../../../../../engine/storage/segment/ipc-read.js';
import { ReadAhead, type ReadPlan } from '../../../../../engine/storage/segment/read-ahead.js';
import { readSegment, segmentRanges, segmentReadPlan } from '../../../../../engine/storage/segment/reader.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';
import { buildChunk, viewChunk, type TestRow } from '../../../../helpers/test-chunk.js';

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-read-ahead-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const ROWS = 5000;
/** Seeded: 0 <= next() < 1. */
let seed = 12345;
const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const rows: TestRow[] = Array.from({ length: ROWS }, (_, i) => ({
  ts: Date.UTC(2024, 2, 5) + i * 997,
  props: {
    // 200 values in no order ZSTD finds (25 rows each, not an id): bit-packed codes (layout.ts).
    device: `device ${Math.floor(next() * 200)}`,
    price: i % 97 === 0 ? null : (i * 7919) % 10_000 / 100,
    mixed: i % 5 === 0 ? `text ${i % 4}` : i % 11,
    flag: i % 3 === 0,
    tags: i % 7 === 0 ? [`t${i % 3}`, `n${i}`] : undefined,
    'user.id': `user-${i}-${(i * 2654435761) % 1e9}`,
  },
}));

async function drained(ahead: ReadAhead): Promise<void> {
  for (let turns = 0; ahead.pending > 0; turns++) {
    if (turns > 10_000) throw new Error('read-ahead never ended');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

t.test('the ranges hold every byte readSegment reads for the paths; wide dictionaries are left out', async (t) => {
  const file = path.join(tempDir(), 'segment.arrow');
  writeSegment(file, buildChunk(rows), { device: 'string', price: 'num', mixed: 'num', flag: 'bool', tags: 'list', 'user.id': 'string' });
  const ipc = IpcFile.open(file)!;
  t.equal(ipc.fields.find((field) => field.name === 'device')!.metadata.get('tally.codes'), 'bitpacked', 'device\'s codes are bit-packed');
  ipc.close();
  const size = fs.statSync(file).size;
  t.same(segmentRanges(file, ['user.id']), [], 'an id column (an entry a row) is not read ahead');
  t.same(segmentRanges(file, ['device', 'user.id']), segmentRanges(file, ['device']), 'nor beside another');
  for (const paths of [['device'], ['price'], ['mixed'], ['flag'], ['tags'], ['device', 'price']]) {
    const ranges = segmentRanges(file, paths);
    const reads: [number, number][] = [];
    const readSync = fs.readSync;
    fs.readSync = ((fd: number, buffer: NodeJS.ArrayBufferView, offset: number, length: number, position: number) => {
      reads.push([position, length]);
      return readSync(fd, buffer, offset, length, position);
    }) as typeof fs.readSync;
    let chunk;
    try {
      chunk = readSegment(file, paths);
    } finally {
      fs.readSync = readSync;
    }
    t.same(viewChunk(chunk), viewChunk(readSegment(file, paths)), `${paths}: the same chunk`);
    t.ok(reads.length > 0, `${paths}: readSegment read the file`);
    const outside = reads.filter(([at, length]) => !ranges.some((_, r) => r % 2 === 0 && at >= ranges[r] && at + length <= ranges[r] + ranges[r + 1]));
    t.same(outside, [], `${paths}: every read lies in a range`);
    const total = ranges.filter((_, r) => r % 2 === 1).reduce((sum, length) => sum + length, 0);
    t.ok(total > 0 && total < size / 2, `${paths}: ${total} of ${size} bytes`);
    for (let r = 2; r < ranges.length; r += 2) t.ok(ranges[r] > ranges[r - 2] + ranges[r - 1], 'ranges sorted, apart');
  }
});

t.test('ReadAhead reads a plan round by round to its end, in pieces; a file gone or a plan that throws is dropped', async (t) => {
  const dir = tempDir();
  const file = path.join(dir, 'big.bin');
  const size = 2 * READ_AHEAD_READ_BYTES + 12_345;
  fs.writeFileSync(file, Buffer.alloc(size, 7));
  const ahead = new ReadAhead();
  const rounds: number[] = [];
  const plan: ReadPlan = (round) => {
    rounds.push(round);
    return round === 0 ? [0, 100, 1000, size - 1000] : round === 1 ? [] : round === 2 ? [size - 10, 50] : null;
  };
  ahead.request(file, plan);
  ahead.request(path.join(dir, 'gone.arrow'), () => {
    t.fail('a file that cannot be opened has no plan to run');
    return null;
  });
  ahead.request(file, () => {
    throw new Error('no plan');
  });
  t.ok(ahead.pending > 0);
  await drained(ahead);
  t.same(rounds, [0, 1, 2, 3], 'each round once, in order, the next once the reads before ended');
  t.equal(ahead.filesRead, 3);
  t.equal(ahead.bytesRead, 100 + (size - 1000) + 10, 'every byte of every range, a read past the end ending short');
});

t.test('a segment\'s read plan: its footer, then every header the layout reads, then the paths\' bytes', async (t) => {
  const file = path.join(tempDir(), 'planned.arrow');
  writeSegment(file, buildChunk(rows), { device: 'string', price: 'num', mixed: 'num', flag: 'bool', tags: 'list', 'user.id': 'string' });
  const paths = ['device', 'price', 'mixed'];
  const plan = segmentReadPlan(file, paths);
  const fd = fs.openSync(file, 'r');
  t.teardown(() => fs.closeSync(fd));
  const size = fs.fstatSync(fd).size;
  const inside = (ranges: readonly number[]) => ([at, length]: [number, number]) =>
    ranges.some((_, r) => r % 2 === 0 && at >= ranges[r] && at + length <= ranges[r] + ranges[r + 1]);
  const recorded = (run: () => unknown): [number, number][] => {
    const reads: [number, number][] = [];
    const readSync = fs.readSync;
    fs.readSync = ((target: number, buffer: NodeJS.ArrayBufferView, offset: number, length: number, position: number) => {
      reads.push([position, length]);
      return readSync(target, buffer, offset, length, position);
    }) as typeof fs.readSync;
    try {
      run();
    } finally {
      fs.readSync = readSync;
    }
    return reads;
  };
  const tail = plan(0, fd)!;
  t.same(tail, [Math.max(0, size - READ_AHEAD_TAIL_BYTES), Math.min(size, READ_AHEAD_TAIL_BYTES)], 'round 0: the footer region');
  let headers: readonly number[] = [];
  const footerReads = recorded(() => (headers = plan(1, fd)!));
  t.ok(footerReads.length > 0 && footerReads.every(inside(tail)), 'round 1 reads only what round 0 read');
  let data: readonly number[] = [];
  const layoutReads = recorded(() => (data = plan(2, fd)!));
  t.ok(layoutReads.length > 0, 'round 2 parses the layout');
  t.same(layoutReads.filter((read) => !inside(tail)(read) && !inside(headers)(read)), [], 'from what rounds 0 and 1 read');
  const scanReads = recorded(() => readSegment(file, paths));
  t.ok(scanReads.length > 0);
  t.same(scanReads.filter((read) => !inside(data)(read)), [], 'a scan of the paths reads only what round 2 read');
  t.equal(plan(3, fd), null, 'then it is done');
  const again = segmentReadPlan(file, paths);
  t.same(again(0, fd), data, 'a layout the thread keeps: the paths\' bytes at once');
  t.equal(again(1, fd), null);
});
