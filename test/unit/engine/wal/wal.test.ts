/**
 * The WAL against real files in a temp directory: round trip, group commit, rotation, failure, and
 * the seeded crash fuzz (truncate at every byte offset, reopen, assert a clean prefix).
 */
import { constants, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { RECORD_HEADER_BYTES, encodeRecord, frameInPlace } from '../../../../engine/wal/record.js';
import { segmentPath } from '../../../../engine/wal/segment-file.js';
import {
  WAL_RECOVER_AFTER_MS, WAL_ZERO_AHEAD_BYTES, WAL_ZERO_CHUNK_BYTES, WAL_ZERO_GROUP_BYTES_MAX,
} from '../../../../engine/base/limits.js';
import { Wal, unwritten, type WalLog, type WalOptions } from '../../../../engine/wal/wal.js';
import { mulberry32 } from '../../../helpers/random.js';

const quiet: WalLog = () => {};
const durable: WalOptions = { fsync: true, log: quiet };

t.test('replays what was appended, in order, after reopen', async (t) => {
  const dir = await tempDir(t);
  const { wal, replay, fileIndexes } = await Wal.open(dir, durable);
  t.same([replay, fileIndexes, wal.currentIndex], [[], [], 1]);
  for (const text of ['a', '', 'ccc']) await wal.append(bytes(text));
  await wal.close();
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), ['a', '', 'ccc']);
  t.same(reopened.fileIndexes, [1]);
  t.same(reopened.cuts, []);
  t.equal(reopened.wal.currentIndex, 2);
  await reopened.wal.close();
});

t.test('concurrent appends share fdatasyncs and keep call order', async (t) => {
  const dir = await tempDir(t);
  const { wal } = await Wal.open(dir, durable);
  const count = 500;
  await Promise.all(Array.from({ length: count }, (_, i) => wal.append(bytes(`event-${i}`))));
  t.equal(wal.stats.appends, count);
  t.equal(wal.stats.syncs, wal.stats.groups, 'one fdatasync per group');
  t.ok(wal.stats.syncs <= 3, `500 appends took ${wal.stats.syncs} syncs`);
  await wal.close();
  const { replay, wal: reopened } = await Wal.open(dir, durable);
  t.same(replay.map(text), Array.from({ length: count }, (_, i) => `event-${i}`));
  await reopened.close();
});

/** The open flags of this process's descriptor of `path` (from /proc/self/fdinfo), or null when it has none. */
async function openFlags(path: string): Promise<number | null> {
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target !== path) continue;
    const info = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8');
    return parseInt(/^flags:\s*([0-7]+)/m.exec(info)![1]!, 8);
  }
  return null;
}

t.test('a durable segment is written O_DSYNC: a group is one synchronized write, and only then acknowledged', {
  skip: process.platform === 'linux' ? false : 'reads /proc/self/fdinfo',
}, async (t) => {
  const dir = await tempDir(t);
  const { wal } = await Wal.open(dir, durable);
  const path = segmentPath(dir, wal.currentIndex);
  const flags = await openFlags(path);
  t.not(flags, null, 'the current segment is open');
  t.equal(flags! & constants.O_DSYNC, constants.O_DSYNC, 'with O_DSYNC');
  await Promise.all([wal.append(bytes('a')), wal.append(bytes('b'))]);
  t.equal(wal.stats.syncs, wal.stats.groups, 'each group counted as one fdatasync');
  await wal.rotate();
  t.equal((await openFlags(segmentPath(dir, wal.currentIndex)))! & constants.O_DSYNC, constants.O_DSYNC, 'a rotated-to segment too');
  await wal.close();
  const plainDir = await tempDir(t);
  const plain = await Wal.open(plainDir, { fsync: false, log: quiet });
  t.equal((await openFlags(segmentPath(plainDir, plain.wal.currentIndex)))! & constants.O_DSYNC, 0, 'without fsync it is not');
  await plain.wal.close();
});

t.test('a frame built in place (room left for the header) equals encodeRecord and replays', async (t) => {
  const payload = bytes('in place');
  const frame = Buffer.alloc(RECORD_HEADER_BYTES + payload.length);
  frame.set(payload, RECORD_HEADER_BYTES);
  t.same(frameInPlace(frame), encodeRecord(payload));
  const dir = await tempDir(t);
  const { wal } = await Wal.open(dir, durable);
  await Promise.all([wal.append(bytes('one')), wal.appendFrame(frame), wal.append(bytes('three'))]);
  await wal.close();
  const { replay, wal: reopened } = await Wal.open(dir, durable);
  t.same(replay.map(text), ['one', 'in place', 'three']);
  await reopened.close();
});

t.test('a short group write resumes from the first unwritten byte', async (t) => {
  const frames = ['abc', 'de', 'fghi'].map((s) => Buffer.from(s));
  const rest = (from: number) => Buffer.concat(unwritten(frames, from)).toString();
  t.same([0, 1, 3, 4, 5, 8].map(rest), ['abcdefghi', 'bcdefghi', 'defghi', 'efghi', 'fghi', 'i']);
  t.same(unwritten(frames, 9), [], 'nothing left at the end');
  t.equal(unwritten(frames, 5)[0], frames[2], 'whole frames are passed as they are');
});

t.test('rotate waits for earlier appends and later appends go to the new segment', async (t) => {
  const dir = await tempDir(t);
  const { wal } = await Wal.open(dir, durable);
  const done: string[] = [];
  const appends = ['a', 'b'].map((x) => wal.append(bytes(x)).then(() => done.push(x)));
  const rotated = wal.rotate().then((closed) => (done.push('rotate'), closed));
  const later = wal.append(bytes('c')).then(() => done.push('c'));
  await Promise.all([...appends, rotated, later]);
  t.same(done, ['a', 'b', 'rotate', 'c']);
  t.equal(await rotated, 1);
  t.equal(wal.currentIndex, 2);
  await wal.close();
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), ['a', 'b', 'c']);
  t.same(reopened.fileIndexes, [1, 2]);
  t.equal(reopened.wal.currentIndex, 3);
  await reopened.wal.close();
});

t.test('small groups are written into room zeroed ahead of them; rotate and close cut the room off', async (t) => {
  const dir = await tempDir(t);
  const warnings: string[] = [];
  const log: WalLog = (level, message) => void (level === 'warn' && warnings.push(message));
  const { wal } = await Wal.open(dir, { fsync: true, log });
  for (const x of ['a', 'b', 'c']) await wal.append(bytes(x));
  const written = frameEnds(['a', 'b', 'c'].map(bytes)).at(-1)!;
  const open = (await stat(segmentPath(dir, 1))).size;
  t.ok(open > written + WAL_ZERO_AHEAD_BYTES, `the open segment holds ${open} bytes for ${written} of frames`);
  await wal.rotate();
  t.equal((await stat(segmentPath(dir, 1))).size, written, 'the closed segment ends at its last frame');
  await wal.append(bytes('d'));
  await wal.close();
  t.equal(wal.stats.zeroedBytes, 2 * WAL_ZERO_CHUNK_BYTES, 'one chunk zeroed in each segment');
  t.equal((await stat(segmentPath(dir, 2))).size, frameEnds([bytes('d')])[0], 'close cuts the room off too');
  const reopened = await Wal.open(dir, { fsync: true, log });
  t.same(reopened.replay.map(text), ['a', 'b', 'c', 'd']);
  t.same(reopened.cuts, [], 'no torn tail');
  t.same(warnings, []);
  await reopened.wal.close();
});

t.test('the last segment\'s zeroed room is cut off at open; zeros ending a closed segment are lost frames', async (t) => {
  const dir = await tempDir(t);
  const frames = (xs: string[]) => Buffer.concat(xs.map((x) => encodeRecord(bytes(x))));
  // What a crash leaves: room zeroed past the frames of the last segment.
  await writeFile(segmentPath(dir, 1), Buffer.concat([frames(['a', 'b']), Buffer.alloc(4096)]));
  const warnings: string[] = [];
  const log: WalLog = (level, message) => void (level === 'warn' && warnings.push(message));
  const opened = await Wal.open(dir, { fsync: true, log });
  t.same([opened.replay.map(text), opened.cuts, warnings], [['a', 'b'], [], []], 'a clean end');
  t.equal((await stat(segmentPath(dir, 1))).size, frames(['a', 'b']).length, 'its room is cut off: it is a closed segment now');
  await opened.wal.close();

  // A closed segment ending in zeros: the device lost frames that were acknowledged.
  const lost = await tempDir(t);
  await writeFile(segmentPath(lost, 1), Buffer.concat([frames(['a']), Buffer.alloc(RECORD_HEADER_BYTES + 1)]));
  await writeFile(segmentPath(lost, 2), frames(['c']));
  const reported = await Wal.open(lost, { fsync: true, log });
  t.same(reported.replay.map(text), ['a', 'c'], 'the clean prefix and the later segment replay');
  t.match(reported.cuts, [{ fileIndex: 1, cleanBytes: frames(['a']).length, reason: 'zeroed-room', truncated: false }]);
  t.equal(warnings.length, 1, 'with a warning');
  t.equal((await stat(segmentPath(lost, 1))).size, frames(['a']).length + RECORD_HEADER_BYTES + 1, 'left intact for inspection');
  await reported.wal.close();
});

t.test('a batch-sized group zeroes nothing, and without fsync nothing is zeroed', async (t) => {
  for (const [options, payload] of [[durable, WAL_ZERO_GROUP_BYTES_MAX + 1], [{ fsync: false, log: quiet }, 10]] as const) {
    const dir = await tempDir(t);
    const { wal } = await Wal.open(dir, options);
    await wal.append(new Uint8Array(payload).fill(7));
    await wal.close();
    t.equal(wal.stats.zeroedBytes, 0);
    t.equal((await stat(segmentPath(dir, 1))).size, RECORD_HEADER_BYTES + payload, 'the file holds the frame only');
  }
});

t.test('groups crossing zeroed chunks while they are zeroed lose no byte', async (t) => {
  const dir = await tempDir(t);
  // Each chunk is zeroed 5 ms late, so groups queue up to reach into it meanwhile.
  const { wal } = await Wal.open(dir, { ...durable, beforeZero: () => new Promise((resolve) => setTimeout(resolve, 5)) });
  const random = mulberry32(0x2e20);
  // ~6 MiB in small groups (16 appends in flight, up to 4,000 bytes each): many groups start
  // while a chunk is being zeroed, some of them reaching into it.
  const payloads = Array.from({ length: 3000 }, () => randomBytes(random, 4000));
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    // Bound: the 3,000 payloads, shared by the 16 loops.
    while (next < payloads.length) await wal.append(payloads[next++]!);
  }));
  await wal.close();
  t.ok(wal.stats.zeroedBytes >= 4 * WAL_ZERO_CHUNK_BYTES, `${wal.stats.zeroedBytes} bytes zeroed ahead`);
  const reopened = await Wal.open(dir, durable);
  t.equal(reopened.replay.length, payloads.length);
  t.ok(sameAll(reopened.replay, payloads), 'every payload replays, in order, byte for byte');
  t.same(reopened.cuts, []);
  await reopened.wal.close();
});

t.test('removeUpTo deletes closed segments only, and they stay deleted', async (t) => {
  const dir = await tempDir(t);
  const { wal } = await Wal.open(dir, durable);
  await wal.append(bytes('old'));
  const closed = await wal.rotate();
  await wal.append(bytes('new'));
  t.same(await wal.removeUpTo(closed), [1]);
  t.same(await wal.removeUpTo(closed), [], 'nothing left to remove');
  await t.rejects(stat(segmentPath(dir, 1)), { code: 'ENOENT' });
  await t.rejects(wal.removeUpTo(wal.currentIndex), { name: 'AssertionError' });
  await wal.close();
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), ['new']);
  t.same(reopened.fileIndexes, [2]);
  t.same(await reopened.wal.removeUpTo(2), [2], 'replayed segments are closed');
  await reopened.wal.close();
});

t.test('a failed fdatasync rejects its whole group and every later append', async (t) => {
  const dir = await tempDir(t);
  let syncs = 0;
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const beforeSync = async () => {
    const call = ++syncs; // this call's number: a second group's sync may begin while the first is held
    if (call === 1) await held; // keep the first group in flight while the next one queues
    if (call === 2) throw new Error('EIO (simulated)');
  };
  const { wal } = await Wal.open(dir, { ...durable, beforeSync });
  const first = wal.append(bytes('first'));
  const group = ['a', 'b', 'c'].map((x) => wal.append(bytes(x)));
  release();
  await first;
  const errors = await Promise.all(group.map(rejection));
  t.match(errors, Array(3).fill({ error_code: 'ServiceUnavailableError', cause: /EIO/ }));
  t.equal(errors[0], errors[2], 'the group shares one failure');
  t.equal(syncs, 2, 'the three queued appends shared one sync');
  t.equal(await rejection(wal.append(bytes('after'))), errors[0], 'the failure holds for a while');
  t.equal(await rejection(wal.rotate()), errors[0]);
  await new Promise((resolve) => setTimeout(resolve, WAL_RECOVER_AFTER_MS + 20));
  await wal.append(bytes('recovered'));
  t.equal(wal.stats.recoveries, 1, 'the segment was cut back to its last durable byte and synced');
  await wal.close();
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), ['first', 'recovered'], 'nothing of the failed group replays');
  t.same(reopened.cuts, [], 'and no torn bytes were left behind');
  await reopened.wal.close();
});

t.test('two groups are in flight at once; one behind a failed group is refused even though its own write succeeded', async (t) => {
  const dir = await tempDir(t);
  let syncs = 0;
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let secondWritten = () => {};
  const second = new Promise<void>((resolve) => (secondWritten = resolve));
  const beforeSync = async () => {
    syncs += 1;
    if (syncs === 2) secondWritten();
    if (syncs === 1) {
      await held; // the first group is held here while the second one starts
      throw new Error('EIO (simulated)');
    }
  };
  const { wal } = await Wal.open(dir, { ...durable, beforeSync });
  const first = rejection(wal.append(bytes('first')));
  let settled = false;
  const behind = ['a', 'b'].map((x) => wal.append(bytes(x)));
  const behindSettled = Promise.allSettled(behind).then((all) => { settled = true; return all; });
  await second;
  t.equal(syncs, 2, 'the second group started its write before the first one finished');
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.notOk(settled, 'and is not acknowledged before the first group settles');
  release();
  const error = await first;
  t.match(error, { error_code: 'ServiceUnavailableError', cause: /EIO/ });
  const outcomes = await behindSettled;
  t.same(outcomes.map((o) => o.status), ['rejected', 'rejected'], 'the group behind a failed one is refused');
  t.equal((outcomes[0] as PromiseRejectedResult).reason, error, 'with the same failure');
  t.equal(wal.stats.appends, 0, 'nothing acknowledged');
  await new Promise((resolve) => setTimeout(resolve, WAL_RECOVER_AFTER_MS + 20));
  await wal.append(bytes('recovered'));
  await wal.close();
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), ['recovered'], 'the refused group\'s bytes were cut back, nothing of it replays');
  t.same(reopened.cuts, []);
  await reopened.wal.close();
});

t.test('groups in flight are acknowledged in order and replay in order', async (t) => {
  const dir = await tempDir(t);
  const order: string[] = [];
  let syncs = 0;
  // The first group's sync is the slow one: the second finishes its write first, and still waits.
  const beforeSync = async () => {
    syncs += 1;
    if (syncs === 1) await new Promise((resolve) => setTimeout(resolve, 30));
  };
  const { wal } = await Wal.open(dir, { ...durable, beforeSync });
  const all = [wal.append(bytes('one')).then(() => order.push('one'))];
  await new Promise((resolve) => setImmediate(resolve));
  all.push(wal.append(bytes('two')).then(() => order.push('two')));
  await Promise.all(all);
  t.same(order, ['one', 'two']);
  t.equal(wal.stats.groups, 2);
  await wal.close();
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), ['one', 'two']);
  await reopened.wal.close();
});

t.test('bytes of refused groups are cut off when the last of them settles and again at close: they never replay', async (t) => {
  // Batch-sized groups zero no room ahead, so nothing but the failure itself makes close cut the file.
  const big = (tag: string) => Buffer.concat([bytes(tag), Buffer.alloc(WAL_ZERO_GROUP_BYTES_MAX + 1, 0x61)]);
  const dir = await tempDir(t);
  let writes = -1; // the first write, 'acknowledged', passes
  let sizeWritten = 0;
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const written: (() => void)[] = [];
  const firstWritten = new Promise<void>((resolve) => written.push(resolve));
  const secondWritten = new Promise<void>((resolve) => written.push(resolve));
  // The first group's bytes reach the file and its sync fails (EIO from an O_DSYNC write); the group
  // behind it is written in full, and refused because the one before it failed.
  const afterWrite = async () => {
    const call = ++writes;
    if (call === 2) sizeWritten = statSync(segmentPath(dir, 1)).size;
    if (call > 0) written[call - 1]?.();
    if (call === 1) {
      await held;
      throw new Error('EIO (simulated)');
    }
  };
  const { wal } = await Wal.open(dir, { ...durable, afterWrite });
  await wal.append(big('acknowledged'));
  const first = rejection(wal.append(big('first')));
  await firstWritten; // so the next append is a group of its own
  const behind = rejection(wal.append(big('second')));
  await secondWritten;
  release();
  t.match(await first, { error_code: 'ServiceUnavailableError', cause: /EIO/ });
  t.match(await behind, { error_code: 'ServiceUnavailableError', cause: /EIO/ });
  const acknowledgedEnd = frameEnds([big('acknowledged')]).at(-1)!;
  t.ok(sizeWritten > acknowledgedEnd + 2 * WAL_ZERO_GROUP_BYTES_MAX, 'both refused groups reached the file');
  t.equal(wal.stats.zeroedBytes, 0, 'no room was zeroed');
  // Refused at once (the failure holds), and only after the groups before it settled.
  t.match(await rejection(wal.append(bytes('later'))), { error_code: 'ServiceUnavailableError' });
  t.equal((await stat(segmentPath(dir, 1))).size, acknowledgedEnd, 'cut off once the last refused group settled: a crash now replays none of them');
  await wal.close();
  t.equal((await stat(segmentPath(dir, 1))).size, acknowledgedEnd, 'and close keeps the file at its last acknowledged byte');
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), [text(big('acknowledged'))], 'no refused frame replays, so a retry stores it once');
  t.same(reopened.cuts, []);
  await reopened.wal.close();
});

t.test('a full disk refuses appends with a clear 503 until space returns', async (t) => {
  const dir = await tempDir(t);
  let full = true;
  const beforeSync = () => {
    if (full) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  };
  const { wal } = await Wal.open(dir, { ...durable, beforeSync });
  const error = await rejection(wal.append(bytes('lost')));
  t.match(error, { error_code: 'ServiceUnavailableError', message: /disk is full.*not stored.*resume/ });
  t.equal(wal.failure, error, 'callers can refuse before doing any work');
  await new Promise((resolve) => setTimeout(resolve, WAL_RECOVER_AFTER_MS + 20));
  t.match(await rejection(wal.append(bytes('still full'))), { error_code: 'ServiceUnavailableError' }, 'recovery tried and failed');
  full = false;
  await new Promise((resolve) => setTimeout(resolve, WAL_RECOVER_AFTER_MS + 20));
  await wal.append(bytes('space back'));
  t.equal(wal.failure, null);
  await wal.close();
  const reopened = await Wal.open(dir, durable);
  t.same(reopened.replay.map(text), ['space back']);
  await reopened.wal.close();
});

t.test('fuzz: a crash at every byte offset of the tail replays a clean prefix', async (t) => {
  const random = mulberry32(0x7a11);
  const payloads = Array.from({ length: 40 }, () => randomBytes(random, 48));
  const source = await writeLog(await tempDir(t), payloads);
  const ends = frameEnds(payloads);
  const tailStart = ends[payloads.length - 4]!;
  const scratch = await tempDir(t);
  let checked = 0;
  // Bound: every offset of the last four frames, twice (a growing file, and one whose room past
  // the crash was zeroed ahead), a few hundred reopen cycles each.
  for (let at = 2 * tailStart; at <= 2 * source.length + 1; at++) {
    const offset = at >> 1;
    const zeroed = (at & 1) === 1;
    const dir = join(scratch, String(at));
    const found = zeroed ? Buffer.concat([source.subarray(0, offset), Buffer.alloc(4096)]) : source.subarray(0, offset);
    await writeFile(join(await ensureDir(dir), '000001.wal'), found);
    const cleanCount = ends.filter((end) => end <= offset).length;
    const cleanBytes = cleanCount === 0 ? 0 : ends[cleanCount - 1]!;
    const opened = await Wal.open(dir, durable);
    const prefix = payloads.slice(0, cleanCount);
    if (!sameAll(opened.replay, prefix)) t.fail(`offset ${offset}: replay is not the prefix`);
    const torn = offset !== cleanBytes;
    // A torn tail and zeroed room are both cut back to the clean prefix.
    if ((await stat(segmentPath(dir, 1))).size !== cleanBytes) t.fail(`offset ${offset}: size`);
    if (opened.cuts.length !== (torn ? 1 : 0)) t.fail(`offset ${offset}: cuts`);
    await opened.wal.append(bytes('after-recovery'));
    await opened.wal.close();
    const again = await Wal.open(dir, durable);
    if (!sameAll(again.replay, [...prefix, bytes('after-recovery')])) t.fail(`offset ${offset}`);
    if (again.cuts.length !== 0) t.fail(`offset ${offset}: recovery left a torn tail`);
    await again.wal.close();
    await rm(dir, { recursive: true });
    checked += 1;
  }
  t.equal(checked, 2 * (source.length - tailStart + 1), 'every offset of the tail was checked, with and without zeroed room');
});

t.test('fuzz: a flipped byte in the last record is detected and cut', async (t) => {
  const random = mulberry32(0xb175);
  const payloads = Array.from({ length: 8 }, () => randomBytes(random, 64));
  const source = await writeLog(await tempDir(t), payloads);
  const lastStart = frameEnds(payloads).at(-2)!;
  const scratch = await tempDir(t);
  // Bound: 200 seeded trials.
  for (let trial = 0; trial < 200; trial++) {
    const damaged = Buffer.from(source);
    const at = lastStart + Math.floor(random() * (source.length - lastStart));
    damaged[at] = damaged[at]! ^ (1 + Math.floor(random() * 255));
    const dir = join(scratch, String(trial));
    await writeFile(join(await ensureDir(dir), '000001.wal'), damaged);
    const opened = await Wal.open(dir, durable);
    if (!sameAll(opened.replay, payloads.slice(0, -1))) t.fail(`byte ${at} flip not detected`);
    if (opened.cuts[0]?.cleanBytes !== lastStart) t.fail(`byte ${at}: wrong cut`);
    await opened.wal.close();
  }
  t.pass('200 flips detected');
});

t.test('corruption in a closed segment warns, keeps its prefix, replays later ones', async (t) => {
  const dir = await tempDir(t);
  const { wal } = await Wal.open(dir, durable);
  for (const x of ['a', 'b']) await wal.append(bytes(x));
  await wal.rotate();
  await wal.append(bytes('c'));
  await wal.close();
  const first = await readFile(segmentPath(dir, 1));
  first[frameEnds([bytes('a'), bytes('b')])[1]! - 1] ^= 0xff; // the last byte of 'b'
  await writeFile(segmentPath(dir, 1), first);
  const warnings: string[] = [];
  const log: WalLog = (level, message) => void (level === 'warn' && warnings.push(message));
  const opened = await Wal.open(dir, { fsync: true, log });
  t.same(opened.replay.map(text), ['a', 'c']);
  t.equal(warnings.length, 1);
  t.match(opened.cuts, [{ fileIndex: 1, reason: 'crc-mismatch', truncated: false }]);
  t.equal((await stat(segmentPath(dir, 1))).size, first.length, 'closed segment left intact');
  await opened.wal.close();
});

async function tempDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tally-wal-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function ensureDir(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Appends `payloads` through a real Wal and returns the bytes of its one segment (close cut its zeroed room off). */
async function writeLog(dir: string, payloads: Uint8Array[]): Promise<Buffer> {
  const { wal } = await Wal.open(dir, durable);
  for (const payload of payloads) await wal.append(payload);
  await wal.close();
  const file = await readFile(segmentPath(dir, 1));
  t.equal(file.length, frameEnds(payloads).at(-1), 'the segment holds the frames only');
  return file;
}

/** The byte offset just past each frame, computed from the codec, not from the file. */
function frameEnds(payloads: Uint8Array[]): number[] {
  let end = 0;
  return payloads.map((payload) => (end += encodeRecord(payload).length));
}

function sameAll(actual: Uint8Array[], expected: Uint8Array[]): boolean {
  if (actual.length !== expected.length) return false;
  return actual.every((payload, i) => Buffer.compare(payload, expected[i]!) === 0);
}

function randomBytes(random: () => number, lengthMax: number): Uint8Array {
  const out = new Uint8Array(Math.floor(random() * (lengthMax + 1)));
  for (let i = 0; i < out.length; i++) out[i] = Math.floor(random() * 256);
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error('expected a rejection'),
    (error: unknown) => error,
  );
}

function bytes(text: string): Uint8Array {
  return Buffer.from(text);
}

function text(payload: Uint8Array): string {
  return Buffer.from(payload).toString();
}
