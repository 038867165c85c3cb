import t from 'tap';
import { ApiError } from '../../../../engine/base/errors.js';
import { newLeaves } from '../../../../engine/schema/flatten.js';
import { decodeLeaves } from '../../../../engine/schema/leaf-codec.js';
import { IngestPool } from '../../../../engine/ingest/pool.js';

const ctx = { ip: '8.8.8.8', userAgent: 'test/1.0' };
const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const NOW_ISO = '2026-11-22T10:00:00.000Z';

t.test('a worker prepares a body it was handed; refusals come back as the same ApiError', async (t) => {
  const pool = new IngestPool(2, {});
  t.teardown(() => pool.close());
  const owned = Buffer.from(JSON.stringify({ a: [{ x: 1 }, 'no'], b: [{ y: 'z' }] }));
  const slab = Buffer.from(owned.toString()); // small: shares Node's pool slab with other buffers
  t.not(slab.byteLength, slab.buffer.byteLength, 'a pooled buffer');
  const own = Buffer.allocUnsafeSlow(owned.length); // its own ArrayBuffer, as a large request body has
  owned.copy(own);
  const bodies = [own, slab];
  const packed = await Promise.all(bodies.map((body) => pool.run(body, ctx, NOW, NOW_ISO)));
  for (const result of packed) {
    t.same(result.collections, [['a', 2], ['b', 1]]);
    t.same([...result.errorOf], [-1, 0, -1], 'the second event is refused');
    t.equal(result.errors[0]!.code, 'InvalidEventError');
    t.equal(result.timestamps[0], NOW, 'svc.timestamp defaults to the receipt time');
    const leaves = decodeLeaves(result.leaves, newLeaves());
    t.same(leaves.paths.slice(0, leaves.count), ['x', 'y'], 'the leaves of the two stored events');
    t.same(leaves.values.slice(0, leaves.count), [1, 'z']);
    t.same([...result.ranges], [0, 1, 0, 0, 1, 2], 'each event\'s leaves');
  }
  t.equal(bodies[0]!.length, 0, 'a body that owns its memory is moved to the worker');
  t.equal(slab.toString(), owned.toString(), 'a pooled body is copied, the caller\'s bytes stay');
  const refused = await pool.run(Buffer.from('{"a": ['), ctx, NOW, NOW_ISO).catch((error: unknown) => error);
  t.ok(refused instanceof ApiError, 'an ApiError on this thread');
  t.equal((refused as ApiError).error_code, 'InvalidJsonError');
  t.match((refused as ApiError).message, /^The request body is not valid JSON: /);
});

t.test('a worker that cannot start fails its jobs instead of leaving them waiting', async (t) => {
  const pool = new IngestPool(1, { geoipDbPath: '/nonexistent/geo.mmdb' });
  t.teardown(() => pool.close());
  const body = () => Buffer.from(JSON.stringify({ a: [{ x: 1 }] }));
  await t.rejects(pool.run(body(), ctx, NOW, NOW_ISO), /ENOENT|exited/);
  await t.rejects(pool.run(body(), ctx, NOW, NOW_ISO), /ENOENT|exited/, 'the next job gets a new worker, which fails too');
  t.ok(pool.idle, 'no job is left waiting');
});

t.test('idle workers collect their heaps on request; a batch sent meanwhile waits its turn', async (t) => {
  const pool = new IngestPool(2, {});
  t.teardown(() => pool.close());
  const body = (n: number) => Buffer.from(JSON.stringify({ a: Array.from({ length: n }, (_, i) => ({ i, s: `v${i}` })) }));
  await pool.collectIdle();
  t.equal(pool.running, 0, 'a worker that never started is not started to collect');
  t.same((await pool.run(body(5_000), ctx, NOW, NOW_ISO)).collections, [['a', 5_000]]);
  t.equal(pool.running, 1);
  const collecting = pool.collectIdle();
  const during = pool.run(body(3), ctx, NOW, NOW_ISO);
  await collecting;
  const packed = await during;
  t.same(packed.collections, [['a', 3]], 'the batch after a collection is answered in full');
  t.same(decodeLeaves(packed.leaves, newLeaves()).values.slice(0, 6), [0, 'v0', 1, 'v1', 2, 'v2']);
  t.ok(pool.idle);
});
