import t from 'tap';
import { compress as wasmCompress } from '@bokuweb/zstd-wasm';
import { frameContentBound, zstdCompress, zstdDecompress } from './arrow.js';

/** Deterministic bytes that compress somewhat (a small alphabet), not at all (xorshift) or to RLE blocks. */
function bytes(length: number, kind: 'text' | 'noise' | 'run'): Buffer {
  const out = Buffer.alloc(length);
  let state = 2463534242;
  for (let index = 0; index < length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[index] = kind === 'run' ? 7 : kind === 'text' ? 97 + ((state >>> 0) % 4) : state & 0xff;
  }
  return out;
}

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

t.test('decodes frames that state their content size (other writers)', async (t) => {
  const input = bytes(300_000, 'text');
  const frame = wasmCompress(input, 3);
  t.ok(frameContentBound(frame) >= input.length);
  t.ok(Buffer.from(zstdDecompress(frame)).equals(input));
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
