/** RecordBatch v2: real producer batches with every codec, CRC checks, and our encoder. */
import t from 'tap';
import snappy from 'snappyjs';
import { crc32c } from '@node-rs/crc32';
import { decodeRequest } from '../../../../../server/kafka/protocol/codec.js';
import { decompress } from '../../../../../server/kafka/protocol/compression.js';
import { readFixture } from '../../../../fixtures/kafka-frames/index.js';
import { CorruptBatchError, decodeRecordBatch, encodeRecordBatch, splitBatches } from '../../../../../server/kafka/protocol/record-batch.js';

function batchesOf(fixture: string): Buffer[] {
  const request = decodeRequest(readFixture(fixture));
  return splitBatches(request.body.topic_data[0].partition_data[0].records);
}

t.test('CRC-32C is the Castagnoli polynomial', async (t) => {
  t.equal((crc32c('123456789') >>> 0).toString(16), 'e3069283');
});

for (const [codec, bits] of [['none', 0], ['gzip', 1], ['snappy', 2], ['lz4', 3], ['zstd', 4]] as const) {
  t.test(`decodes a librdkafka batch compressed with ${codec}`, async (t) => {
    const [batch] = batchesOf(`kcat-${codec}-produce-v7.bin`);
    const decoded = decodeRecordBatch(batch!, 1 << 20);
    t.equal(decoded.attributes & 7, bits);
    t.equal(decoded.records.length, 20);
    t.same(decoded.records.map((r) => JSON.parse(r.value!.toString()).i), Array.from({ length: 20 }, (_, i) => i + 1));
    t.equal(decoded.records[19]!.offsetDelta, decoded.lastOffsetDelta);
  });
}

t.test('decodes kafkajs keys and headers', async (t) => {
  const [batch] = batchesOf('kafkajs-produce-v7.bin');
  const decoded = decodeRecordBatch(batch!, 1 << 20);
  t.equal(decoded.records[0]!.key!.toString(), 'k1');
  t.equal(decoded.records[0]!.headers[0]!.key, 'h');
  t.equal(decoded.records[0]!.headers[0]!.value!.toString(), 'v');
  t.equal(decoded.records[1]!.key, null);
});

t.test('a flipped byte fails the CRC; a short batch fails framing', async (t) => {
  const [batch] = batchesOf('kcat-none-produce-v7.bin');
  const bad = Buffer.from(batch!);
  bad[bad.length - 5]! ^= 0xff;
  t.throws(() => decodeRecordBatch(bad, 1 << 20), CorruptBatchError);
  t.throws(() => splitBatches(batch!.subarray(0, batch!.length - 1)), CorruptBatchError);
  const magic = Buffer.from(batch!);
  magic[16] = 1;
  t.throws(() => decodeRecordBatch(magic, 1 << 20), /magic/);
});

t.test('xerial-framed snappy (Java client) decodes', async (t) => {
  const plain = Buffer.from('hello xerial snappy '.repeat(20));
  const block = Buffer.from(snappy.compress(plain));
  const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
  const len = Buffer.alloc(4);
  len.writeInt32BE(block.length);
  const framed = Buffer.concat([header, len, block, len, block]);
  t.same(decompress(2, framed, 1 << 20), Buffer.concat([plain, plain]));
  t.throws(() => decompress(2, framed, 100), /snappy block/);
});

t.test('encode then decode keeps records, gaps and timestamps', async (t) => {
  for (const compression of [0, 1] as const) {
    const encoded = encodeRecordBatch({
      baseOffset: 40, baseTimestamp: 1_700_000_000_000, maxTimestamp: 1_700_000_000_500, compression,
      records: [
        { offsetDelta: 0, timestampDelta: 0, key: Buffer.from('a'), value: Buffer.from('{"x":1}') },
        { offsetDelta: 3, timestampDelta: 500, key: null, value: null, headers: [{ key: 'k', value: null }] },
      ],
    });
    const decoded = decodeRecordBatch(encoded, 1 << 20);
    t.equal(decoded.baseOffset, 40);
    t.equal(decoded.lastOffsetDelta, 3);
    t.equal(decoded.attributes, compression);
    t.equal(decoded.records[1]!.timestampDelta, 500);
    t.equal(decoded.records[0]!.value!.toString(), '{"x":1}');
    t.same(decoded.records[1]!.headers, [{ key: 'k', value: null }]);
    t.same(splitBatches(encoded), [encoded]);
  }
});
