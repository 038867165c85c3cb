import t from 'tap';
import { createUaParser } from '../../../../../engine/enrich/addons/ua-parser.js';
import { loadUapRules } from '../../../../../engine/enrich/addons/uap-rules.js';

const rules = loadUapRules();
const parser = createUaParser(rules, 8);
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1_1 like Mac OS X) AppleWebKit/605.1.15 ' +
  '(KHTML, like Gecko) Version/18.1.1 Mobile/15E148 Safari/604.1';
const CHROME_WINDOWS =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) ' +
  'Chrome/131.0.6778.86 Safari/537.36';
const IPAD =
  'Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) ' +
  'Version/17.2 Mobile/15E148 Safari/604.1';
const FIREFOX_MAC =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:128.0) Gecko/20100101 Firefox/128.0';
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

t.test('iPhone Safari', async (t) => {
  t.same(parser.compute([IPHONE]), {
    device: { family: 'iPhone', type: 'mobile' },
    browser: { family: 'Mobile Safari', major: 18, minor: 1, patch: 1 },
    os: { family: 'iOS', major: 18, minor: 1, patch: 1, patch_minor: null },
  });
});

t.test('Chrome on Windows 10 is a desktop', async (t) => {
  t.same(parser.compute([CHROME_WINDOWS]), {
    device: { family: 'Other', type: 'desktop' },
    browser: { family: 'Chrome', major: 131, minor: 0, patch: 6778 },
    os: { family: 'Windows', major: 10, minor: null, patch: null, patch_minor: null },
  });
});

t.test('tablets, Macs and bots', async (t) => {
  t.match(parser.compute([IPAD]), { device: { family: 'iPad', type: 'tablet' } });
  t.match(parser.compute([FIREFOX_MAC]), {
    device: { family: 'Mac', type: 'desktop' },
    browser: { family: 'Firefox', major: 128, minor: 0 },
    os: { family: 'Mac OS X', major: 14, minor: 5 },
  });
  const bot = parser.compute([GOOGLEBOT]);
  t.match(bot, { device: { family: 'Spider' }, browser: { family: 'Googlebot', major: 2, minor: 1 } });
  t.notOk('type' in (bot.device as object), 'no device type for a crawler');
});

t.test('an unrecognised UA is Other with no device type', async (t) => {
  const output = parser.compute(['xyzzy plugh']);
  t.same(output, {
    device: { family: 'Other' },
    browser: { family: 'Other', major: null, minor: null, patch: null },
    os: { family: 'Other', major: null, minor: null, patch: null, patch_minor: null },
  });
});

t.test('an invalid UA gives null fields and no device type', async (t) => {
  for (const value of ['', '   ', null, 42, { ua: 'x' }]) {
    t.same(parser.compute([value]), {
      device: { family: null },
      browser: { family: null, major: null, minor: null, patch: null },
      os: { family: null, major: null, minor: null, patch: null, patch_minor: null },
    }, String(value));
  }
});

t.test('cached results equal fresh ones, are fresh objects, and the cache is bounded', async (t) => {
  const fresh = createUaParser(rules, 2);
  const first = fresh.compute([IPHONE]);
  fresh.compute([CHROME_WINDOWS]);
  const again = fresh.compute([IPHONE]);
  const cached = fresh.compute([IPHONE]);
  t.same(first, again);
  t.same(again, cached);
  t.not(again, cached);
  t.not(again.device, cached.device);
});
