/** Framing: whole frames from any chunking, and the size guard before buffering. */
import t from 'tap';
import { frame, FrameError, FrameSplitter } from '../../../../../server/kafka/protocol/frame.js';

t.test('splits frames across and within chunks', async (t) => {
  const a = frame(Buffer.from('hello'));
  const b = frame(Buffer.from('world!'));
  const stream = Buffer.concat([a, b, frame(Buffer.alloc(0))]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const splitter = new FrameSplitter(1024);
    const out = [...splitter.push(stream.subarray(0, cut)), ...splitter.push(stream.subarray(cut))];
    t.same(out.map((f) => f.toString()), ['hello', 'world!', ''], `cut at ${cut}`);
  }
});

t.test('rejects an oversized or negative size from its 4 bytes alone', async (t) => {
  const splitter = new FrameSplitter(1024);
  // A TLS ClientHello read as a frame size.
  t.throws(() => splitter.push(Buffer.from([0x16, 0x03, 0x01, 0x00])), FrameError);
  t.throws(() => new FrameSplitter(1024).push(Buffer.from([0xff, 0xff, 0xff, 0xff])), FrameError);
  t.same(new FrameSplitter(1024).push(Buffer.from([0, 0, 4, 0])), [], 'exactly the max is fine');
});
