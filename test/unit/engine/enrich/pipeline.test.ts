import t, { type Test } from 'tap';
import { ApiError } from '../../../../engine/base/errors.js';
import { createEnricher } from '../../../../engine/enrich/pipeline.js';

const enricher = await createEnricher({});
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0, 0);
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) ' +
  'Chrome/131.0.6778.86 Safari/537.36';

function event(addons: unknown, properties: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...properties,
    svc: { id: 'a'.repeat(24), created_at: '2026-11-22T12:00:00.000Z',
      timestamp: '2024-03-05T14:30:15.123Z', addons },
  };
}

function rejects(t: Test, addons: unknown, pattern: RegExp, properties = {}): void {
  let caught: unknown = null;
  try {
    enricher.apply(event(addons, properties), NOW);
  } catch (error) {
    caught = error;
  }
  t.ok(caught instanceof ApiError, `${pattern} throws an ApiError`);
  t.match(caught, { error_code: 'InvalidEventError', status: 400, message: pattern });
}

t.test('an event without svc.addons is left untouched', async (t) => {
  const plain = { a: 1, svc: { id: 'x', timestamp: '2024-01-01T00:00:00.000Z' } };
  enricher.apply(plain, NOW);
  t.same(plain, { a: 1, svc: { id: 'x', timestamp: '2024-01-01T00:00:00.000Z' } });
  enricher.apply({ a: 1 }, NOW);
});

t.test('runs all five add-ons in one event, in order', async (t) => {
  const addons = [
    { name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' },
    { name: 'svc:ua_parser', input: { ua_string: 'ua' }, output: 'tech' },
    { name: 'svc:url_parser', input: { url: 'page' }, output: 'page_info' },
    { name: 'svc:referrer_parser', input: { referrer_url: 'ref', page_url: 'page' }, output: 'ref_info' },
    { name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'when' },
    // Add-ons see earlier outputs: this one reads the URL parser's domain.
    { name: 'svc:url_parser', input: { url: 'ref' }, output: 'ref_url' },
  ];
  const e = event(addons, {
    ip: '8.8.8.8', ua: UA, page: 'https://shop.example.com/p?id=7', ref: 'https://t.co/x',
  });
  enricher.apply(e, NOW);
  t.match(e, {
    geo: { city: 'Mountain View', country_code: 'US' },
    tech: { device: { type: 'desktop' }, browser: { family: 'Chrome', major: 131 } },
    page_info: { protocol: 'https', domain: 'shop.example.com', query_string: { id: '7' } },
    ref_info: { medium: 'SOCIAL', source: 'Twitter' },
    when: { year: 2024, hour: 14, minute: 30, timezone_offset: 0, week: 10 },
    ref_url: { domain: 't.co' },
  });
});

t.test('writes nested outputs, creating objects and keeping siblings', async (t) => {
  const e = event([{ name: 'svc:url_parser', input: { url: 'a.b.url' }, output: 'a.b.parsed.url' }],
    { a: { b: { url: 'http://x.example/', keep: true } } });
  enricher.apply(e, NOW);
  t.match(e, { a: { b: { keep: true, url: 'http://x.example/', parsed: { url: { domain: 'x.example' } } } } });
});

t.test('reads svc.timestamp, and falls back to the receipt time when it is absent', async (t) => {
  const addons = [{ name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'dt' }];
  const e = event(addons);
  enricher.apply(e, NOW);
  t.match(e.dt, { year: 2024, month: 3, day_of_month: 5, hour: 14, millisecond: 123 });
  const bare = { svc: { addons } } as Record<string, unknown>;
  enricher.apply(bare, NOW);
  t.match(bare.dt, { year: 2026, month: 11, day_of_month: 22, hour: 12, timezone_offset: 0 });
});

t.test('remove_ip_property removes the address after the lookup', async (t) => {
  const e = event([{ name: 'svc:ip_to_geo', input: { ip: 'client.ip', remove_ip_property: true },
    output: 'geo' }], { client: { ip: '81.2.69.142', id: 3 } });
  enricher.apply(e, NOW);
  t.same(e.client, { id: 3 });
  t.match(e.geo, { city: 'London' });
  const kept = event([{ name: 'svc:ip_to_geo', input: { ip: 'ip', remove_ip_property: false },
    output: 'geo' }], { ip: '10.0.0.1' });
  enricher.apply(kept, NOW);
  t.equal(kept.ip, '10.0.0.1');
  t.equal((kept.geo as Record<string, unknown>).city, null);
});

t.test('malformed input values are stored with null fields, never an error', async (t) => {
  const addons = [
    { name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' },
    { name: 'svc:ua_parser', input: { ua_string: 'ua' }, output: 'tech' },
    { name: 'svc:url_parser', input: { url: 'page' }, output: 'page_info' },
    { name: 'svc:referrer_parser', input: { referrer_url: 'ref', page_url: 'page' }, output: 'ref_info' },
    { name: 'svc:date_time_parser', input: { date_time: 'when' }, output: 'dt' },
  ];
  const e = event(addons, { ip: 'bad ip', ua: '', page: 'not a url', ref: null, when: 'soon' });
  enricher.apply(e, NOW);
  t.match(e, {
    geo: { city: null, coordinates: null },
    tech: { device: { family: null }, browser: { family: null, major: null } },
    page_info: { protocol: null, query_string: null },
    ref_info: { medium: 'UNKNOWN', source: null, term: null },
    dt: { year: null, week: null },
  });
  t.notOk('type' in ((e.tech as Record<string, Record<string, unknown>>).device));
});

t.test('configuration errors are InvalidEventError naming the add-on and field', async (t) => {
  rejects(t, 'svc:ip_to_geo', /svc\.addons must be an array/);
  rejects(t, new Array(17).fill({}), /at most 16/);
  rejects(t, ['svc:ip_to_geo'], /svc\.addons\[0\] must be an object/);
  rejects(t, [{ name: 'svc:nope', input: {}, output: 'x' }], /svc\.addons\[0\]: unknown add-on name "svc:nope"/);
  rejects(t, [{ input: {}, output: 'x' }], /unknown add-on name null/);
  rejects(t, [{ name: 'svc:url_parser', output: 'x' }], /svc:url_parser.*input must be an object/);
  rejects(t, [{ name: 'svc:url_parser', input: {}, output: 'x' }], /svc:url_parser.*input\.url is required/);
  rejects(t, [{ name: 'svc:url_parser', input: { url: 'a..b' }, output: 'x' }], /input\.url must be a dotted/);
  rejects(t, [{ name: 'svc:url_parser', input: { url: 7 }, output: 'x' }], /input\.url must be a dotted/);
  rejects(t, [{ name: 'svc:referrer_parser', input: { referrer_url: 'r' }, output: 'x' }],
    /svc:referrer_parser.*input\.page_url is required/, { r: 'https://t.co/' });
  rejects(t, [{ name: 'svc:url_parser', input: { url: 'missing' }, output: 'x' }],
    /svc:url_parser.*input\.url names "missing", which the event does not have/);
  rejects(t, [{ name: 'svc:url_parser', input: { url: 'u' } }], /svc:url_parser.*output is required/,
    { u: 'http://e.com' });
  rejects(t, [{ name: 'svc:url_parser', input: { url: 'u' }, output: 'svc' }], /svc namespace/,
    { u: 'http://e.com' });
  rejects(t, [{ name: 'svc:url_parser', input: { url: 'u' }, output: 'svc.parsed' }], /svc namespace/,
    { u: 'http://e.com' });
  rejects(t, [{ name: 'svc:url_parser', input: { url: 'u' }, output: 'u.parsed' }],
    /svc:url_parser.*passes through "u", which is not an object/, { u: 'http://e.com' });
  rejects(t, [{ name: 'svc:ip_to_geo', input: { ip: 'ip', remove_ip_property: 'yes' }, output: 'g' }],
    /svc:ip_to_geo.*remove_ip_property must be a boolean/, { ip: '8.8.8.8' });
  rejects(t, [{ name: 'svc:ip_to_geo', input: { ip: 'svc.timestamp', remove_ip_property: true },
    output: 'g' }], /cannot remove a svc property/);
});

t.test('apply after close is a programmer error; events without add-ons still pass', async (t) => {
  enricher.close();
  t.throws(() => enricher.apply(event([]), NOW), { message: /after close/ });
  enricher.apply({ a: 1 }, NOW);
});

t.test('addresses in one place share one cached ip_to_geo result; each address still gets its own place', async (t) => {
  const enricher = await createEnricher({});
  const byPlace = new Map<string, string[]>();
  for (let i = 0; i < 400; i++) {
    const ip = `${8 + (i % 60)}.${(i * 7) % 250}.${(i * 13) % 250}.${1 + (i % 200)}`;
    const text = JSON.stringify(enricher.result('svc:ip_to_geo', [ip]).value);
    byPlace.set(text, [...(byPlace.get(text) ?? []), ip]);
  }
  const [place, ips] = [...byPlace].find(([, list]) => list.length > 1)!;
  t.ok(ips.length > 1, `${ips.length} addresses in ${place}`);
  const first = enricher.result('svc:ip_to_geo', [ips[0]]);
  t.equal(enricher.result('svc:ip_to_geo', [ips[1]]), first, 'one result object for both addresses');
  t.ok(Object.isFrozen(first.value), 'which no event can change');
  const event: Record<string, unknown> = { ip: ips[1], svc: { addons: [{ name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' }] } };
  enricher.apply(event, Date.now());
  t.equal(JSON.stringify(event.geo), place, 'written into an event as a copy of it');
  t.notOk(Object.isFrozen(event.geo), 'a copy the event owns');
  t.ok(byPlace.size > 20, `${byPlace.size} places for 400 addresses`);
  await enricher.close();
});
