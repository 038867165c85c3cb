import t from 'tap';
import { LruCache } from '../../../../engine/enrich/lru.js';

t.test('keeps recently used entries and drops the least recent past its bound', async (t) => {
  const cache = new LruCache<string, number>(4);
  cache.set('a', 1);
  cache.set('b', 2);
  cache.set('c', 3);
  t.equal(cache.get('a'), 1, 'a hit keeps a');
  cache.set('d', 4);
  cache.set('e', 5);
  t.equal(cache.get('b'), undefined, 'b was the least recent');
  t.equal(cache.get('a'), 1);
  t.equal(cache.get('e'), 5);
  t.ok(cache.size <= 4, 'never above the bound');
});

t.test('stays within its bound under churn', async (t) => {
  const cache = new LruCache<number, number>(100);
  let sizeMax = 0;
  for (let index = 0; index < 10_000; index++) {
    cache.set(index, index);
    cache.get(index % 7);
    sizeMax = Math.max(sizeMax, cache.size);
  }
  t.ok(sizeMax <= 100, `largest size ${sizeMax}`);
  t.equal(cache.get(9_999), 9_999);
});

t.test('re-setting a key replaces its value without growing the cache', async (t) => {
  const cache = new LruCache<string, number>(4);
  cache.set('a', 1);
  cache.set('a', 2);
  t.equal(cache.size, 1);
  t.equal(cache.get('a'), 2);
});
