/**
 * zstd record batches (compression.ts): frames as clients write them, with and without a declared
 * content size, several in one batch, and the bound — a frame whose blocks could hold more than
 * the room left has its exact content size read without inflating, and is refused at the block
 * that passes the bound; bombs and malformed frames are refused with a DecompressError.
 */
import t from 'tap';
import { Encoder } from '@toondepauw/node-zstd';
import { codecBytes } from '../../../../helpers/random.js';
import { DecompressError, decompress } from '../../../../../server/kafka/protocol/compression.js';
import { zstdContentSize } from '../../../../../server/kafka/protocol/zstd.js';

const ZSTD = 4;
const MB = 1024 * 1024;

/** JSON records, one a line, as a producer's batch holds them. */
function records(length: number): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < length; i++) {
    const line = JSON.stringify({ i, user: `u${(i * 7919) % 100_000}`, event: 'click', ts: 1_700_000_000_000 + i * 37,
      path: `/p/${i % 1000}` }) + '\n';
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, length);
}

function inputOf(kind: 'records' | 'text' | 'noise' | 'run', length: number): Buffer {
  return kind === 'records' ? records(length) : codecBytes(length, kind);
}

/** The same frame with an 8-byte Frame_Content_Size field saying `size` (clients' stream frames have none). */
function withContentSize(frame: Buffer, size: number): Buffer {
  if (frame[4]! !== 0) throw new Error('expects a frame without content size, checksum or dictionary');
  const out = Buffer.alloc(frame.length + 8);
  frame.copy(out, 0, 0, 6);
  out[4] = 3 << 6;
  out.writeBigUInt64LE(BigInt(size), 6);
  frame.copy(out, 14, 6);
  return out;
}

/** A frame without content size (window 2 MB) of `blocks` RLE blocks of 128 KB each. */
function rleBomb(blocks: number): Buffer {
  const out = Buffer.alloc(6 + 4 * blocks);
  out.writeUInt32LE(0xfd2fb528, 0);
  out[5] = 11 << 3;
  for (let i = 0; i < blocks; i++) {
    out.writeUIntLE(((128 * 1024) << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0), 6 + 4 * i, 3);
  }
  return out;
}

t.test('frames as clients write them (no content size) decode at every level; their content size is read exactly', async (t) => {
  for (const level of [-5, 1, 3, 9, 19]) {
    for (const kind of ['records', 'text', 'noise', 'run'] as const) {
      for (const length of [0, 1, 131_073, 700_000]) {
        const input = inputOf(kind, length);
        const frame = new Encoder(level).encodeSync(input);
        const name = `level ${level}, ${length} bytes of ${kind}`;
        t.equal(zstdContentSize(frame), length, `${name}: content size without inflating`);
        const output = decompress(ZSTD, frame, 64 * MB);
        t.ok(Buffer.isBuffer(output) && output.equals(input), `${name}: same bytes`);
        // A bound of exactly the content: the blocks may say more (a compressed block may hold up
        // to 128 KB), so the frame is measured first and then inflated.
        t.ok(decompress(ZSTD, frame, length).equals(input), `${name}: a bound of exactly its content`);
        if (length > 0) {
          t.throws(() => decompress(ZSTD, frame, length - 1),
            { name: 'DecompressError', message: new RegExp(`^decompressed more than ${length - 1} bytes \\(${length} so far\\)$`) },
            `${name}: one byte less is refused`);
        }
      }
    }
  }
});

t.test('a frame that declares its content size decodes; declaring past the bound, or less than its blocks hold, is refused', async (t) => {
  const input = records(300_000);
  const frame = withContentSize(new Encoder(3).encodeSync(input), input.length);
  t.equal(zstdContentSize(frame), input.length);
  t.ok(decompress(ZSTD, frame, 64 * MB).equals(input), 'decodes');
  t.ok(decompress(ZSTD, frame, input.length).equals(input), 'a bound of exactly its content');
  t.throws(() => decompress(ZSTD, frame, input.length - 1),
    { name: 'DecompressError', message: `a frame declares ${input.length} bytes of content, more than ${input.length - 1}` });
  t.throws(() => decompress(ZSTD, withContentSize(new Encoder(3).encodeSync(input), 2 ** 40), 64 * MB),
    { name: 'DecompressError', message: `a frame declares ${2 ** 40} bytes of content, more than ${64 * MB}` });
  for (const bound of [64 * MB, input.length - 1]) {
    t.throws(() => decompress(ZSTD, withContentSize(new Encoder(3).encodeSync(input), input.length - 1), bound),
      DecompressError, `content past its declared size, bound ${bound}`);
  }
});

t.test('several frames and skippable frames make one content, bounded as a whole', async (t) => {
  const a = records(200_000);
  const b = codecBytes(150_000, 'text');
  const skippable = Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
  const batch = Buffer.concat([new Encoder(3).encodeSync(a), skippable, new Encoder(1).encodeSync(b)]);
  const both = Buffer.concat([a, b]);
  t.equal(zstdContentSize(batch), both.length);
  t.ok(decompress(ZSTD, batch, 64 * MB).equals(both), 'concatenated');
  t.ok(decompress(ZSTD, batch, both.length).equals(both), 'a bound of exactly the whole');
  t.throws(() => decompress(ZSTD, batch, both.length - 1), { message: /^decompressed more than \d+ bytes/ }, 'one byte less');
  t.throws(() => decompress(ZSTD, batch, a.length + 1000), { message: /^decompressed more than \d+ bytes/ }, 'the second frame passes');
  t.equal(decompress(ZSTD, skippable, 10).length, 0, 'skippable frames alone: no content');
  t.equal(decompress(ZSTD, Buffer.alloc(0), 10).length, 0, 'no frames: no content');
});

t.test('bombs are refused at the bound without inflating them', async (t) => {
  const rssBefore = process.memoryUsage().rss;
  t.throws(() => decompress(ZSTD, rleBomb(8192), 64 * MB), // 1 GB of RLE blocks
    { name: 'DecompressError', message: `decompressed more than ${64 * MB} bytes (${64 * MB + 128 * 1024} so far)` });
  // Compressed blocks: 16 MB of text whose blocks each inflate to up to 128 KB.
  const frame = new Encoder(1).encodeSync(Buffer.alloc(16 * MB, 'abcdefgh'));
  t.ok(frame.length < 16 * 1024, `${frame.length} bytes that inflate to 16 MB`);
  let message = '';
  try {
    decompress(ZSTD, frame, 2 * MB);
  } catch (error) {
    t.ok(error instanceof DecompressError, 'a DecompressError');
    message = (error as Error).message;
  }
  const soFar = Number(/^decompressed more than 2097152 bytes \((\d+) so far\)$/.exec(message)?.[1]);
  t.ok(soFar > 2 * MB && soFar <= 2 * MB + 128 * 1024, `stopped at the block that passes the bound (${soFar})`);
  const grown = process.memoryUsage().rss - rssBefore;
  t.ok(grown < 48 * MB, `RSS grew by ${Math.round(grown / MB)} MB`);
});

t.test('malformed frames are refused with a DecompressError', async (t) => {
  const input = records(400_000);
  const frame = new Encoder(3).encodeSync(input);
  t.throws(() => decompress(ZSTD, frame.subarray(0, 4), 64 * MB), { message: 'truncated zstd frame header' });
  t.throws(() => decompress(ZSTD, frame.subarray(0, 7), 64 * MB), { message: 'truncated zstd block header' });
  t.throws(() => decompress(ZSTD, frame.subarray(0, frame.length - 5), 64 * MB), { message: 'truncated zstd block' });
  t.throws(() => decompress(ZSTD, frame.subarray(0, 2), 64 * MB), { message: 'truncated zstd frame' });
  t.throws(() => decompress(ZSTD, Buffer.from('not a zstd frame'), 64 * MB), { message: /^zstd frame magic/ });
  const window = Buffer.from(frame);
  window[5] = 17 << 3; // 2^27 = 128 MB
  t.throws(() => decompress(ZSTD, window, 64 * MB), { message: `zstd window of ${128 * MB} bytes > ${64 * MB}` });
  const reserved = Buffer.from(frame);
  reserved[6] = (reserved[6]! & ~6) | 6;
  t.throws(() => decompress(ZSTD, reserved, 64 * MB), { message: 'zstd reserved block type' });
  // Flipped bits in the blocks: refused whether the frame is inflated at once (bound 64 MB) or
  // measured first (a bound of its content), never another kind of error.
  let state = 1;
  for (let i = 0; i < 300; i++) {
    const bad = Buffer.from(frame);
    state = (state * 1103515245 + 12345) >>> 0;
    bad[9 + (state % (bad.length - 9))]! ^= 1 << (state >>> 29);
    for (const bound of [64 * MB, input.length]) {
      try {
        const output = decompress(ZSTD, bad, bound);
        if (output.length > bound) t.fail(`flip ${i}: ${output.length} bytes past ${bound}`);
      } catch (error) {
        if (!(error instanceof DecompressError)) t.fail(`flip ${i}: ${(error as Error).name} ${(error as Error).message}`);
      }
    }
  }
  t.pass('300 flipped frames');
});
