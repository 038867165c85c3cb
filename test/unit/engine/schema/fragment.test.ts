/**
 * The write path's two ways of storing add-on results must agree: results listed in an Appended
 * (appended leaves, as the event's last properties) and results written into the event (its own
 * flattenEvent). Random add-on lists cover nested, repeated and existing output
 * names, index-like names, inputs that read earlier outputs, remove_ip_property, and errors.
 */
import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { flattenEvent, newLeaves } from '../../../../engine/schema/flatten.js';
import { leavesBytes } from '../../../../engine/ingest/event-preparer.js';
import { appendLeaves, cloneJson, makeFragment, newAppended } from '../../../../engine/schema/fragment.js';
import { createEnricher } from '../../../../engine/enrich/pipeline.js';

const enricher = await createEnricher({});
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0, 0);

const ADDONS: Record<string, string[]> = {
  'svc:ip_to_geo': ['ip'],
  'svc:ua_parser': ['ua_string'],
  'svc:url_parser': ['url'],
  'svc:referrer_parser': ['referrer_url', 'page_url'],
  'svc:date_time_parser': ['date_time'],
};
const INPUTS = ['ip', 'ua', 'page', 'ref', 'svc.timestamp', 'nested.ip', 'geo.city', 'out', 'missing', '7'];
const OUTPUTS = ['geo', 'agent', 'out', 'nested.deep', 'geo.more', 'ip', '7', 'page', 'x.y.z', 'ua'];
/** Names events never have: most add-on lists in practice. */
const NEW_OUTPUTS = ['geo', 'agent', 'when', 'parts', 'source'];
/** An input of the right kind, by input key. */
const GOOD_INPUTS: Record<string, string> = {
  ip: 'ip', ua_string: 'ua', url: 'page', referrer_url: 'ref', page_url: 'page', date_time: 'svc.timestamp',
};
const IPS = ['8.8.8.8', '81.2.69.160', '10.0.0.1', 'not an ip', '2001:4860:4860::8888'];
const UAS = ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  'curl/8.5.0', ''];
const URLS = ['https://shop.example.com/p/1?utm_source=news&x=ü#top', 'https://www.google.com/search?q=tally', 'nope'];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function randomEvent(random: () => number): Record<string, unknown> {
  const event: Record<string, unknown> = {
    ip: pick(random, IPS), ua: pick(random, UAS), page: pick(random, URLS), ref: pick(random, URLS),
    nested: { ip: pick(random, IPS) },
  };
  if (random() < 0.2) event.geo = random() < 0.5 ? { city: 'Kept' } : 'a string';
  if (random() < 0.1) event['7'] = 'index-like';
  if (random() < 0.1) event.out = { existing: true };
  const addons = [];
  const count = Math.floor(random() * 6);
  for (let i = 0; i < count; i++) {
    const name = pick(random, Object.keys(ADDONS));
    const input: Record<string, unknown> = {};
    for (const key of ADDONS[name]!) input[key] = random() < 0.8 ? GOOD_INPUTS[key] : pick(random, INPUTS);
    if (name === 'svc:ip_to_geo' && random() < 0.2) input.remove_ip_property = true;
    addons.push({ name, input, output: pick(random, random() < 0.7 ? NEW_OUTPUTS : OUTPUTS) });
  }
  event.svc = { id: 'a'.repeat(24), created_at: '2026-11-22T12:00:00.000Z', timestamp: '2024-03-05T14:30:15.123Z', addons };
  return event;
}

function run(fn: () => void): string | null {
  try {
    fn();
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

t.test('appended results give the same event and leaves as results written into the event', async (t) => {
  const random = mulberry32(20261122);
  const appended = newAppended();
  let compared = 0;
  let spliced = 0;
  for (let round = 0; round < 3000; round++) {
    const original = randomEvent(random);
    const inPlace = cloneJson(original);
    const listed = cloneJson(original);
    const inPlaceError = run(() => enricher.apply(inPlace, NOW));
    const listedError = run(() => enricher.apply(listed, NOW, appended));
    t.equal(listedError, inPlaceError, `round ${round}: same error`);
    if (inPlaceError !== null || listedError !== null) continue;
    const expectedLeaves = newLeaves();
    flattenEvent(inPlace, expectedLeaves);
    const leaves = newLeaves();
    flattenEvent(listed, leaves);
    appendLeaves(appended, leaves, { join: (parent, key) => `${parent}.${key}` });
    const whole: Record<string, unknown> = cloneJson(listed);
    for (let i = 0; i < appended.count; i++) whole[appended.names[i]] = appended.fragments[i].value;
    const json = JSON.stringify(whole);
    const ok = json === JSON.stringify(inPlace) &&
      JSON.stringify(leaves.paths.slice(0, leaves.count)) === JSON.stringify(expectedLeaves.paths.slice(0, expectedLeaves.count)) &&
      JSON.stringify(leaves.values.slice(0, leaves.count)) === JSON.stringify(expectedLeaves.values.slice(0, expectedLeaves.count));
    if (!ok) {
      t.fail(`round ${round} differs`, { event: original, got: json, want: JSON.stringify(inPlace) });
      break;
    }
    compared++;
    if (appended.count > 0) spliced++;
  }
  t.ok(compared > 1000, `${compared} events compared`);
  t.ok(spliced > 300, `${spliced} of them had appended results`);
});

t.test('a cached result is shared, frozen, and copied when written into an event', async (t) => {
  const appended = newAppended();
  const event = () => ({ ip: '8.8.8.8', svc: { addons: [{ name: 'svc:ip_to_geo', input: { ip: 'ip' }, output: 'geo' }] } });
  enricher.apply(event(), NOW, appended);
  const first = appended.fragments[0];
  enricher.apply(event(), NOW, appended);
  t.equal(appended.fragments[0], first, 'the second event reuses the first one\'s result');
  t.ok(Object.isFrozen(first!.value), 'the shared value is frozen');
  const written: Record<string, unknown> = event();
  enricher.apply(written, NOW);
  t.not(written.geo, first!.value, 'an event gets its own copy');
  t.same(written.geo, first!.value);
  (written.geo as Record<string, unknown>).city = 'changed';
  t.not(first!.value.city, 'changed');
});

t.test('an add-on result given as one leaf measures as its leaves under that leaf\'s name (leavesBytes)', async (t) => {
  const fragment = makeFragment({ city: 'Zürich', coordinates: [8.54, 47.37], postal_code: null, nested: { a: true, b: 'x' } });
  for (const names of [['geo'], ['g', 'a much longer output name'], ['géo', 'geo', 'géo']]) {
    const given = newLeaves();
    given.paths[0] = 'own';
    given.values[0] = 'value';
    given.count = 1;
    const appended = newAppended();
    for (const name of names) {
      given.paths[given.count] = name;
      given.values[given.count++] = fragment;
      appended.names[appended.count] = name;
      appended.fragments[appended.count++] = fragment;
    }
    const expanded = newLeaves();
    expanded.paths[0] = 'own';
    expanded.values[0] = 'value';
    expanded.count = 1;
    appendLeaves(appended, expanded, { join: (parent, key) => `${parent}.${key}` });
    t.equal(leavesBytes(given, 0, given.count), leavesBytes(expanded, 0, expanded.count), names.join(', '));
  }
});
