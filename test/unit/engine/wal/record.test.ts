/**
 * The frame codec against hand-checked bytes (CRC-32C verified with an independent bitwise
 * implementation), plus every way a frame can be torn or corrupt.
 */
import t from 'tap';
import { WAL_RECORD_BYTES_MAX } from '../../../../engine/base/limits.js';
import { decodeRecords, encodeRecord, RECORD_HEADER_BYTES } from '../../../../engine/wal/record.js';

// magic a7, version 01, length 00000005, crc b281b9e0, payload "tally".
const TALLY_FRAME = Buffer.from('a70100000005b281b9e074616c6c79', 'hex');
const EMPTY_FRAME = Buffer.from('a70100000000708e4ed0', 'hex');

t.test('encodes a payload to the fixture bytes', async (t) => {
  t.same(encodeRecord(Buffer.from('tally')), TALLY_FRAME);
  t.same(encodeRecord(new Uint8Array(0)), EMPTY_FRAME);
});

t.test('decodes fixture bytes, and encode(decode(x)) equals x', async (t) => {
  const file = Buffer.concat([TALLY_FRAME, EMPTY_FRAME, TALLY_FRAME]);
  const decoded = decodeRecords(file);
  t.same(decoded.payloads.map((p) => Buffer.from(p).toString()), ['tally', '', 'tally']);
  t.equal(decoded.cleanBytes, file.length);
  t.equal(decoded.torn, false);
  t.equal(decoded.reason, null);
  t.same(Buffer.concat(decoded.payloads.map((p) => encodeRecord(p))), file);
});

t.test('an empty buffer is a clean, empty log', async (t) => {
  const empty = { payloads: [], cleanBytes: 0, torn: false, roomBytes: 0, reason: null };
  t.same(decodeRecords(Buffer.alloc(0)), empty);
});

t.test('stops at the first torn or corrupt frame and reports the clean prefix', async (t) => {
  const good = TALLY_FRAME;
  const cases: [string, Buffer, string][] = [
    ['short header', good.subarray(0, RECORD_HEADER_BYTES - 1), 'short-header'],
    ['zeros, then a byte of something', Buffer.concat([Buffer.alloc(32), Buffer.from([1])]), 'bad-magic'],
    ['unknown version', patch(good, 1, 2), 'bad-version'],
    ['length over the limit', withLength(good, WAL_RECORD_BYTES_MAX), 'length-over-max'],
    ['short payload', good.subarray(0, good.length - 1), 'short-payload'],
    ['flipped payload byte', patch(good, good.length - 1, 0x00), 'crc-mismatch'],
    ['flipped crc byte', patch(good, 7, good[7]! ^ 0x01), 'crc-mismatch'],
    ['shorter length', withLength(good, 4), 'crc-mismatch'],
  ];
  for (const [name, tail, reason] of cases) {
    const decoded = decodeRecords(Buffer.concat([good, tail]));
    t.equal(decoded.payloads.length, 1, name);
    t.equal(decoded.cleanBytes, good.length, name);
    t.equal(decoded.torn, true, name);
    t.equal(decoded.reason, reason, name);
  }
});

t.test('zeros after the last frame are zeroed room, a clean end', async (t) => {
  for (const zeros of [1, RECORD_HEADER_BYTES - 1, RECORD_HEADER_BYTES, 4096]) {
    const decoded = decodeRecords(Buffer.concat([TALLY_FRAME, Buffer.alloc(zeros)]));
    t.same(decoded, { payloads: [Buffer.from('tally')], cleanBytes: TALLY_FRAME.length, torn: false, roomBytes: zeros, reason: null }, `${zeros} zeros`);
  }
  t.same(decodeRecords(Buffer.alloc(64)), { payloads: [], cleanBytes: 0, torn: false, roomBytes: 64, reason: null }, 'a segment of zeroed room only');
});

t.test('payloads are views of the input, not copies', async (t) => {
  const file = Buffer.from(TALLY_FRAME);
  const [payload] = decodeRecords(file).payloads;
  t.equal(payload!.buffer, file.buffer);
});

t.test('refuses to frame a payload over the limit (a caller bug)', async (t) => {
  const tooBig = { byteLength: WAL_RECORD_BYTES_MAX } as Uint8Array;
  t.throws(() => encodeRecord(tooBig), { name: 'AssertionError' });
});

function patch(frame: Buffer, index: number, value: number): Buffer {
  const copy = Buffer.from(frame);
  copy[index] = value;
  return copy;
}

function withLength(frame: Buffer, length: number): Buffer {
  const copy = Buffer.from(frame);
  copy.writeUInt32BE(length, 2);
  return copy;
}
