/**
 * The fast batch reader against the general path (parseBatchBody → EventPreparer → flatten): on
 * every body it takes, the same collections, timestamps, sizes and leaves; every body the general
 * path refuses or reads in its own way, it leaves alone; and no mutation of a body makes it take
 * text that is not JSON.
 */
import t, { type Test } from 'tap';
import { mulberry32 } from '../../test/helpers/random.js';
import { EventPreparer } from '../event-preparer.js';
import { isApiError } from '../errors.js';
import { newLeaves, type Leaves } from '../schema/flatten.js';
import { LeafEncoder } from '../schema/leaf-codec.js';
import { packBatch, parseBatchBody } from './batch.js';
import { FastBatchReader, type FastBatch } from './fast-batch.js';

const ctx = { ip: '203.0.113.9', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Tally-test' };
const NOW = Date.parse('2026-11-25T10:00:00.000Z');
const NOW_ISO = new Date(NOW).toISOString();
/** The fast path never takes add-ons, so the general path needs none to be compared with it. */
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

/** What the general path makes of `body`, or the error it refuses the body or an event with. */
function general(body: Uint8Array): Outcome | string {
  let batch;
  try {
    batch = parseBatchBody(body);
  } catch (error) {
    if (isApiError(error)) return `${error.error_code}: ${error.message}`;
    throw error;
  }
  const leaves = newLeaves();
  const packed = packBatch(preparer, encoder, batch, ctx, NOW, NOW_ISO, leaves);
  const refused = packed.errorOf.findIndex((index) => index !== -1);
  if (refused !== -1) return `event ${refused}: ${packed.errors[packed.errorOf[refused]].message}`;
  if (packed.tokens.some((token) => token !== null)) return 'a token';
  return outcome(packed.collections, packed.t, packed.ranges, packed.tooLarge, leaves);
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
const fastLeaves = newLeaves();

function fast(body: Uint8Array): Outcome | null {
  const read: FastBatch | null = reader.read(body, ctx, NOW, fastLeaves);
  return read === null ? null : outcome(read.collections, read.t, read.ranges, read.tooLarge, fastLeaves);
}

/** Checks the fast path on `body`: same outcome, or none. Returns whether it took the body. */
function agree(t: Test, body: Uint8Array, what: string): boolean {
  const got = fast(body);
  if (got === null) return false;
  const expected = general(body);
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

t.test('no mutation of a body makes the fast path take what the general path does not', async (t) => {
  const random = mulberry32(11);
  const SIGNIFICANT = [...'{}[]:,"\\ -+.0123456789eEtfnulx'].map((c) => c.charCodeAt(0)).concat([0x00, 0x09, 0x80, 0xc3, 0xff]);
  let taken = 0;
  let mutations = 0;
  for (let i = 0; i < 300; i++) {
    const original = Buffer.from(bodyText(random, 3));
    for (let m = 0; m < 20; m++) {
      const at = Math.floor(random() * original.length);
      const byte = SIGNIFICANT[Math.floor(random() * SIGNIFICANT.length)]!;
      const roll = random();
      const mutated = roll < 0.4 ? Buffer.concat([original.subarray(0, at), Buffer.from([byte]), original.subarray(at + 1)])
        : roll < 0.65 ? Buffer.concat([original.subarray(0, at), original.subarray(at + 1)])
          : roll < 0.9 ? Buffer.concat([original.subarray(0, at), Buffer.from([byte]), original.subarray(at)])
            : original.subarray(0, at);
      mutations++;
      if (agree(t, mutated, `body ${i}, mutation ${m}: ${JSON.stringify(mutated.toString('latin1').slice(Math.max(0, at - 20), at + 20))}`)) taken++;
    }
  }
  t.ok(taken > 100 && taken < mutations, `${taken} of ${mutations} mutated bodies were still plain batches and agreed`);
});
