import t from 'tap';
import { compress as wasmCompress } from '@bokuweb/zstd-wasm';
import { codecBytes as bytes } from '../../../../helpers/random.js';
import { setImmediate as turn } from 'node:timers/promises';
import { NATIVE_BYTES_PER_TURN } from '../../../../../engine/base/limits.js';
import { frameContentBound, zstdCompress, zstdDecompress, zstdDecompressColumn } from '../../../../../engine/storage/segment/arrow.js';

t.test('decodes what the segment writer encodes: empty, small, multi-block, incompressible, runs', async (t) => {
  for (const length of [0, 1, 100, 131_072, 131_073, 1_000_000, 4 * 1024 * 1024 + 17]) {
    for (const kind of ['text', 'noise', 'run'] as const) {
      const input = bytes(length, kind);
      const frame = zstdCompress(input);
      const bound = frameContentBound(frame);
      t.ok(bound >= length, `${length} ${kind}: the block headers bound the content (${bound})`);
      t.ok(bound <= length + 128 * 1024, `${length} ${kind}: by at most one block more`);
      const output = zstdDecompress(frame);
      t.ok(Buffer.from(output.buffer, output.byteOffset, output.byteLength).equals(input), `${length} ${kind}: same bytes`);
      t.equal(output.byteOffset % 8, 0, 'aligned for typed-array views');
    }
  }
});

t.test('the native decoder segment columns are read with gives the same bytes, and refuses what it cannot read', async (t) => {
  for (const length of [0, 1, 131_073, 1_000_000]) {
    for (const kind of ['text', 'noise', 'run'] as const) {
      const input = bytes(length, kind);
      const output = zstdDecompressColumn(zstdCompress(input));
      t.ok(Buffer.from(output.buffer, output.byteOffset, output.byteLength).equals(input), `${length} ${kind}: same bytes`);
    }
  }
  t.ok(Buffer.from(zstdDecompressColumn(wasmCompress(bytes(300_000, 'text'), 3))).equals(bytes(300_000, 'text')), 'another writer\'s frame');
  const frame = Buffer.from(zstdCompress(bytes(200_000, 'text')));
  t.throws(() => zstdDecompressColumn(frame.subarray(0, frame.length - 3)), 'truncated');
  t.throws(() => zstdDecompressColumn(Buffer.from('not a zstd frame at all')), 'not a frame');
});

t.test('a thread decodes columns natively up to a bound a turn of its event loop, then with WebAssembly', async (t) => {
  await turn();
  const input = bytes(4 * 1024 * 1024, 'text');
  const frame = zstdCompress(input);
  const frames = Math.ceil(NATIVE_BYTES_PER_TURN / input.length) + 3;
  const native: boolean[] = [];
  for (let k = 0; k < frames; k++) {
    const output = zstdDecompressColumn(frame);
    if (!Buffer.from(output.buffer, output.byteOffset, output.byteLength).equals(input)) t.fail(`frame ${k}`);
    native.push(Buffer.isBuffer(output)); // the binding returns Buffers, the WebAssembly decoder Uint8Arrays
  }
  const bound = NATIVE_BYTES_PER_TURN / input.length;
  t.same(native, Array.from({ length: frames }, (_, k) => k < bound), 'native up to the bound, then not');
  await turn();
  t.ok(Buffer.isBuffer(zstdDecompressColumn(frame)), 'native again after a turn');
});

t.test('decodes frames that state their content size (other writers)', async (t) => {
  const input = bytes(300_000, 'text');
  const frame = wasmCompress(input, 3);
  t.ok(frameContentBound(frame) >= input.length);
  t.ok(Buffer.from(zstdDecompress(frame)).equals(input));
});

t.test('frames one after another (a blocked dictionary) are bounded and decoded as their content concatenated', async (t) => {
  const parts = [bytes(40_000, 'text'), bytes(70_000, 'text'), bytes(5, 'text')];
  const joined = Buffer.concat(parts.map((part) => zstdCompress(part)));
  t.ok(frameContentBound(joined) >= 110_005, 'the bound covers every frame');
  t.ok(Buffer.from(zstdDecompress(joined)).equals(Buffer.concat(parts)), 'decoded as one');
  t.ok(Buffer.from(zstdDecompressColumn(joined)).equals(Buffer.concat(parts)), 'natively too');
  t.equal(frameContentBound(Buffer.concat([joined, joined.subarray(0, 10)])), -1, 'a truncated last frame');
});

t.test('frames whose blocks cannot be read go to the native decoder, which refuses them', async (t) => {
  const frame = Buffer.from(zstdCompress(bytes(200_000, 'text')));
  t.equal(frameContentBound(frame.subarray(0, frame.length - 3)), -1, 'truncated');
  t.equal(frameContentBound(Buffer.concat([frame, Buffer.from([1, 2, 3])])), -1, 'trailing bytes');
  t.equal(frameContentBound(Buffer.from('not a zstd frame at all')), -1, 'no magic number');
  t.equal(frameContentBound(frame.subarray(0, 4)), -1, 'a bare magic number');
  t.throws(() => zstdDecompress(frame.subarray(0, frame.length - 3)));
  t.throws(() => zstdDecompress(Buffer.from('not a zstd frame at all')));
});

t.test('a compressed block lies about its content: an error, never bytes past the bound', async (t) => {
  const input = bytes(500_000, 'text');
  const frame = Buffer.from(zstdCompress(input));
  // Flip bytes inside the first block's payload: the decoder must fail cleanly or return at
  // most the bound, and the process must not crash.
  for (const offset of [20, 200, 2_000]) {
    const damaged = Buffer.from(frame);
    damaged[offset] ^= 0xff;
    try {
      const output = zstdDecompress(damaged);
      t.ok(output.byteLength <= frameContentBound(damaged), `offset ${offset}: within the bound`);
    } catch (error) {
      t.ok(error instanceof Error, `offset ${offset}: refused`);
    }
  }
});

t.test('a header that claims more than the WebAssembly decoder should take goes to the native decoder', async (t) => {
  // A frame of empty compressed blocks: each would count 128 KB towards the bound.
  const header = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58]); // magic, descriptor, window 64 MB
  const empty = Buffer.from([(2 << 1) | 0, 0, 0]);
  const last = Buffer.from([(2 << 1) | 1, 0, 0]);
  const frame = Buffer.concat([header, ...Array.from({ length: 3_000 }, () => empty), last]);
  t.equal(frameContentBound(frame), -1, 'empty compressed blocks are not read as 128 KB each');
  t.equal(zstdDecompress(frame).byteLength, 0, 'the native decoder reads them as the empty blocks they are');
  // Blocks that are valid but claim a huge bound: RLE blocks of 128 KB - 1 each, 2,100 of them (~275 MB).
  const rle = (lastBlock: boolean) => {
    const size = 128 * 1024 - 1;
    const word = (size << 3) | (1 << 1) | (lastBlock ? 1 : 0);
    return Buffer.from([word & 0xff, (word >> 8) & 0xff, (word >> 16) & 0xff, 0x61]);
  };
  const big = Buffer.concat([header, ...Array.from({ length: 2_099 }, () => rle(false)), rle(true)]);
  t.ok(frameContentBound(big) > 256 * 1024 * 1024, 'the bound is past the WebAssembly limit');
  const output = zstdDecompress(big);
  t.equal(output.byteLength, 2_100 * (128 * 1024 - 1), 'decoded by the native binding');
  t.equal(output[output.byteLength - 1], 0x61);
});
