import t from 'tap';
import { compressFrameSync } from 'lz4-napi';
import { codecBytes } from '../../../../helpers/random.js';
import { decompressFrame } from '../../../../../engine/storage/segment/lz4-frame.js';

function bytes(length: number, compressible: boolean): Buffer {
  return codecBytes(length, compressible ? 'text' : 'noise');
}

t.test('decodes what lz4-napi encodes: small, multi-block and incompressible', async (t) => {
  for (const length of [1, 100, 70_000, 4 * 1024 * 1024 + 17, 9_000_000]) {
    for (const compressible of [true, false]) {
      const input = bytes(length, compressible);
      const output = decompressFrame(compressFrameSync(input));
      t.ok(output.equals(input), `${length} bytes, compressible ${compressible}`);
    }
  }
});

t.test('hands frames with dependent blocks to lz4-napi, which validates them', async (t) => {
  const input = bytes(1000, true);
  const frame = Buffer.from(compressFrameSync(input));
  frame[4] &= ~0x20; // dependent blocks: not ours to decode
  t.throws(() => decompressFrame(frame), 'lz4-napi sees the header checksum no longer match');
  t.ok(decompressFrame(compressFrameSync(input)).equals(input));
});

t.test('rejects truncated frames', async (t) => {
  const frame = compressFrameSync(bytes(100_000, true));
  t.throws(() => decompressFrame(frame.subarray(0, frame.length - 5)), /truncated/);
});
