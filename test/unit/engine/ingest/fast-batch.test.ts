/**
 * The fast batch reader against the general path (parseBatchBody → EventPreparer → flatten): on
 * every body it takes, the same collections, timestamps, sizes and leaves; every body the general
 * path refuses or reads in its own way, it leaves alone; and no mutation of a body makes it take
 * text that is not JSON. Events with `svc.addons` are compared with the real enricher (bundled data).
 */
import t, { type Test } from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { createEnricher } from '../../../../engine/enrich/pipeline.js';
import { EventPreparer, leavesBytes } from '../../../../engine/ingest/event-preparer.js';
import { isApiError } from '../../../../engine/base/errors.js';
import { ADDONS_PER_EVENT_MAX, EVENT_BYTES_MAX } from '../../../../engine/base/limits.js';
import { isFragment, makeFragment, pathsUnder } from '../../../../engine/schema/fragment.js';
import { PathJoiner, flattenEvent, newLeaves, type Leaves } from '../../../../engine/schema/flatten.js';
import { LeafEncoder, decodeLeaves } from '../../../../engine/schema/leaf-codec.js';
import { packBatch, parseBatchBody } from '../../../../engine/ingest/batch.js';
import { FastBatchReader, type FastBatch } from '../../../../engine/ingest/fast-batch.js';

const ctx = { ip: '203.0.113.9', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Tally-test' };
const NOW = Date.parse('2026-11-25T10:00:00.000Z');
const NOW_ISO = new Date(NOW).toISOString();
/** A reader without an enricher never takes add-ons, so its general path needs none to be compared with it. */
const preparer = new EventPreparer({
  apply: () => undefined, close: () => undefined, inputKeys: () => undefined,
  result: () => { throw new Error('no add-ons here'); },
});
const encoder = new LeafEncoder();

interface Outcome {
  collections: [string, number][];
  t: number[];
  ranges: number[];
  tooLarge: number[];
  paths: string[];
  values: unknown[];
}

/** The two ways under test: the general path's preparer and the fast reader. */
interface Pair {
  readonly preparer: EventPreparer;
  readonly reader: FastBatchReader;
}

/** What the general path makes of `body`, or the error it refuses the body or an event with. */
function general(body: Uint8Array, pair: Pair = plainPair): Outcome | string {
  let batch;
  try {
    batch = parseBatchBody(body);
  } catch (error) {
    if (isApiError(error)) return `${error.error_code}: ${error.message}`;
    throw error;
  }
  const leaves = newLeaves();
  const packed = packBatch(pair.preparer, encoder, batch, ctx, NOW, NOW_ISO, leaves);
  const refused = packed.errorOf.findIndex((index) => index !== -1);
  if (refused !== -1) return `event ${refused}: ${packed.errors[packed.errorOf[refused]].message}`;
  if (packed.tokens.some((token) => token !== null)) return 'a token';
  return outcome(packed.collections, packed.timestamps, packed.ranges, packed.tooLarge, leaves);
}

function outcome(collections: [string, number][], times: Float64Array, ranges: Int32Array, tooLarge: Uint8Array, leaves: Leaves): Outcome {
  const count = ranges.length === 0 ? 0 : ranges[ranges.length - 1];
  return {
    collections, t: [...times], ranges: [...ranges], tooLarge: [...tooLarge],
    paths: leaves.paths.slice(0, count), values: leaves.values.slice(0, count).map(exact),
  };
}

/** Numbers as text that tells -0 from 0; lists element by element. */
function exact(value: unknown): unknown {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : value;
  return Array.isArray(value) ? value.map(exact) : value;
}

const reader = new FastBatchReader();
const plainPair: Pair = { preparer, reader };
const fastLeaves = newLeaves();
const fastExpanded = newLeaves();
const joiner = new PathJoiner();

/**
 * What the fast path makes of `body`, or null. The reader gives each add-on result as one leaf,
 * which the encoder writes as the result's leaves under the leaf's path; here they are expanded
 * so (the ranges count them so already). `encodedAgree` checks the encoder's own expansion.
 */
function fast(body: Uint8Array, pair: Pair = plainPair): Outcome | null {
  const read: FastBatch | null = pair.reader.read(body, ctx, NOW, fastLeaves);
  if (read === null) return null;
  const out = fastExpanded;
  out.count = 0;
  for (let i = 0; i < fastLeaves.count; i++) {
    const value = fastLeaves.values[i];
    if (!isFragment(value)) {
      out.paths[out.count] = fastLeaves.paths[i];
      out.values[out.count++] = value;
      continue;
    }
    const paths = pathsUnder(value, fastLeaves.paths[i], joiner);
    for (let j = 0; j < paths.length; j++) {
      out.paths[out.count] = paths[j];
      out.values[out.count++] = value.leafValues[j];
    }
  }
  return outcome(read.collections, read.timestamps, read.ranges, read.tooLarge, out);
}

const fastEncoder = new LeafEncoder();

/** Whether the fast path's leaves, encoded as the write path encodes them, read back as the general path's. */
function encodedAgree(body: Uint8Array, pair: Pair): boolean {
  const leaves = newLeaves();
  packBatch(pair.preparer, encoder, parseBatchBody(body), ctx, NOW, NOW_ISO, leaves);
  const expected = decodeLeaves(encoder.encode(leaves, leaves.count), newLeaves());
  const read = pair.reader.read(body, ctx, NOW, fastLeaves);
  if (read === null) return false;
  const got = decodeLeaves(fastEncoder.encode(fastLeaves, fastLeaves.count), newLeaves());
  return got.count === expected.count &&
    JSON.stringify([got.paths.slice(0, got.count), got.values.slice(0, got.count)]) ===
    JSON.stringify([expected.paths.slice(0, expected.count), expected.values.slice(0, expected.count)]);
}

/** Checks the fast path on `body`: same outcome, or none. Returns whether it took the body. */
function agree(t: Test, body: Uint8Array, what: string, pair: Pair = plainPair): boolean {
  const got = fast(body, pair);
  if (got === null) return false;
  const expected = general(body, pair);
  if (typeof expected === 'string') {
    t.fail(`${what}: the fast path took a body the general path refuses (${expected.slice(0, 120)})`);
    return true;
  }
  // Only failures are reported one by one: a passing body is counted below, not listed.
  if (JSON.stringify(got) !== JSON.stringify(expected)) t.strictSame(got, expected, what);
  return true;
}

const UNICODE = ['é', '日本語', '😀', 'a\u0000b'.replace('\u0000', '\u0001'), '\u2028', 'Ω≈ç√'];
const NUMBERS = ['0', '-0', '1', '-17', '12.5', '0.05', '-0.0', '3.14159', '1e3', '1E-7', '2.5e+2', '123456789012345',
  '1234567890123456', '999999999999999999', '0.1', '0.3000000000000001', '5e-324', '9.2e18', '-9.2e18',
  '9007199254740993', '4.35', '1.005', '100.10', '-123.456000'];
const STRINGS = ['"plain"', '""', '"with space"', '"${svc.ip}"', '"${svc.user_agent}"', '"\\n\\t\\"quoted\\""',
  '"\\u00e9t\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800 lone"', '"\\/slash\\\\"', ...UNICODE.map((s) => JSON.stringify(s)),
  '"2026-07-03T12:00:00.000Z"', `"${'x'.repeat(200)}"`];

/** A random JSON value as text: nested objects, lists of one type, every kind of leaf. */
function valueText(random: () => number, depth: number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const roll = random();
  if (roll < 0.3) return pick(STRINGS);
  if (roll < 0.55) return pick(NUMBERS);
  if (roll < 0.62) return pick(['true', 'false', 'null']);
  if (roll < 0.8 && depth < 5) {
    const size = Math.floor(random() * 4);
    const keys = new Set<string>();
    while (keys.size < size) keys.add(pick(['a', 'b', 'c', 'price', 'name with space', 'svc', 'x_y', '$ref', 'A-Z']));
    return `{${[...keys].map((key) => `${pick(['', ' ', '\n  '])}"${key}":${pick(['', ' '])}${valueText(random, depth + 1)}`).join(',')}}`;
  }
  const kind = pick(['str', 'num', 'bool', 'empty']);
  const items = Array.from({ length: Math.floor(random() * 4) }, () => random() < 0.15 ? 'null'
    : kind === 'str' ? pick(STRINGS) : kind === 'num' ? pick(NUMBERS) : pick(['true', 'false']));
  return kind === 'empty' ? '[]' : `[${items.join(pick([',', ', ']))}]`;
}

function eventText(random: () => number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const keys = new Set<string>();
  const size = 1 + Math.floor(random() * 8);
  while (keys.size < size) keys.add(pick(['user_id', 'page', 'price', 'quantity', 'is_member', 'tags', 'device', 'nested', 'empty', 'n']));
  const members = [...keys].map((key) => `"${key}":${valueText(random, 1)}`);
  const svc = pick([null, null, '{}', '{"timestamp":"2026-07-03T12:34:56.789Z"}', '{"timestamp": null}',
    '{"timestamp":"2026-07-03T12:34:56+02:00"}', '{ "timestamp" : "2024-02-29T00:00:00.000Z" }', '{"timestamp":"0099-01-01T00:00:00.000Z"}']);
  if (svc !== null) members.splice(Math.floor(random() * (members.length + 1)), 0, `"svc":${svc}`);
  return `{${members.join(pick([',', ', ', ',\n']))}}`;
}

function bodyText(random: () => number, events: number): string {
  const first = Array.from({ length: events }, () => eventText(random)).join(',');
  const second = Array.from({ length: Math.floor(events / 3) }, () => eventText(random)).join(',');
  return random() < 0.5 ? `{"views":[${first}]}` : ` {\n "views" : [ ${first} ] ,\n "clicks": [${second}] }\n`;
}

t.test('on generated bodies the fast path gives what the general path gives', async (t) => {
  const random = mulberry32(7);
  let taken = 0;
  const bodies = 400;
  for (let i = 0; i < bodies; i++) {
    const body = Buffer.from(bodyText(random, 1 + Math.floor(random() * 30)));
    if (agree(t, body, `body ${i}`)) taken++;
  }
  // Bodies with a duplicate-free event and only allowed names are most of them: the path is used.
  t.ok(taken > bodies * 0.8, `the fast path took ${taken} of ${bodies} bodies`);
});

t.test('the fast path leaves every body the general path refuses or reads its own way', async (t) => {
  const plain = '{"a":1}';
  const cases: Record<string, string> = {
    'empty body': '',
    'not an object': '[{"a":1}]',
    'a list that is not an array': '{"c":{"a":1}}',
    'an event that is not an object': '{"c":["x"]}',
    'a null event': '{"c":[null]}',
    'a duplicate key': '{"c":[{"a":1,"a":2}]}',
    'a duplicate nested key': '{"c":[{"o":{"a":1,"b":2,"a":3}}]}',
    'a duplicate collection': `{"c":[${plain}],"c":[${plain}]}`,
    'a digit-led name (objects list it first)': '{"c":[{"b":1,"7":2}]}',
    'a digit-led collection': `{"7":[${plain}]}`,
    '__proto__': '{"c":[{"__proto__":"${svc.ip}"}]}',
    'a dotted name': '{"c":[{"a.b":1}]}',
    'an empty name': '{"c":[{"":1}]}',
    'a name with an escape': '{"c":[{"\\u0061":1}]}',
    'a non-ASCII name': '{"c":[{"é":1}]}',
    'a long name': `{"c":[{"${'n'.repeat(256)}":1}]}`,
    'a long string': `{"c":[{"a":"${'s'.repeat(10_000)}"}]}`,
    'a 19-digit number': '{"c":[{"a":9223372036854775808}]}',
    'a 19-digit in-range number': '{"c":[{"a":1000000000000000000}]}',
    'an infinite number': '{"c":[{"a":1e400}]}',
    'a number past 2^63': '{"c":[{"a":1e19}]}',
    'deep nesting': `{"c":[{"a":${'{"a":'.repeat(32)}1${'}'.repeat(32)}}]}`,
    'a mixed list': '{"c":[{"a":[1,"x"]}]}',
    'an object in a list': '{"c":[{"a":[{"b":1}]}]}',
    'a list in a list': '{"c":[{"a":[[1]]}]}',
    'add-ons': '{"c":[{"u":"x","svc":{"addons":[]}}]}',
    'a uniqueness token': '{"c":[{"svc":{"uniqueness_token":"t"}}]}',
    'svc.id': '{"c":[{"svc":{"id":"x"}}]}',
    'svc not an object': '{"c":[{"svc":"x"}]}',
    'svc twice': '{"c":[{"svc":{},"svc":{}}]}',
    'a bad timestamp': '{"c":[{"svc":{"timestamp":"yesterday"}}]}',
    'a timestamp that is a number': '{"c":[{"svc":{"timestamp":1}}]}',
    'a trailing comma': '{"c":[{"a":1},]}',
    'a trailing comma in an object': '{"c":[{"a":1,}]}',
    'a missing brace': '{"c":[{"a":1}]',
    'trailing text': `{"c":[${plain}]}x`,
    'two documents': `{"c":[${plain}]}{}`,
    'a byte order mark': `\ufeff{"c":[${plain}]}`,
    'a leading zero': '{"c":[{"a":01}]}',
    'a bare point': '{"c":[{"a":1.}]}',
    'a leading point': '{"c":[{"a":.5}]}',
    'a lone minus': '{"c":[{"a":-}]}',
    'a plus sign': '{"c":[{"a":+1}]}',
    'an empty exponent': '{"c":[{"a":1e}]}',
    'a control character in a string': '{"c":[{"a":"x\ty"}]}',
    'a bad escape': '{"c":[{"a":"\\x41"}]}',
    'a short unicode escape': '{"c":[{"a":"\\u12"}]}',
    'an unterminated string': '{"c":[{"a":"x}]}',
    'single quotes': "{'c':[{'a':1}]}",
    'a bare word': '{"c":[{"a":yes}]}',
    'a misspelt literal': '{"c":[{"a":tru}]}',
    'NaN': '{"c":[{"a":NaN}]}',
    'too many events': `{"c":[${Array.from({ length: 20_001 }, () => plain).join(',')}]}`,
  };
  for (const [what, text] of Object.entries(cases)) t.equal(fast(Buffer.from(text)), null, what);
  // The same bodies with the problem taken out are taken, so the refusals above are not a fluke.
  t.not(fast(Buffer.from(`{"c":[${plain}]}`)), null, 'a plain body is taken');
  t.not(fast(Buffer.from(`{"c":[${Array.from({ length: 20_000 }, () => plain).join(',')}]}`)), null, '20,000 events are taken');
  t.not(fast(Buffer.from(`{"c":[{"a":${'{"a":'.repeat(30)}1${'}'.repeat(30)}}]}`)), null, 'nesting under the limit is taken');
});

t.test('sizes, placeholders and timestamps come out as the general path has them', async (t) => {
  const wide = `{${Array.from({ length: 100 }, (_, i) => `"p${i}":"${'v'.repeat(9_500)}"`).join(',')}}`;
  const narrow = `{${Array.from({ length: 80 }, (_, i) => `"p${i}":"${'v'.repeat(9_500)}"`).join(',')}}`;
  const body = Buffer.from(`{"c":[${wide},${narrow},{"ip":"\${svc.ip}","ua":["\${svc.user_agent}",null]},` +
    '{"svc":{"timestamp":"2026-02-30T00:00:00.000Z"}}]}');
  t.equal(fast(body), null, 'an impossible date is left to the general path');
  const good = Buffer.from(body.toString().replace('2026-02-30', '2026-02-28'));
  const got = fast(good);
  t.ok(got, 'taken');
  t.same(got!.tooLarge, [1, 0, 0, 0], 'the 950,000-byte event is too large, the 760,000-byte one is not');
  t.same(got!.t, [NOW, NOW, NOW, Date.parse('2026-02-28T00:00:00.000Z')]);
  t.ok(agree(t, good, 'sizes and placeholders'));
  const ip = got!.paths.indexOf('ip');
  t.equal(got!.values[ip], ctx.ip, 'the IP placeholder is replaced');
  t.same(got!.values[ip + 1], [ctx.userAgent, null], 'a placeholder in a list is replaced');
});

/** Bytes a mutation puts into a body: JSON's own, and a few that no JSON text may hold there. */
const SIGNIFICANT = [...'{}[]:,"\\ -+.0123456789eEtfnulx'].map((c) => c.charCodeAt(0)).concat([0x00, 0x09, 0x80, 0xc3, 0xff]);

/** `original` with one byte of `bytes` at `at` replacing one or inserted, or a byte removed, or cut there. */
function mutate(original: Buffer, at: number, random: () => number, bytes: readonly number[] = SIGNIFICANT): Buffer {
  const byte = bytes[Math.floor(random() * bytes.length)]!;
  const roll = random();
  return roll < 0.4 ? Buffer.concat([original.subarray(0, at), Buffer.from([byte]), original.subarray(at + 1)])
    : roll < 0.65 ? Buffer.concat([original.subarray(0, at), original.subarray(at + 1)])
      : roll < 0.9 ? Buffer.concat([original.subarray(0, at), Buffer.from([byte]), original.subarray(at)])
        : original.subarray(0, at);
}

t.test('no mutation of a body makes the fast path take what the general path does not', async (t) => {
  const random = mulberry32(11);
  let taken = 0;
  let mutations = 0;
  for (let i = 0; i < 300; i++) {
    const original = Buffer.from(bodyText(random, 3));
    for (let m = 0; m < 20; m++) {
      const at = Math.floor(random() * original.length);
      const mutated = mutate(original, at, random);
      mutations++;
      if (agree(t, mutated, `body ${i}, mutation ${m}: ${JSON.stringify(mutated.toString('latin1').slice(Math.max(0, at - 20), at + 20))}`)) taken++;
    }
  }
  t.ok(taken > 100 && taken < mutations, `${taken} of ${mutations} mutated bodies were still plain batches and agreed`);
});

// ---------------------------------------------------------------------------------------------
// Add-ons, with the real enricher (bundled data). `shared` gives both ways one enricher, as the
// write path and an ingest worker do; `apart` gives each its own, so that a result the fast path
// put in the cache can never stand in for one the general path would compute.

const sharedEnricher = await createEnricher({});
const shared: Pair = { preparer: new EventPreparer(sharedEnricher), reader: new FastBatchReader(sharedEnricher) };
const apartGeneral = await createEnricher({});
const apartFast = await createEnricher({});
const apart: Pair = { preparer: new EventPreparer(apartGeneral), reader: new FastBatchReader(apartFast) };
t.teardown(() => {
  for (const enricher of [sharedEnricher, apartGeneral, apartFast]) enricher.close();
});

interface AddonEntry {
  name: string;
  input: Record<string, unknown>;
  output: string;
  [extra: string]: unknown;
}

const addon = (name: string, input: Record<string, unknown>, output: string): AddonEntry => ({ name, input, output });
const geoOf = (ip: string, output = 'geo') => addon('svc:ip_to_geo', { ip }, output);
const agentOf = (ua: string, output = 'agent') => addon('svc:ua_parser', { ua_string: ua }, output);
const partsOf = (url: string, output = 'page_parts') => addon('svc:url_parser', { url }, output);
const refOf = (referrer: string, page: string, output = 'ref') =>
  addon('svc:referrer_parser', { referrer_url: referrer, page_url: page }, output);
const whenOf = (dateTime: string, output = 'when') => addon('svc:date_time_parser', { date_time: dateTime }, output);

/** All five add-ons, as bench/events.ts enrichedEvent sends them. */
const ALL_FIVE = [geoOf('ip'), agentOf('ua'), partsOf('page_url'), refOf('referrer', 'page_url'), whenOf('svc.timestamp')];

/** Lists the fast path plans: more of them than the reader keeps planned, so plans come and go. */
const ADDON_LISTS: AddonEntry[][] = [
  ALL_FIVE,
  [geoOf('client.ip'), agentOf('client.ua'), partsOf('ctx.page.url'), refOf('ctx.page.referrer', 'ctx.page.url'),
    whenOf('ctx.local_time')],
  [whenOf('svc.timestamp'), partsOf('page_url', 'page parts'), geoOf('ip', 'géo')],
  // One add-on twice on the same input: one cached result under two names.
  [geoOf('ip'), geoOf('ip', 'geo_again'), whenOf('local_time', 'local'), whenOf('svc.timestamp')],
  [],
  [{ name: 'svc:url_parser', input: { url: 'page_url', unused: 'nowhere' }, output: 'page_parts', note: 'kept as sent' }],
  [refOf('referrer', 'page_url')],
  [agentOf('ua'), partsOf('referrer', 'referrer_parts'), whenOf('client.ip', 'not_a_time')],
];

const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15',
  'Googlebot/2.1 (+http://www.google.com/bot.html)', 'curl/8.4.0', '', '${svc.user_agent}',
];
const IPS = ['8.8.8.8', '81.2.69.160', '2001:4860:4860::8888', '1.1.1.1', '10.0.0.1', '127.0.0.1', '192.168.1.20',
  '999.1.1.1', 'not an ip', '', '${svc.ip}',
  ...Array.from({ length: 24 }, (_, i) => `${8 + i * 5}.${(i * 7) % 250}.${(i * 13) % 250}.${1 + i}`)];
const URLS = ['https://shop.example.com/products/7?utm_source=news&utm_medium=email#top', 'http://example.com',
  'https://example.com:8443/a/b/c?x=1&x=2&flag', 'https://例え.jp/パス?q=値', 'mailto:someone@example.com',
  'not a url', '', '/relative/path?q=1', 'https://shop.example.com/cart'];
const REFERRERS = ['https://www.google.com/search?q=widgets', 'https://www.bing.com/search?q=tally',
  'https://mail.google.com/mail/u/0/', 'https://t.co/abc', 'https://www.facebook.com/', 'https://shop.example.com/cart',
  '', 'garbage'];
const DATES = ['2026-11-24T10:00:00-08:00', '2026-11-24T18:00:00.000Z', '2024-02-29T23:59:59.999+05:30',
  '2026-01-01T00:00', '2026-02-30T00:00:00Z', 'yesterday', ''];
/** Input values that are not strings, as JSON text: add-ons get them as they are, uncached. */
const ODD_VALUES = ['0', '-0', '12.5', 'true', 'false', 'null'];
const SVC_TIMESTAMPS = [null, 'null', '"2026-07-03T12:34:56.789Z"', '"2026-11-24T10:00:00-08:00"',
  '"2024-02-29T23:59:59.999+05:30"', '"2026-01-01T00:00"', '"2026-11-24T10:00:00.000Z"'];

/**
 * An event that has every property some list of ADDON_LISTS reads, at the top and nested, a few
 * plain properties, and `svc` with `list` and maybe a timestamp, before or after it.
 */
function enrichedEventText(random: () => number, list: readonly AddonEntry[]): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const input = (items: readonly string[]) => random() < 0.1 ? pick(ODD_VALUES) : JSON.stringify(pick(items));
  const members = [
    `"ip":${input(IPS)}`, `"ua":${input(USER_AGENTS)}`, `"page_url":${input(URLS)}`, `"referrer":${input(REFERRERS)}`,
    `"local_time":${input(DATES)}`, `"client":{"ip":${input(IPS)},"ua":${input(USER_AGENTS)}}`,
    `"ctx":{"page":{"url":${input(URLS)},"referrer":${input(REFERRERS)}},"local_time":${input(DATES)}}`,
  ];
  for (const key of ['user_id', 'price', 'tags', 'device']) if (random() < 0.5) members.push(`"${key}":${valueText(random, 1)}`);
  for (let i = members.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [members[i], members[j]] = [members[j]!, members[i]!];
  }
  const svc = [`"addons":${JSON.stringify(list)}`];
  const timestamp = pick(SVC_TIMESTAMPS);
  if (timestamp !== null) svc.splice(random() < 0.5 ? 0 : 1, 0, `"timestamp"${pick(['', ' '])}:${pick(['', ' '])}${timestamp}`);
  members.splice(Math.floor(random() * (members.length + 1)), 0, `"svc":{${svc.join(pick([',', ', ', ',\n']))}}`);
  return `{${members.join(pick([',', ', ', ',\n']))}}`;
}

function enrichedBodyText(random: () => number, events: number, list: () => readonly AddonEntry[]): string {
  const first = Array.from({ length: events }, () => enrichedEventText(random, list())).join(',');
  const second = Array.from({ length: Math.floor(events / 3) }, () => enrichedEventText(random, list())).join(',');
  return random() < 0.5 ? `{"views":[${first}]}` : ` {\n "views" : [ ${first} ] ,\n "clicks": [${second}] }\n`;
}

/** The value at `path` of event `index` of an outcome (undefined when it has no such leaf). */
function leafOf(outcome: Outcome, index: number, path: string): unknown {
  const from = outcome.ranges[2 * index];
  const to = outcome.ranges[2 * index + 1];
  for (let i = from; i < to; i++) if (outcome.paths[i] === path) return outcome.values[i];
  return undefined;
}

const bodyOf = (...events: unknown[]): Buffer => Buffer.from(JSON.stringify({ c: events }));

t.test('with the real enricher, bodies of events with all five add-ons are taken and agree', async (t) => {
  const random = mulberry32(23);
  let events = 0;
  for (let i = 0; i < 40; i++) {
    const body = Buffer.from(enrichedBodyText(random, 1 + Math.floor(random() * 60), () => ALL_FIVE));
    t.ok(agree(t, body, `body ${i}`, shared), `body ${i} is taken`);
    events += fast(body, shared)!.t.length;
  }
  t.ok(events > 1_000, `${events} events were read`);
  // The same bodies again: now every result is in the caches, on both sides.
  const again = mulberry32(23);
  for (let i = 0; i < 40; i++) {
    const body = Buffer.from(enrichedBodyText(again, 1 + Math.floor(again() * 60), () => ALL_FIVE));
    t.ok(agree(t, body, `body ${i} again`, shared), `body ${i} is taken again`);
    t.ok(encodedAgree(body, shared), `body ${i} again: its encoded leaves read back as the general path's`);
  }
});

t.test('the add-ons\' results are in the leaves, after the event\'s own, on both ways', async (t) => {
  const event = {
    user_id: 'u1', ip: '8.8.8.8', ua: USER_AGENTS[0], page_url: 'https://shop.example.com/products/7?utm_source=news#top',
    referrer: 'https://www.google.com/search?q=widgets', svc: { timestamp: '2026-11-24T10:00:00-08:00', addons: ALL_FIVE },
  };
  const body = bodyOf(event, { ...event, ip: '81.2.69.160' });
  for (const [name, pair] of [['shared', shared], ['apart', apart]] as const) {
    const got = fast(body, pair);
    t.ok(got, `${name}: taken`);
    t.ok(agree(t, body, name, pair), `${name}: agrees`);
    const expected = general(body, pair) as Outcome;
    t.same(expected.paths.slice(0, 7), ['user_id', 'ip', 'ua', 'page_url', 'referrer', 'svc.addons.', 'geo.city'],
      `${name}: own leaves, the list, then the results`);
    t.equal(leafOf(got!, 0, 'svc.addons.'), JSON.stringify(ALL_FIVE), `${name}: the list is kept as sent`);
    t.equal(leafOf(got!, 0, 'geo.country_code'), 'US');
    t.equal(leafOf(got!, 1, 'geo.country_code'), 'GB');
    t.equal(leafOf(got!, 0, 'agent.browser.family'), 'Chrome');
    t.equal(leafOf(got!, 0, 'page_parts.domain'), 'shop.example.com');
    t.equal(leafOf(got!, 0, 'page_parts.query_string.utm_source'), 'news');
    t.equal(leafOf(got!, 0, 'ref.medium'), 'SEARCH');
    t.equal(leafOf(got!, 0, 'ref.source'), 'Google');
    t.equal(leafOf(got!, 0, 'when.hour'), 18);
    t.same(got!.t, [Date.parse('2026-11-24T18:00:00.000Z'), Date.parse('2026-11-24T18:00:00.000Z')]);
  }
});

/** The date_time_parser fields of an ISO timestamp in UTC, as both ways must give them for svc.timestamp. */
function utcFields(ms: number): Record<string, number> {
  const date = new Date(ms);
  return {
    'when.year': date.getUTCFullYear(), 'when.month': date.getUTCMonth() + 1, 'when.day_of_month': date.getUTCDate(),
    'when.hour': date.getUTCHours(), 'when.minute': date.getUTCMinutes(), 'when.second': date.getUTCSeconds(),
    'when.millisecond': date.getUTCMilliseconds(), 'when.timezone_offset': 0,
  };
}

t.test('svc.timestamp before or after addons, with an offset, null or absent: add-ons read the same text', async (t) => {
  const list = JSON.stringify([whenOf('svc.timestamp'), whenOf('local_time', 'local')]);
  const pacific = Date.parse('2026-11-24T18:00:00.000Z');
  const india = Date.parse('2024-02-29T18:29:59.999Z');
  const cases: [string, string, number][] = [
    ['an offset, before addons', `{"timestamp":"2026-11-24T10:00:00-08:00","addons":${list}}`, pacific],
    ['an offset, after addons', `{"addons":${list},"timestamp":"2026-11-24T10:00:00-08:00"}`, pacific],
    ['a half-hour offset, after addons', `{"addons":${list}, "timestamp" : "2024-02-29T23:59:59.999+05:30"}`, india],
    ['the canonical form, before addons', `{"timestamp":"2026-11-24T18:00:00.000Z","addons":${list}}`, pacific],
    ['the canonical form, after addons', `{ "addons" : ${list} , "timestamp" : "2026-11-24T18:00:00.000Z" }`, pacific],
    ['no seconds, no zone', `{"addons":${list},"timestamp":"2026-11-24T18:00"}`, pacific],
    ['null, before addons', `{"timestamp":null,"addons":${list}}`, NOW],
    ['null, after addons', `{"addons":${list},"timestamp":null}`, NOW],
    ['absent', `{"addons":${list}}`, NOW],
  ];
  for (const [what, svc, ms] of cases) {
    const body = Buffer.from(`{"c":[{"local_time":"2026-11-24T10:00:00-08:00","svc":${svc}},` +
      `{"svc":${svc},"local_time":"2026-11-24T10:00:00+01:00"}]}`);
    const got = fast(body, shared);
    t.ok(got, `${what}: taken`);
    t.ok(agree(t, body, what, shared), `${what}: agrees`);
    t.same(got!.t, [ms, ms], `${what}: the event's time`);
    const fields = Object.fromEntries(Object.keys(utcFields(ms)).map((path) => [path, leafOf(got!, 0, path)]));
    t.same(fields, utcFields(ms), `${what}: date_time_parser read svc.timestamp as UTC text`);
    // A property with an offset is read as it is: the offset shows (unlike svc.timestamp's).
    t.same([leafOf(got!, 0, 'local.timezone_offset'), leafOf(got!, 1, 'local.timezone_offset')], [-480, 60],
      `${what}: a property keeps its offset`);
  }
});

t.test('an empty add-on list is kept as a leaf and adds nothing', async (t) => {
  const body = Buffer.from('{"c":[{"a":1,"svc":{"addons":[]}},{"svc":{"timestamp":"2026-11-24T10:00:00-08:00","addons":[]}},' +
    '{"svc":{"addons":[],"timestamp":null},"b":"x"}]}');
  const got = fast(body, shared);
  t.ok(got, 'taken');
  t.ok(agree(t, body, 'empty lists', shared));
  t.same(got!.paths, ['a', 'svc.addons.', 'svc.addons.', 'svc.addons.', 'b']);
  t.same(got!.values, [1, '[]', '[]', '[]', 'x']);
  t.same(got!.t, [NOW, Date.parse('2026-11-24T18:00:00.000Z'), NOW]);
  t.equal(fast(body), null, 'a reader without an enricher leaves it');
});

t.test('inputs at nested paths, and inputs that are numbers, booleans or null', async (t) => {
  const nested = {
    client: { ip: '8.8.8.8', meta: { ua: USER_AGENTS[1] } }, ctx: { page: { url: URLS[0], referrer: REFERRERS[1] } },
    svc: { addons: [geoOf('client.ip'), agentOf('client.meta.ua'), refOf('ctx.page.referrer', 'ctx.page.url')] },
  };
  const body = bodyOf(nested, nested);
  const got = fast(body, shared);
  t.ok(got, 'nested inputs are taken');
  t.ok(agree(t, body, 'nested inputs', shared));
  t.equal(leafOf(got!, 1, 'geo.country_code'), 'US');
  t.equal(leafOf(got!, 1, 'agent.os.family'), 'iOS');
  t.equal(leafOf(got!, 1, 'ref.source'), 'Bing');

  const list = [geoOf('ip'), agentOf('ua'), partsOf('page_url'), refOf('referrer', 'page_url'), whenOf('local_time')];
  const odd = [
    { ip: 12345, ua: true, page_url: null, referrer: -0, local_time: 1.5 },
    { ip: null, ua: false, page_url: 0, referrer: null, local_time: true },
    { ip: -1e-7, ua: null, page_url: true, referrer: 'https://t.co/x', local_time: null },
  ];
  for (const [i, values] of odd.entries()) {
    const oddBody = bodyOf({ ...values, svc: { addons: list } }, { ...values, svc: { addons: list } });
    const oddGot = fast(oddBody, shared);
    t.ok(oddGot, `odd values ${i}: taken`);
    t.ok(agree(t, oddBody, `odd values ${i}`, shared), `odd values ${i}: agrees`);
    t.ok(agree(t, oddBody, `odd values ${i}, enrichers apart`, apart), `odd values ${i}: agrees with enrichers apart`);
    t.equal(leafOf(oddGot!, 0, 'geo.country'), null, `odd values ${i}: no country for a value that is not an address`);
    t.equal(leafOf(oddGot!, 0, 'when.year'), null, `odd values ${i}: no year for a value that is not a time`);
  }
  // Inputs written with escapes, past the add-on cache's key length, and not ASCII.
  const longUrl = `https://shop.example.com/${'a'.repeat(2_000)}?q=1`;
  const escaped = Buffer.from(`{"c":[${[0, 1].map(() => '{"ip":"8.8.8.\\u0038","page_url":"https:\\/\\/shop.example.com\\/caf\\u00e9",' +
    `"long":"${longUrl}","unicode":"https://例え.jp/パス?q=値",` +
    `"svc":{"addons":${JSON.stringify([geoOf('ip'), partsOf('page_url'), partsOf('long', 'long_parts'), partsOf('unicode', 'u')])}}}`).join(',')}]}`);
  t.ok(agree(t, escaped, 'escaped, long and unicode inputs', apart), 'escaped, long and unicode inputs: taken');
  const read = fast(escaped, apart)!;
  t.same([leafOf(read, 1, 'geo.country_code'), leafOf(read, 1, 'page_parts.path'), leafOf(read, 1, 'long_parts.query_string.q'),
    leafOf(read, 1, 'u.domain')], ['US', '/caf%C3%A9', '1', 'xn--r8jz45g.jp'], 'the add-ons read the decoded values');
  // A placeholder in an input property is replaced before the add-on reads it.
  const placeholders = bodyOf({ ip: '${svc.ip}', ua: '${svc.user_agent}', svc: { addons: [geoOf('ip'), agentOf('ua')] } });
  t.ok(agree(t, placeholders, 'placeholders as inputs', shared), 'placeholders as inputs: taken');
  t.equal(leafOf(fast(placeholders, shared)!, 0, 'agent.os.family'), 'Linux', 'the add-on read the request\'s user agent');
});

/**
 * An event the fast path must leave to the general path, beside one with the problem taken out
 * that it takes (so the refusal is not a fluke), and whether the general path refuses it.
 */
interface Leave {
  readonly what: string;
  readonly bad: Buffer;
  readonly good: Buffer;
  readonly refused: boolean;
}

function leaveCases(): Leave[] {
  const base = { ip: '8.8.8.8', ua: USER_AGENTS[0], page: '/p', page_url: URLS[0], referrer: REFERRERS[0] };
  const withList = (list: unknown, extra: Record<string, unknown> = {}) => ({ ...base, ...extra, svc: { addons: list } });
  const pair = (what: string, bad: unknown, good: unknown, refused: boolean): Leave =>
    ({ what, bad: bodyOf(bad), good: bodyOf(good), refused });
  const text = (what: string, bad: string, good: string, refused: boolean): Leave =>
    ({ what, bad: Buffer.from(bad), good: Buffer.from(good), refused });
  const list = JSON.stringify([geoOf('ip'), agentOf('ua')]);
  const tooMany = Array.from({ length: ADDONS_PER_EVENT_MAX + 1 }, (_, i) => geoOf('ip', `geo${i}`));
  return [
    pair('an input path missing from the event',
      withList([geoOf('missing')]), withList([geoOf('missing')], { missing: '8.8.8.8' }), true),
    pair('an input path missing below an existing object',
      withList([geoOf('client.ip')], { client: { other: 1 } }),
      withList([geoOf('client.ip')], { client: { other: 1, ip: '8.8.8.8' } }), true),
    pair('an input path through a null', withList([geoOf('client.ip')], { client: null }),
      withList([geoOf('client.ip')], { client: { ip: null } }), true),
    pair('an input naming an object', withList([geoOf('client')], { client: { ip: '8.8.8.8' } }),
      withList([geoOf('client.ip')], { client: { ip: '8.8.8.8' } }), false),
    pair('an input naming an empty object', withList([geoOf('client')], { client: {} }),
      withList([geoOf('client')], { client: '8.8.8.8' }), false),
    pair('an input naming a list',
      withList([geoOf('ips')], { ips: ['8.8.8.8'] }), withList([geoOf('ips')], { ips: '8.8.8.8' }), false),
    pair('an input naming an empty list',
      withList([agentOf('uas')], { uas: [] }), withList([agentOf('uas')], { uas: 'x' }), false),
    pair('a nested output', withList([geoOf('ip', 'geo.x')]), withList([geoOf('ip', 'geo_x')]), false),
    pair('an output deeper still', withList([geoOf('ip', 'a.b.c')]), withList([geoOf('ip', 'a_b_c')]), false),
    pair('an output that is an existing property',
      withList([geoOf('ip', 'page')]), withList([geoOf('ip', 'page_geo')]), false),
    text('an output that is a property after svc',
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip', 'late')])}},"late":1}]}`,
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip', 'late_geo')])}},"late":1}]}`, false),
    pair('an output that is an existing object',
      withList([geoOf('ip', 'device')], { device: { os: 'linux' } }),
      withList([geoOf('ip', 'device_geo')], { device: { os: 'linux' } }), false),
    pair('an output that is an existing empty object', withList([geoOf('ip', 'device')], { device: {} }),
      withList([geoOf('ip', 'device_geo')], { device: {} }), false),
    pair('an output that is an input',
      withList([partsOf('page_url', 'page_url')]), withList([partsOf('page_url', 'page_url_parts')]), false),
    pair('two add-ons with the same output',
      withList([geoOf('ip'), agentOf('ua', 'geo')]), withList([geoOf('ip'), agentOf('ua')]), false),
    pair('an input that reads an earlier output',
      withList([partsOf('page_url'), refOf('referrer', 'page_parts.domain')]),
      withList([partsOf('page_url'), refOf('referrer', 'page_url')]), false),
    pair('an input that reads an earlier output itself', withList([geoOf('ip'), agentOf('geo')]),
      withList([geoOf('ip'), agentOf('ua')]), false),
    pair('an input below an earlier output that lacks it',
      withList([geoOf('ip', 'where'), agentOf('where.ua', 'who')]),
      withList([geoOf('ip', 'where_geo'), agentOf('where.ua', 'who')], { where: { ua: 'x' } }), true),
    pair('remove_ip_property',
      withList([addon('svc:ip_to_geo', { ip: 'ip', remove_ip_property: true }, 'geo')]),
      withList([geoOf('ip')]), false),
    pair('remove_ip_property: false',
      withList([addon('svc:ip_to_geo', { ip: 'ip', remove_ip_property: false }, 'geo')]),
      withList([geoOf('ip')]), false),
    pair('an unknown add-on name', withList([geoOf('ip'), addon('svc:nope', { ip: 'ip' }, 'nope')]),
      withList([geoOf('ip'), addon('svc:url_parser', { url: 'ip' }, 'nope')]), true),
    pair('an add-on name that is not a string',
      withList([{ name: 7, input: { ip: 'ip' }, output: 'geo' }]), withList([geoOf('ip')]), true),
    pair('an entry that is not an object',
      withList([geoOf('ip'), 'svc:ua_parser']), withList([geoOf('ip')]), true),
    pair('an input that is not an object',
      withList([{ name: 'svc:ip_to_geo', input: 'ip', output: 'geo' }]), withList([geoOf('ip')]), true),
    pair('a missing input key', withList([addon('svc:referrer_parser', { referrer_url: 'referrer' }, 'ref')]),
      withList([refOf('referrer', 'page_url')]), true),
    pair('an input path that is not a string',
      withList([geoOf(7 as unknown as string)]), withList([geoOf('ip')]), true),
    pair('an empty input path', withList([geoOf('')]), withList([geoOf('ip')]), true),
    pair('an input path with an empty segment',
      withList([geoOf('client..ip')], { client: { ip: '8.8.8.8' } }),
      withList([geoOf('client.ip')], { client: { ip: '8.8.8.8' } }), true),
    pair('a missing output',
      withList([{ name: 'svc:ip_to_geo', input: { ip: 'ip' } }]), withList([geoOf('ip')]), true),
    pair('an output in svc', withList([geoOf('ip', 'svc')]), withList([geoOf('ip', 'svc_geo')]), true),
    pair('an output under svc', withList([geoOf('ip', 'svc.geo')]), withList([geoOf('ip', 'svc_geo')]), true),
    pair('an output named like an array index',
      withList([geoOf('ip', '7')]), withList([geoOf('ip', 'g7')]), false),
    pair('an input in svc other than svc.timestamp',
      withList([whenOf('svc.created_at')]), withList([whenOf('svc.timestamp')]), false),
    pair('too many add-ons', withList(tooMany), withList(tooMany.slice(0, ADDONS_PER_EVENT_MAX)), true),
    pair('a ${svc.ip} placeholder as an input path',
      withList([geoOf('${svc.ip}')]), withList([geoOf('ip')]), true),
    pair('a placeholder in a field no add-on reads',
      withList([{ ...geoOf('ip'), note: '${svc.user_agent}' }]),
      withList([{ ...geoOf('ip'), note: 'svc.user_agent' }]), false),
    text('addons text with whitespace',
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip')], null, 1)}}}]}`,
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip')])}}}]}`, false),
    text('addons text with a space after a comma',
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip'), geoOf('ip', 'g')]).replace('},{', '}, {')}}}]}`,
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip'), geoOf('ip', 'g')])}}}]}`, false),
    text('addons text with an escape',
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip')]).replace('"geo"', '"\\u0067eo"')}}}]}`,
      `{"c":[{"ip":"8.8.8.8","svc":{"addons":${JSON.stringify([geoOf('ip')])}}}]}`, false),
    pair('svc with a uniqueness_token',
      { ...base, svc: { uniqueness_token: 't-1', addons: [geoOf('ip')] } }, withList([geoOf('ip')]), true),
    pair('svc with a location',
      { ...base, svc: { location: { coordinates: [1, 2] }, addons: [geoOf('ip')] } }, withList([geoOf('ip')]), false),
    text('addons given twice', `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"addons":${list},"addons":${list}}}]}`,
      `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"addons":${list}}}]}`, false),
    text('addons given twice, the second different',
      `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"addons":${list},"addons":[]}}]}`,
      `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"addons":[]}}]}`, false),
    text('timestamp given twice around addons',
      `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"timestamp":null,"addons":${list},"timestamp":"2026-11-24T10:00:00Z"}}]}`,
      `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"addons":${list},"timestamp":"2026-11-24T10:00:00Z"}}]}`, false),
    text('addons that is an object', '{"c":[{"svc":{"addons":{}}}]}', '{"c":[{"svc":{"addons":[]}}]}', true),
    text('addons that is null', '{"c":[{"svc":{"addons":null}}]}', '{"c":[{"svc":{"addons":[]}}]}', true),
    text('addons that is a string', '{"c":[{"svc":{"addons":"[]"}}]}', '{"c":[{"svc":{"addons":[]}}]}', true),
    text('addons that is not JSON', '{"c":[{"svc":{"addons":[}}]}', '{"c":[{"svc":{"addons":[]}}]}', true),
    text('a bad timestamp with add-ons',
      `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"addons":${list},"timestamp":"yesterday"}}]}`,
      `{"c":[{"ip":"8.8.8.8","ua":"x","svc":{"addons":${list},"timestamp":"2026-11-24T00:00"}}]}`, true),
    // One event of the body is enough: the body is left whole.
    text('a good event, then one with an unknown add-on',
      `{"c":[${JSON.stringify(withList([geoOf('ip')]))},${JSON.stringify(withList([addon('svc:nope', { ip: 'ip' }, 'n')]))}]}`,
      `{"c":[${JSON.stringify(withList([geoOf('ip')]))},${JSON.stringify(withList([geoOf('ip', 'n')]))}]}`, true),
    text('a good event, then one with a missing input',
      `{"c":[${JSON.stringify(withList([geoOf('ip')]))}],"d":[${JSON.stringify(withList([geoOf('gone')]))}]}`,
      `{"c":[${JSON.stringify(withList([geoOf('ip')]))}],"d":[${JSON.stringify(withList([geoOf('ip')]))}]}`, true),
  ];
}

t.test('the fast path leaves add-on lists it cannot run as the general path would to the general path', async (t) => {
  for (const pair of [shared, apart]) {
    for (const { what, bad, good, refused } of leaveCases()) {
      t.equal(fast(bad, pair), null, `${what}: left`);
      const outcome = general(bad, pair);
      t.equal(typeof outcome === 'string', refused, `${what}: the general path ${refused ? 'refuses' : 'takes'} it` +
        (typeof outcome === 'string' ? ` (${outcome.slice(0, 80)})` : ''));
      t.ok(agree(t, good, `${what}, fixed`, pair), `${what}: fixed, it is taken`);
      // A list planned as unusable stays so: the same text again is left again.
      t.equal(fast(bad, pair), null, `${what}: left again`);
    }
  }
});

t.test('on generated bodies with varied add-on lists the fast path takes every one and agrees', async (t) => {
  for (const [name, pair, seed] of [['shared', shared, 31], ['apart', apart, 37]] as const) {
    const random = mulberry32(seed);
    const lists = () => ADDON_LISTS[Math.floor(random() * ADDON_LISTS.length)]!;
    let taken = 0;
    const bodies = 150;
    for (let i = 0; i < bodies; i++) {
      const body = Buffer.from(enrichedBodyText(random, 1 + Math.floor(random() * 20), lists));
      if (agree(t, body, `${name}: body ${i}`, pair)) taken++;
      else t.fail(`${name}: body ${i} was left: ${body.toString().slice(0, 300)}`);
    }
    t.equal(taken, bodies, `${name}: every body was taken`);
  }
});

t.test('plain bodies read by a reader with an enricher agree too', async (t) => {
  const random = mulberry32(7);
  let taken = 0;
  for (let i = 0; i < 200; i++) if (agree(t, Buffer.from(bodyText(random, 1 + Math.floor(random() * 30))), `body ${i}`, shared)) taken++;
  t.ok(taken > 160, `the fast path took ${taken} of 200 bodies`);
});

t.test('an event the add-ons\' results take past the size limit is too large on both ways', async (t) => {
  const list = [geoOf('ip'), agentOf('ua'), partsOf('page_url'), refOf('referrer', 'page_url'), whenOf('svc.timestamp')];
  const padding = 'v'.repeat(8_950);
  const own = (fill: number) => {
    const event: Record<string, unknown> = { ip: '8.8.8.8', ua: USER_AGENTS[0], page_url: URLS[0], referrer: REFERRERS[0] };
    for (let i = 0; i < 100; i++) event[`p${i}`] = padding;
    event.fill = 'f'.repeat(fill);
    event.svc = { addons: list };
    return event;
  };
  // Its own leaves, the list's included, just within the limit: the results' leaves take it past.
  const leaves = newLeaves();
  flattenEvent(own(0), leaves);
  const fill = EVENT_BYTES_MAX + 2_048 - leavesBytes(leaves, 0, leaves.count) - 1;
  t.ok(fill > 0 && fill < 9_999, `a fill of ${fill} characters`);
  const body = bodyOf(own(fill), own(fill - 3_000), { ...own(fill), svc: { addons: [] } });
  const got = fast(body, shared);
  t.ok(got, 'taken');
  t.ok(agree(t, body, 'near the limit', shared));
  t.same(got!.tooLarge, [1, 0, 0], 'only the event its results take past the limit');
});

t.test('a small event whose results are large is measured, not assumed to fit', async (t) => {
  // No add-on gives a result this large; an enricher that does shows the reader does not skip
  // measuring an event because its own JSON is small (SMALL_EVENT_BYTES bounds only its own leaves).
  const huge = makeFragment({ text: 'x'.repeat(EVENT_BYTES_MAX + 4_096) });
  const large = (name: string) => name === 'svc:url_parser';
  const reader = new FastBatchReader({
    inputKeys: (name) => sharedEnricher.inputKeys(name),
    result: (name, values) => large(name) ? huge : sharedEnricher.result(name, values),
  });
  const event = (list: unknown[]) => ({ page_url: URLS[0], ip: '8.8.8.8', svc: { addons: list } });
  const body = bodyOf(event([partsOf('page_url')]), event([geoOf('ip')]), event([geoOf('ip'), partsOf('page_url', 'again')]));
  t.ok(body.length < 1_000, 'small events');
  const got = reader.read(body, ctx, NOW, newLeaves());
  t.ok(got, 'taken');
  t.same([...got!.tooLarge], [1, 0, 1], 'the events with the large result are too large');
});

t.test('no mutation of an enriched body makes the fast path take what the general path does not', async (t) => {
  const random = mulberry32(41);
  const withDollar = [...SIGNIFICANT, '$'.charCodeAt(0)]; // "${" opens a placeholder in an add-on list
  let taken = 0;
  let mutations = 0;
  for (let i = 0; i < 120; i++) {
    const list = ADDON_LISTS[Math.floor(random() * ADDON_LISTS.length)]!;
    const original = Buffer.from(enrichedBodyText(random, 2, () => list));
    // Half of the mutations fall inside an add-on list, where the plans are made.
    const listAt = original.indexOf('"addons":');
    for (let m = 0; m < 30; m++) {
      const at = random() < 0.5 && listAt !== -1
        ? listAt + Math.floor(random() * (JSON.stringify(list).length + 10))
        : Math.floor(random() * original.length);
      const mutated = mutate(original, at, random, withDollar);
      mutations++;
      const what = `body ${i}, mutation ${m}: ${JSON.stringify(mutated.toString('latin1').slice(Math.max(0, at - 30), at + 30))}`;
      if (agree(t, mutated, what, shared)) taken++;
    }
  }
  t.ok(taken > 300 && taken < mutations, `${taken} of ${mutations} mutated bodies were still taken and agreed`);
});

t.test('an add-on list longer than the reader keeps goes the general way, and a short one of the same shape does not', async (t) => {
  const event = (note: string) => ({
    page_url: 'https://shop.example.com/a?b=c',
    svc: { addons: [{ ...partsOf('page_url'), note }] }, // the pipeline ignores keys it does not know
  });
  const short = bodyOf(event('x'));
  t.ok(agree(t, short, 'a short list', shared), 'a short list is taken');
  const long = bodyOf(event('x'.repeat(17 * 1024)));
  t.equal(fast(long, shared), null, 'a list of 17 KB is not');
  t.type(general(long, shared), 'object', 'the general path stores it');
});
