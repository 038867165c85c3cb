import t from 'tap';
import { MISSING, deletePath, parsePath, readPath, writePath } from '../../../../engine/enrich/path.js';

t.test('parses dotted paths and rejects empty or prototype segments', async (t) => {
  t.same(parsePath('a.b.c'), ['a', 'b', 'c']);
  t.equal(parsePath(''), null);
  t.equal(parsePath('a..b'), null);
  t.equal(parsePath('.a'), null);
  t.equal(parsePath('a.__proto__.x'), null);
  t.equal(parsePath(42), null);
});

t.test('reads own properties only, through objects only', async (t) => {
  t.equal(readPath({ a: { b: 0 } }, ['a', 'b']), 0);
  t.equal(readPath({ a: [1] }, ['a', '0']), MISSING, 'arrays are not containers');
  t.equal(readPath({}, ['toString']), MISSING, 'inherited properties are absent');
  t.equal(readPath({ a: null }, ['a']), null, 'null is present');
});

t.test('writes create missing objects and stop at non-objects', async (t) => {
  const event: Record<string, unknown> = { a: { keep: 1 }, s: 'x' };
  t.equal(writePath(event, ['a', 'b', 'c'], 1), null);
  t.same(event.a, { keep: 1, b: { c: 1 } });
  t.equal(writePath(event, ['s', 'x'], 1), 's');
  t.equal(event.s, 'x', 'nothing written');
  deletePath(event, ['a', 'keep']);
  t.same(event.a, { b: { c: 1 } });
});
