/**
 * Event generators shared by the write benchmarks: a plain ~300-byte event and one that uses all
 * five add-ons with a realistic mix of repeating inputs (50 user agents, 5 referrers, 500 pages,
 * many distinct IPv4 addresses).
 */

export function plainEvent(index: number): Record<string, unknown> {
  return { user_id: `u${index % 10_000}`, page: `/products/${index % 500}`, price: (index % 100) + 0.5,
    referrer: 'https://example.com/search?q=widgets', tags: ['a', 'b'], device: { os: 'linux', mobile: false } };
}

const USER_AGENTS = Array.from({ length: 50 }, (_, i) => i % 2 === 0
  ? `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${100 + i}.0.0.0 Safari/537.36`
  : `Mozilla/5.0 (iPhone; CPU iPhone OS 17_${i % 7} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.${i % 7} Mobile/15E148 Safari/604.1`);
const REFERRERS = ['https://www.google.com/search?q=widgets', 'https://shop.example.com/cart',
  'https://mail.google.com/mail/u/0/', 'https://t.co/abc', 'https://www.bing.com/search?q=tally'];

/** An event that uses all five add-ons. */
export function enrichedEvent(index: number): Record<string, unknown> {
  return {
    ...plainEvent(index),
    ip: `${8 + (index % 60)}.${(index * 7) % 250}.${(index * 13) % 250}.${1 + (index % 200)}`,
    ua: USER_AGENTS[index % USER_AGENTS.length],
    page_url: `https://shop.example.com/products/${index % 500}?utm_source=news#top`,
    referrer: REFERRERS[index % REFERRERS.length],
    svc: { addons: [
      { name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' },
      { name: 'svc:ua_parser', input: { ua_string: 'ua' }, output: 'agent' },
      { name: 'svc:url_parser', input: { url: 'page_url' }, output: 'page_parts' },
      { name: 'svc:referrer_parser', input: { referrer_url: 'referrer', page_url: 'page_url' }, output: 'ref' },
      { name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'when' },
    ] },
  };
}
