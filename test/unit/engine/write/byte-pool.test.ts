import t from 'tap';
import { BytePool } from '../../../../engine/write/byte-pool.js';

t.test('a given-back buffer serves the next request it fits', async (t) => {
  const pool = new BytePool(4 * 1024 * 1024);
  const first = pool.take(100_000);
  t.ok(first.length >= 100_000, 'at least the bytes asked for');
  t.equal(first.length, 131_072, 'rounded up to a power of two');
  pool.give(first);
  t.equal(pool.take(120_000), first, 'reused for a request it fits');
  t.not(pool.take(120_000), first, 'taken buffers are not handed out twice');
  pool.give(first);
  t.not(pool.take(200_000), first, 'too small a buffer is not used');
});

t.test('small requests are kept by power-of-two size, up to a bound per size', async (t) => {
  const pool = new BytePool(4 * 1024 * 1024);
  const small = pool.take(1_000);
  t.equal(small.length, 1_024, 'rounded up to a power of two');
  t.equal(pool.take(1).length, 512, 'at least 512 bytes');
  pool.give(small);
  t.equal(pool.take(700), small, 'reused for a request of its size');
  t.not(pool.take(1_000), small, 'taken buffers are not handed out twice');
  pool.give(small);
  t.not(pool.take(2_000), small, 'a request of another size gets another buffer');
  const sliced = Buffer.allocUnsafe(1_024);
  pool.give(sliced);
  if (sliced.buffer.byteLength !== 1_024) t.not(pool.take(1_024), sliced, 'a view into a shared slab is not kept');
  const given = Array.from({ length: 600 }, () => Buffer.allocUnsafeSlow(1_024));
  for (const buffer of given) pool.give(buffer);
  const taken = new Set(Array.from({ length: 600 }, () => pool.take(1_024)));
  t.equal(given.filter((buffer) => taken.has(buffer)).length, 512, 'at most 512 KB of one size is kept');
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
