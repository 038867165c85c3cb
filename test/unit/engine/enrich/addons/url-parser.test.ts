import t from 'tap';
import { createUrlParser } from '../../../../../engine/enrich/addons/url-parser.js';

const parser = createUrlParser();

t.test('splits a URL into the seed fields', async (t) => {
  t.same(parser.compute(['https://Shop.Example.com/a/b?x=1&y=a%20b&x=3#top']), {
    protocol: 'https', domain: 'shop.example.com', path: '/a/b', anchor: 'top',
    query_string: { x: '1', y: 'a b' },
  });
});

t.test('a URL without query or fragment has {} and a null anchor', async (t) => {
  t.same(parser.compute(['http://example.com']), {
    protocol: 'http', domain: 'example.com', path: '/', anchor: null, query_string: {},
  });
});

t.test('drops query names that cannot be property names', async (t) => {
  const output = parser.compute(['http://e.com/?a.b=1&=2&__proto__=3&ok=4']);
  t.same(output.query_string, { ok: '4' });
});

t.test('malformed values give every field null', async (t) => {
  for (const value of ['not a url', '/relative/path', '', 42, null]) {
    t.same(parser.compute([value]), {
      protocol: null, domain: null, path: null, anchor: null, query_string: null,
    }, String(value));
  }
});

t.test('cached results are equal but never shared objects', async (t) => {
  const first = parser.compute(['https://e.com/?a=1']);
  const second = parser.compute(['https://e.com/?a=1']);
  t.same(first, second);
  t.not(first.query_string, second.query_string);
});
