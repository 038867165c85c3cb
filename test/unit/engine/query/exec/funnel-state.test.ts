/**
 * Funnel step states (partial-codec.ts, format version 2): actor sets survive encode → decode
 * (every kind of actor, in their order), a funnel whose steps are scanned in several shares
 * (runPartial with steps, as cluster nodes do) and combined (finishPartials) answers exactly what
 * the funnel run whole answers, and a cut or garbled state is refused with a PartialStateError.
 */
import t from 'tap';
import { ApiError } from '../../../../../engine/base/errors.js';
import type { Actor } from '../../../../../engine/query/exec/funnel.js';
import {
  decodeFunnelSteps, decodePartial, encodeFunnelSteps, FUNNEL_VERSION, PartialStateError,
} from '../../../../../engine/query/exec/partial-codec.js';
import { QueryService } from '../../../../../engine/query/exec/service.js';
import { memorySource, randomEvents } from '../../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-04T00:00:00.000Z' };
/** Three collections of different events. */
const COLLECTIONS: Record<string, ReturnType<typeof randomEvents>> = {
  a: randomEvents(31, 900, START, 3 * DAY),
  b: randomEvents(32, 700, START, 3 * DAY),
  c: randomEvents(33, 500, START, 4 * DAY),
};
const serviceWith = (limits = {}) => new QueryService({
  source: (_project, collection) => memorySource(COLLECTIONS[collection] ?? []), clock: () => START + 3 * DAY, workers: 0, limits,
});
const service = serviceWith();
t.teardown(() => service.close());

/** The error_code a promise is rejected with, or 'resolved'. */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof ApiError ? error.error_code : String(error);
  }
}

const SETS: Actor[][] = [
  ['u1', 'ü-ñ', '😀 emoji', '', 'lone \ud800 surrogate', '\udc00', '\u0000list:["a","b"]'],
  [0, -1.5, 1e300, 42, Number.MIN_VALUE, -1e-300],
  [true, false, null, 'x', 7],
  [],
];

const encode = (bytesMax = 1e9) => encodeFunnelSteps([3, 0, 1, 2], (index) => new Set(SETS[index]), () => 12345, bytesMax);

t.test('actor sets survive encode and decode, in their order', async (t) => {
  const bytes = encode();
  t.equal(bytes.byteOffset, 0);
  t.equal(bytes.byteLength, bytes.buffer.byteLength, 'alone in its ArrayBuffer (transferable)');
  t.equal(new DataView(bytes.buffer).getUint16(4, true), FUNNEL_VERSION, 'written as version 2');
  const decoded = decodeFunnelSteps(bytes, 4);
  t.equal(decoded.eventsScanned, 12345);
  t.same([...decoded.steps.keys()], [3, 0, 1, 2]);
  for (const [index, read] of decoded.steps) t.strictSame([...read()], SETS[index], `step ${index}`);
  t.ok(Object.is([...decoded.steps.get(1)!()][0], 0));
  // Not aligned in memory (a Buffer slice): the same.
  const shifted = new Uint8Array(bytes.length + 3);
  shifted.set(bytes, 3);
  t.strictSame([...decodeFunnelSteps(shifted.subarray(3)).steps.get(0)!()], SETS[0], 'decoded at an odd offset');
});

t.test('the layout, byte for byte (a change here is a new format version)', async (t) => {
  const bytes = encodeFunnelSteps([1], () => new Set<Actor>(['a', 2, true]), () => 5, 1e9);
  t.equal(Buffer.from(bytes).toString('hex'), [
    '54505331', '0200', '0100', '0000000000004c40', // "TPS1", version 2, kind 1 (funnel steps), 56 bytes
    '01000000', // one step
    '01000000', '14000000', '03000000', // step 1, 20 bytes, 3 actors
    '00', '01000000', '61', '01', '0000000000000040', '03', // "a", 2, true
    '0000000000001440', // 5 events scanned
  ].join(''));
});

t.test('past its byte bound the encoder refuses with a 400, not a state', async (t) => {
  try {
    encode(40);
    t.fail('encoded');
  } catch (error) {
    t.ok(error instanceof ApiError && error.error_code === 'ResponseTooLargeError' && error.status === 400
      && /more than 40 bytes/.test(error.message), (error as Error).message);
  }
  const small = serviceWith({ funnelStateBytesMax: 64 });
  t.teardown(() => small.close());
  const steps = [{ event_collection: 'a', actor_property: 'user' }, { event_collection: 'b', actor_property: 'user' }];
  t.equal(await codeOf(small.runPartial('p', 'funnel', { timeframe, steps }, START + 3 * DAY, [1])), 'ResponseTooLargeError');
});

t.test('a cut or garbled state is refused by name', async (t) => {
  const good = encode();
  const refused = (bytes: Uint8Array, pattern: RegExp, what: string, stepCount?: number) => {
    try {
      for (const read of decodeFunnelSteps(bytes, stepCount).steps.values()) read();
      t.fail(`${what}: decoded`);
    } catch (error) {
      t.ok(error instanceof PartialStateError && pattern.test(error.message), `${what}: ${(error as Error).message}`);
    }
  };
  for (let length = 0; length < good.length; length++) refused(good.slice(0, length), /truncated/, `cut to ${length} bytes`);
  for (let length = 16; length < good.length; length++) {
    const cut = good.slice(0, length);
    new DataView(cut.buffer).setFloat64(8, length, true);
    refused(cut, /truncated|left over|not UTF-8|unknown actor kind|twice/, `cut to ${length} bytes, header adjusted`);
  }
  refused(good, /step index 3, the funnel has 3 steps/, 'a step the plan does not have', 3);
  const aggregate = good.slice();
  new DataView(aggregate.buffer).setUint16(4, 1, true);
  new DataView(aggregate.buffer).setUint16(6, 0, true);
  refused(aggregate, /this is an aggregate state, not a funnel's step actor sets/, 'an aggregate header');
  t.throws(() => decodePartial(good), /this is a funnel's step actor sets, not an aggregate state/);
  // Step 3 (empty) comes first: header 16, step count 4, index 4, length 4, actor count 4; step 0's
  // header at 32, its first actor's kind at 44, its UTF-8 length at 45 and bytes at 49.
  const view = (bytes: Uint8Array) => new DataView(bytes.buffer);
  t.equal(view(good).getUint32(32, true), 0, 'step 0 is second');
  const kind = good.slice();
  kind[44] = 9;
  refused(kind, /unknown actor kind 9 in step 0 at offset 4/, 'an unknown actor kind');
  const utf8 = good.slice();
  utf8[49] = 0xff;
  refused(utf8, /step 0's actor at offset 4 is not UTF-8/, 'bytes that are not UTF-8');
  const count = good.slice();
  view(count).setUint32(40, 1e9, true);
  refused(count, /truncated: step 0's 1000000000 actors/, 'an actor count past the bytes');
  const twice = good.slice();
  view(twice).setUint32(32, 3, true);
  refused(twice, /step 3 twice/, 'a step twice');
  const steps = good.slice();
  view(steps).setUint32(16, 1000, true);
  refused(steps, /truncated/, 'a step count past the bytes');
});

/** The body without its timing (which differs run to run). */
function comparable(body: unknown): unknown {
  const copy = structuredClone(body) as Record<string, Record<string, unknown> | undefined>;
  if (copy.execution_metadata !== undefined) delete copy.execution_metadata.total_processing_time;
  return copy;
}

const pro = [{ property_name: 'country', operator: 'in', property_value: ['US', 'DE'] }];
const SHAPES: [string, Record<string, unknown>, number[][]][] = [
  ['two steps', { timeframe, steps: [{ event_collection: 'a', actor_property: 'user' }, { event_collection: 'b', actor_property: 'user' }] }, [[0], [1]]],
  ['three steps, optional, inverted, with_actors, a filter and its own timeframe', {
    timeframe, timezone: 'America/New_York', include_metadata: true, steps: [
      { event_collection: 'a', actor_property: 'user', filters: pro },
      { event_collection: 'b', actor_property: 'user', optional: true, with_actors: true },
      { event_collection: 'c', actor_property: 'user', timeframe: 'this_2_days', timezone: 'Asia/Tokyo', with_actors: true },
      { event_collection: 'b', actor_property: 'user', inverted: true, with_actors: true,
        filters: [{ property_name: 'flag', operator: 'eq', property_value: true }] },
      { event_collection: 'a', actor_property: 'user', with_actors: true },
    ],
  }, [[0, 4], [1, 3], [2]]],
  ['list, number and boolean actors', { timeframe, steps: [
    { event_collection: 'a', actor_property: 'tags', with_actors: true },
    { event_collection: 'c', actor_property: 'tags', with_actors: true },
    { event_collection: 'b', actor_property: 'country', with_actors: true },
    { event_collection: 'a', actor_property: 'flag', with_actors: true },
  ] }, [[2], [0, 3], [1]]],
];

t.test('a funnel scanned in shares answers what the funnel run whole answers', async (t) => {
  const nowMs = START + 3 * DAY;
  for (const [name, params, shares] of SHAPES) {
    const whole = await service.run('p', 'funnel', params);
    t.ok((whole as { result: number[] }).result[0] > 0, `${name}: the first step counts actors`);
    const states = await Promise.all(shares.map((steps) => service.runPartial('p', 'funnel', params, nowMs, steps)));
    t.strictSame(comparable(service.finishPartials('p', 'funnel', params, nowMs, states)), comparable(whole), name);
    const reversed = [...states].reverse();
    t.strictSame(comparable(service.finishPartials('p', 'funnel', params, nowMs, reversed)), comparable(whole), `${name}, states in another order`);
    const all = await service.runPartial('p', 'funnel', params, nowMs);
    t.strictSame(comparable(service.finishPartials('p', 'funnel', params, nowMs, [all])), comparable(whole), `${name}, one state of every step`);
    t.throws(() => service.finishPartials('p', 'funnel', params, nowMs, states.slice(1)), /no state has step/, `${name}: a missing step`);
    t.throws(() => service.finishPartials('p', 'funnel', params, nowMs, [...states, states[0]]), /is in two states/, `${name}: a step twice`);
  }
  const [, params] = SHAPES[0];
  for (const bad of [[], [2], [0, 0], [-1], [0.5]]) {
    t.equal(await codeOf(service.runPartial('p', 'funnel', params, nowMs, bad)), 'InvalidQueryError', `steps ${JSON.stringify(bad)}`);
  }
});
