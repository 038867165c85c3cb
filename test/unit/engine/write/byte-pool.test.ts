import t from 'tap';
import { BytePool } from '../../../../engine/write/byte-pool.js';

t.test('a given-back buffer serves the next request it fits; small requests are not pooled', async (t) => {
  const pool = new BytePool(4 * 1024 * 1024);
  const first = pool.take(100_000);
  t.ok(first.length >= 100_000, 'at least the bytes asked for');
  t.equal(first.length, 131_072, 'rounded up to a power of two');
  pool.give(first);
  t.equal(pool.take(120_000), first, 'reused for a request it fits');
  t.not(pool.take(120_000), first, 'taken buffers are not handed out twice');
  pool.give(first);
  t.not(pool.take(200_000), first, 'too small a buffer is not used');
  const small = pool.take(1_000);
  t.equal(small.length, 1_000, 'small requests get exactly their size');
  pool.give(small);
  t.not(pool.take(1_000), small, 'small buffers are not kept');
});

t.test('the pool keeps at most its byte bound, dropping the oldest', async (t) => {
  const pool = new BytePool(256 * 1024);
  const a = pool.take(128 * 1024);
  const b = pool.take(128 * 1024);
  const c = pool.take(128 * 1024);
  pool.give(a);
  pool.give(b);
  pool.give(c); // over the bound: a goes
  const got = [pool.take(128 * 1024), pool.take(128 * 1024), pool.take(128 * 1024)];
  t.ok(got.includes(b) && got.includes(c), 'the two newest are kept');
  t.notOk(got.includes(a), 'the oldest was dropped');
  const large = Buffer.allocUnsafeSlow(512 * 1024);
  pool.give(large);
  t.not(pool.take(300 * 1024), large, 'a buffer larger than the bound is never kept');
});
