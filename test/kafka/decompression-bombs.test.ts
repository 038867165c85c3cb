/**
 * Decompression bombs at the real server (a child process, over a real socket): a zstd and an
 * lz4 batch of a few KB to a few MB that inflate to 1 GB of zeros, and a zstd frame declaring
 * 1 GB of content. Each must be refused with CORRUPT_MESSAGE (2) while decoding stops at the
 * batch bound (64 MB), so the server's peak RSS stays far below a gigabyte, it stays up, and a
 * good batch after them is stored. The bombs are hand-built, never by allocating 1 GB here.
 */
import { readFileSync } from 'node:fs';
import { crc32c } from '@node-rs/crc32';
import { compressSync as lz4CompressBlock } from 'lz4-napi';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { freePort, startServer } from '../helpers/server.js';
import { ApiKey } from '../../server/kafka/protocol/api-keys.js';
import { encodeRecordBatch } from '../../server/kafka/protocol/record-batch.js';
import { RawClient } from '../helpers/kafka/raw-client.js';

const GB = 1024 * 1024 * 1024;
/** Far above the server's own footprint, far below what inflating any bomb whole would take. */
const PEAK_RSS_MAX = 700 * 1024 * 1024;

/** A RecordBatch v2 of `count` records whose (compressed) records section is `body`. */
function batchWith(codec: number, body: Buffer, count: number): Buffer {
  const head = encodeRecordBatch({ baseOffset: 0, baseTimestamp: 0, maxTimestamp: 0, records: [] });
  const out = Buffer.concat([head, body]);
  out.writeInt32BE(out.length - 12, 8); // batch length
  out.writeInt16BE(codec, 21); // attributes: compression codec
  out.writeInt32BE(count - 1, 23); // last offset delta
  out.writeInt32BE(count, 57); // record count
  out.writeUInt32BE(crc32c(out.subarray(21)) >>> 0, 17);
  return out;
}

/** zstd: a frame without content size (window 2 MB) of RLE blocks of 128 KB zeros each. */
function zstdRleBomb(bytes: number): Buffer {
  const blocks = bytes / (128 * 1024);
  const out = Buffer.alloc(6 + 4 * blocks);
  out.writeUInt32LE(0xfd2fb528, 0);
  out[4] = 0x00; // no content size, not single segment, no checksum, no dictionary
  out[5] = 11 << 3; // window 2^(10 + 11) = 2 MB
  for (let i = 0; i < blocks; i++) {
    const last = i === blocks - 1 ? 1 : 0;
    out.writeUIntLE(((128 * 1024) << 3) | (1 << 1) | last, 6 + 4 * i, 3); // RLE block
    out[6 + 4 * i + 3] = 0;
  }
  return out;
}

/** zstd: a single-segment frame declaring `bytes` of content, with one empty raw block. */
function zstdDeclaredBomb(bytes: number): Buffer {
  const out = Buffer.alloc(4 + 1 + 8 + 3);
  out.writeUInt32LE(0xfd2fb528, 0);
  out[4] = (3 << 6) | 0x20; // 8-byte content size, single segment
  out.writeBigUInt64LE(BigInt(bytes), 5);
  out.writeUIntLE(1, 13, 3); // last, raw, size 0
  return out;
}

/** xxHash32 of a short input (< 16 bytes), for the LZ4 frame header checksum. */
function xxh32Short(input: Buffer, seed = 0): number {
  const P1 = 0x9e3779b1, P2 = 0x85ebca77, P3 = 0xc2b2ae3d, P4 = 0x27d4eb2f, P5 = 0x165667b1;
  const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;
  let h = (seed + P5 + input.length) >>> 0;
  let i = 0;
  for (; i + 4 <= input.length; i += 4) h = Math.imul(rotl((h + Math.imul(input.readUInt32LE(i), P3)) >>> 0, 17), P4) >>> 0;
  for (; i < input.length; i++) h = Math.imul(rotl((h + Math.imul(input[i]!, P5)) >>> 0, 11), P1) >>> 0;
  h ^= h >>> 15; h = Math.imul(h, P2) >>> 0;
  h ^= h >>> 13; h = Math.imul(h, P3) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

/** lz4: one LZ4 frame (independent 4 MB blocks) of `bytes` zeros: the same block repeated. */
function lz4Bomb(bytes: number): Buffer {
  const blockMax = 4 * 1024 * 1024;
  const block = lz4CompressBlock(Buffer.alloc(blockMax)).subarray(4); // drop lz4-napi's size prefix
  const descriptor = Buffer.from([0x60, 0x70]); // version 01, independent blocks; 4 MB blocks
  const header = Buffer.alloc(7);
  header.writeUInt32LE(0x184d2204, 0);
  descriptor.copy(header, 4);
  header[6] = (xxh32Short(descriptor) >>> 8) & 0xff;
  const size = Buffer.alloc(4);
  size.writeUInt32LE(block.length);
  const parts: Buffer[] = [header];
  for (let i = 0; i < bytes / blockMax; i++) parts.push(size, block);
  parts.push(Buffer.alloc(4)); // end mark
  return Buffer.concat(parts);
}

function peakRss(pid: number): number | null {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

t.test('zstd and lz4 bombs get CORRUPT_MESSAGE without inflating; the server stays up', { timeout: 180_000 }, async (t) => {
  const kafkaPort = await freePort();
  const server = await startServer({ args: ['--kafka-in-port', String(kafkaPort)] });
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill9();
    server.cleanup();
  });
  const c = await RawClient.connect(kafkaPort);
  await c.authenticate(server.projectId, server.keys.write);
  const produce = async (topic: string, records: Buffer) => {
    c.send(ApiKey.Produce, 8, {
      transactional_id: null, acks: -1, timeout_ms: 30_000,
      topic_data: [{ name: topic, partition_data: [{ index: 0, records }] }],
    });
    const answer = await Promise.race([
      c.response(ApiKey.Produce, 8),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer for ${topic}`)), 60_000).unref()),
    ]);
    return answer.body.responses[0].partition_responses[0];
  };

  const peakBefore = peakRss(server.child.pid!);
  if (peakBefore !== null) t.comment(`server peak RSS before the bombs: ${Math.round(peakBefore / 2 ** 20)} MB`);
  const bombs: [string, number, Buffer][] = [
    ['zstd-rle', 4, zstdRleBomb(GB)],
    ['zstd-declared', 4, zstdDeclaredBomb(GB)],
    ['lz4', 3, lz4Bomb(GB)],
  ];
  for (const [name, codec, body] of bombs) {
    t.ok(body.length < 8 * 1024 * 1024, `${name}: ${body.length} bytes that inflate to 1 GB`);
    const started = Date.now();
    const answer = await produce(`bomb_${name.replace('-', '_')}`, batchWith(codec, body, 1000));
    t.equal(answer.error_code, 2, `${name}: CORRUPT_MESSAGE (${answer.error_message})`);
    t.match(answer.error_message, /more than \d+/, `${name}: the bound is named`);
    t.ok(Date.now() - started < 20_000, `${name}: answered in ${Date.now() - started} ms`);
    t.equal(server.child.exitCode, null, `${name}: the server is still running`);
  }
  const peak = peakRss(server.child.pid!);
  if (peak !== null) t.ok(peak < PEAK_RSS_MAX, `server peak RSS ${Math.round(peak / 2 ** 20)} MB < ${PEAK_RSS_MAX / 2 ** 20} MB`);

  const good = encodeRecordBatch({
    baseOffset: 0, baseTimestamp: Date.now(), maxTimestamp: Date.now(),
    records: [{ offsetDelta: 0, timestampDelta: 0, key: null, value: Buffer.from('{"after":"bombs"}') }],
  });
  t.equal((await produce('after_bombs', good)).error_code, 0, 'a good batch on the same connection is stored');
  const api = client(server.url);
  const count = async () => (await api.post(`/3.0/projects/${server.projectId}/queries/count`, {
    key: server.keys.read, body: { event_collection: 'after_bombs', timeframe: 'this_1_days' },
  })).body?.result;
  t.ok(await eventually(async () => (await count()) === 1), 'the good event is counted over HTTP');
  c.socket.destroy();
});
