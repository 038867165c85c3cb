/**
 * The uniqueness tokens a cluster node gives the events of an idempotent produce batch
 * (server/kafka/broker/handlers/produce-cluster.ts): the same batch always gets the same tokens,
 * another batch (producer, epoch, sequence, size, node) others, and a token always fits the
 * engine's bound on tokens.
 */
import t from 'tap';
import { limits } from '../../../../../engine/index.js';
import { producerToken } from '../../../../../server/kafka/broker/handlers/produce-cluster.js';

t.test('a batch\'s tokens are deterministic and name where they come from', async (t) => {
  const batch = { producerId: 1234, epoch: 0, baseSequence: 40 };
  t.equal(producerToken(3, batch, 10, 2), 'kafka:3:1234:0:40:10:2');
  t.equal(producerToken(3, { ...batch }, 10, 2), producerToken(3, batch, 10, 2), 'a retry gets the same token');
  const others = [
    producerToken(4, batch, 10, 2), producerToken(3, { ...batch, producerId: 1235 }, 10, 2),
    producerToken(3, { ...batch, epoch: 1 }, 10, 2), producerToken(3, { ...batch, baseSequence: 41 }, 10, 2),
    producerToken(3, batch, 11, 2), producerToken(3, batch, 10, 3),
  ];
  t.equal(new Set([producerToken(3, batch, 10, 2), ...others]).size, 7, 'any other batch or record: another token');
});

t.test('tokens of the largest ids still fit the bound, and stay distinct', async (t) => {
  const huge = { producerId: Number.MAX_SAFE_INTEGER, epoch: 32767, baseSequence: 2 ** 31 - 1 };
  const a = producerToken(1023, huge, 1_000_000, 999_998);
  const b = producerToken(1023, huge, 1_000_000, 999_999);
  t.ok(a.length <= limits.UNIQUENESS_TOKEN_CHARS_MAX && b.length <= limits.UNIQUENESS_TOKEN_CHARS_MAX);
  t.match(a, /^kafka:/);
  t.not(a, b);
});
