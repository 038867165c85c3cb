/**
 * Question: how many events/s can Enricher.apply() enrich when every event carries all five
 * add-ons, called as the write path calls it (results listed in an Appended)? Events mix 50 distinct user agents, 50 referrers (search, social, email, internal,
 * unknown) and random public IPs (10% IPv6). "cold" makes every UA and referrer unique, so each
 * event parses from scratch; "new IP each" reuses the 50 values but never an IP (worst case for
 * geo: a tree walk per event); "warm" draws IPs from 2,000 clients, so every cache hits.
 * Estimate: the write path's goal is ≥ 50,000 events/s batched with all five add-ons, so apply()
 * should stay well above 100,000 events/s warm; geo lookups alone are ~230k/s (docs/enrichment.md).
 * Run: npx tsc -p tsconfig.json && node dist/bench/enrich.js
 */
import os from 'node:os';
import { newAppended, type Appended } from '../engine/schema/fragment.js';
import { createEnricher, type Enricher } from '../engine/enrich/pipeline.js';
import { mulberry32 as random } from '../test/helpers/random.js';

const SEED = 0x5eed1234;
const WARM_EVENTS = 20_000;
const WARM_ROUNDS = 10;
const COLD_EVENTS = 5_000;
const NEW_IP_SETS = 5;
const ESTIMATE_WARM_PER_SEC = 100_000;
/** Distinct client addresses of the warm runs: the geo cache holds them all, as it would a busy hour's. */
const CLIENTS = 2_000;

const BROWSERS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:V.0) Gecko/20100101 Firefox/V.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:V.0) Gecko/20100101 Firefox/V.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Safari/537.36 Edg/V.0.0.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/V.5 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/V.5 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Linux; Android 13; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Linux; Android 12; SAMSUNG SM-A525F) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/V.0 Chrome/115.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/V.1 Safari/605.1.15',
  'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/V.0.0.0 Safari/537.36 OPR/V.0.0.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/V.0.0.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
];
const VERSIONS = [118, 124, 131];

const REFERRERS = [
  'https://www.google.com/search?q=event+analytics', 'https://www.google.co.uk/search?q=tally',
  'https://www.google.de/', 'https://www.bing.com/search?q=self+hosted+analytics',
  'https://duckduckgo.com/?q=keen+io+alternative', 'https://search.yahoo.com/search?p=analytics',
  'https://yandex.ru/search/?text=analytics', 'https://www.baidu.com/s?wd=analytics',
  'https://t.co/abc123', 'https://www.facebook.com/', 'https://l.facebook.com/l.php?u=x',
  'https://www.linkedin.com/feed/', 'https://www.reddit.com/r/selfhosted/', 'https://news.ycombinator.com/',
  'https://mail.google.com/mail/u/0/', 'https://outlook.live.com/mail/0/inbox',
  'https://www.youtube.com/watch?v=abc', 'https://github.com/tally/tally',
  'https://blog.example.org/post/1', 'https://docs.example.net/guide',
];
const PAGES = [
  'https://shop.example.com/', 'https://shop.example.com/products/42?utm_source=news#reviews',
  'https://shop.example.com/cart', 'https://shop.example.com/search?q=shoes&page=2',
  'https://shop.example.com/blog/launch',
];

const NON_PUBLIC_FIRST_OCTETS = new Set([0, 10, 100, 127, 169, 172, 192, 198, 203]);

function publicIp(next: () => number): string {
  if (next() < 0.1) {
    const groups = [0x2000 + Math.floor(next() * 0x1fff)];
    for (let index = 0; index < 3; index++) groups.push(Math.floor(next() * 0x10000));
    return groups.map((group) => group.toString(16)).join(':') + '::1';
  }
  let first = 0;
  while (NON_PUBLIC_FIRST_OCTETS.has(first)) first = 1 + Math.floor(next() * 222);
  return [first, ...[0, 0, 0].map(() => Math.floor(next() * 256))].join('.');
}

const ALL_ADDONS = [
  { name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' },
  { name: 'svc:ua_parser', input: { ua_string: 'ua' }, output: 'tech' },
  { name: 'svc:url_parser', input: { url: 'page' }, output: 'page_info' },
  { name: 'svc:referrer_parser', input: { referrer_url: 'referrer', page_url: 'page' }, output: 'source' },
  { name: 'svc:date_time_parser', input: { date_time: 'svc.timestamp' }, output: 'when' },
];

/** `clients` > 0 draws IPs from that many addresses; 0 gives every event a new random one. */
function makeEvents(
  count: number,
  unique: boolean,
  addons: readonly object[],
  clients = 0,
  seed = SEED,
): Record<string, unknown>[] {
  const next = random(seed);
  const pool = Array.from({ length: clients }, () => publicIp(next));
  const agents = BROWSERS.flatMap((ua) => VERSIONS.map((v) => ua.replaceAll('V', String(v)))).slice(0, 50);
  const referrers = [...REFERRERS, ...PAGES.map((page) => page + 'x'), ...REFERRERS].slice(0, 50);
  const events: Record<string, unknown>[] = [];
  for (let index = 0; index < count; index++) {
    const ua = agents[Math.floor(next() * agents.length)];
    const referrer = referrers[Math.floor(next() * referrers.length)];
    const second = String(Math.floor(next() * 60)).padStart(2, '0');
    events.push({
      ip: clients > 0 ? pool[Math.floor(next() * clients)] : publicIp(next),
      ua: unique ? `${ua} Build/${index}` : ua,
      page: PAGES[Math.floor(next() * PAGES.length)],
      referrer: unique ? `${referrer}${referrer.includes('?') ? '&' : '?'}n=${index}` : referrer,
      svc: {
        id: index.toString(16).padStart(24, '0'), created_at: '2026-11-22T12:00:00.000Z',
        timestamp: `2026-11-22T11:59:${second}.123Z`, addons,
      },
    });
  }
  return events;
}

/** Events per second of wall time and of this process's CPU time (other load inflates wall). */
interface Rate {
  wall: number;
  cpu: number;
}

/**
 * Results are listed in `appended`, as the write path asks (cached, no copy into the event); with
 * `appended` null they are written into each event as copies, as for a caller without one.
 */
function measure(
  enricher: Enricher, events: Record<string, unknown>[], rounds: number, appended: Appended | null = newAppended(),
): Rate {
  const started = process.hrtime.bigint();
  const cpuStarted = process.cpuUsage();
  for (let round = 0; round < rounds; round++) {
    for (const event of events) enricher.apply(event, 0, appended ?? undefined);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuStarted);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return { wall: (events.length * rounds) / seconds, cpu: (events.length * rounds) / cpuSeconds };
}

/** The mean rate of equal-sized runs. */
function harmonicMean(rates: number[]): number {
  return rates.length / rates.reduce((sum, rate) => sum + 1 / rate, 0);
}

function report(label: string, rate: Rate, estimate = ''): void {
  const format = (perSec: number): string => Math.round(perSec).toLocaleString('en-US').padStart(10);
  console.log(`${label.padEnd(36)} ${format(rate.wall)} /s wall ${format(rate.cpu)} /s cpu ${estimate}`);
}

const loadStarted = Date.now();
const enricher = await createEnricher({});
console.log(`load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`);
console.log(`createEnricher: ${Date.now() - loadStarted} ms (mmdb + regexes.yaml + referers.yml)`);

const cold = makeEvents(COLD_EVENTS, true, ALL_ADDONS);
report('all five, cold (unique UA/referrer)', measure(enricher, cold, 1));
// Warm everything but the addresses on one set of events, then measure on a set with new ones.
measure(enricher, makeEvents(WARM_EVENTS, false, ALL_ADDONS, 0, SEED + 1), 1);
const newIpRates: Rate[] = [];
for (let set = 0; set < NEW_IP_SETS; set++) {
  newIpRates.push(measure(enricher, makeEvents(WARM_EVENTS, false, ALL_ADDONS, 0, SEED + 2 + set), 1));
}
report('all five, warm UA/ref, new IP each', {
  wall: harmonicMean(newIpRates.map((rate) => rate.wall)),
  cpu: harmonicMean(newIpRates.map((rate) => rate.cpu)),
});
const warm = makeEvents(WARM_EVENTS, false, ALL_ADDONS, CLIENTS);
measure(enricher, warm, 1);
report(`all five, warm, ${CLIENTS} client IPs`, measure(enricher, warm, WARM_ROUNDS),
  `(estimate: well above ${ESTIMATE_WARM_PER_SEC.toLocaleString('en-US')})`);
const copied = makeEvents(WARM_EVENTS, false, ALL_ADDONS, CLIENTS);
measure(enricher, copied, 1, null);
report('all five, warm, copies into events', measure(enricher, copied, WARM_ROUNDS, null));
for (const addon of ALL_ADDONS) {
  const alone = makeEvents(WARM_EVENTS, false, [addon], CLIENTS);
  measure(enricher, alone, 1);
  report(`  ${addon.name} alone, warm`, measure(enricher, alone, WARM_ROUNDS));
}
const none = makeEvents(WARM_EVENTS, false, []).map((event) => ({ ...event, svc: {} }));
report('no add-ons (hot-path return)', measure(enricher, none, WARM_ROUNDS));
enricher.close();
