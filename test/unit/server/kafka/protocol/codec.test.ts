/** Request/response codecs: captured client frames decode and re-encode byte for byte. */
import t from 'tap';
import { ApiKey } from '../../../../../server/kafka/protocol/api-keys.js';
import {
  decodeRequest, decodeResponse, encodeRequest, encodeResponseFrame, UnsupportedVersionError,
} from '../../../../../server/kafka/protocol/codec.js';
import { fixtureNames, readFixture } from '../../../../fixtures/kafka-frames/index.js';
import { MESSAGES } from '../../../../../server/kafka/protocol/messages/index.js';

t.test('every captured request decodes and re-encodes to the same bytes', async (t) => {
  const names = fixtureNames();
  t.ok(names.length >= 30, `${names.length} fixtures`);
  for (const name of names) {
    const bytes = readFixture(name);
    const request = decodeRequest(bytes);
    const [, version] = /-v(\d+)/.exec(name)!;
    t.equal(request.header.api_version, Number(version), `${name} version`);
    t.same(encodeRequest(request.header, request.body), bytes, `${name} round trip`);
  }
});

t.test('decodes the fields clients send', async (t) => {
  const join = decodeRequest(readFixture('kafkajs-join-group-v5.bin'));
  t.equal(join.header.api_key, ApiKey.JoinGroup);
  t.equal(join.body.group_id, 'cap');
  t.equal(join.body.protocol_type, 'consumer');
  t.same(join.body.protocols.map((p: { name: string }) => p.name), ['RoundRobinAssigner']);
  const kcatJoin = decodeRequest(readFixture('kcat-join-group-v5.bin'));
  t.same(kcatJoin.body.protocols.map((p: { name: string }) => p.name), ['range', 'roundrobin']);

  const versions = decodeRequest(readFixture('kcat-api-versions-v3.bin'));
  t.equal(versions.header.client_id, 'rdkafka');
  t.equal(versions.body.client_software_name, 'librdkafka');

  const fetch = decodeRequest(readFixture('kafkajs-fetch-v11.bin'));
  t.equal(fetch.body.isolation_level, 1);
  t.equal(fetch.body.topics[0].topic, 'clicks');
  t.equal(fetch.body.topics[0].partitions[0].partition_max_bytes, 1048576);

  const sasl = decodeRequest(readFixture('kafkajs-sasl-authenticate-v1.bin'));
  const token = (sasl.body.auth_bytes as Buffer).toString().split('\u0000');
  t.equal(token.length, 3);
  t.equal(token[0], '', 'empty authzid');

  const produce = decodeRequest(readFixture('kafkajs-produce-v7.bin'));
  t.equal(produce.body.acks, -1);
  t.equal(produce.body.topic_data[0].name, 'clicks');
});

t.test('responses round-trip for every API and version', async (t) => {
  for (const spec of MESSAGES.values()) {
    for (let v = spec.minVersion; v <= spec.maxVersion; v++) {
      const frame = encodeResponseFrame(spec.apiKey, v, 7, {});
      t.equal(frame.readInt32BE(0), frame.length - 4, `${spec.name} v${v} size prefix`);
      const { correlation_id, body } = decodeResponse(spec.apiKey, v, frame.subarray(4));
      t.equal(correlation_id, 7);
      t.same(encodeResponseFrame(spec.apiKey, v, 7, body), frame, `${spec.name} v${v}`);
    }
  }
});

t.test('ApiVersions v3 response: flexible body, no header tag byte', async (t) => {
  const body = { error_code: 0, api_keys: [{ api_key: 18, min_version: 0, max_version: 3 }], throttle_time_ms: 0 };
  const frame = encodeResponseFrame(ApiKey.ApiVersions, 3, 1, body);
  // size(4) correlation(4) error_code(2) compact array len 2 (1 byte) + entry(6 + tag 1)
  t.equal(frame.readInt16BE(8), 0, 'error code right after the correlation id');
  t.equal(frame[10], 2, 'compact array length = count + 1');
  t.equal(frame.length, 4 + 4 + 2 + 1 + 7 + 4 + 1);
});

t.test('unknown versions raise UnsupportedVersionError with the header', async (t) => {
  const bytes = Buffer.from(readFixture('kafkajs-api-versions-v2.bin'));
  bytes.writeInt16BE(9, 2);
  t.throws(() => decodeRequest(bytes), UnsupportedVersionError);
  try {
    decodeRequest(bytes);
  } catch (error) {
    t.equal((error as UnsupportedVersionError).header.correlation_id, bytes.readInt32BE(4));
  }
});

t.test('truncated requests fail to decode', async (t) => {
  const bytes = readFixture('kafkajs-produce-v7.bin');
  t.throws(() => decodeRequest(bytes.subarray(0, bytes.length - 3)));
});
