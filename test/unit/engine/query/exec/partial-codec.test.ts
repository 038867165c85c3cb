/**
 * The partial-state codec (partial-codec.ts): every analysis's states survive encode → decode
 * (with and without group_by and interval, exact and past the exact budgets), merging decoded
 * states answers like merging the originals, the golden states of every format version still
 * decode to their recorded answers, and bad input is refused with a PartialStateError.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import t from 'tap';
import { finishAggregate } from '../../../../../engine/query/exec/execute.js';
import { mergeOutcomes } from '../../../../../engine/query/exec/partial.js';
import { decodeOutcome, decodePartial, encodeOutcome, FUNNEL_VERSION, MAGIC, PartialStateError, VERSION } from '../../../../../engine/query/exec/partial-codec.js';
import type { AggregatePlan, ExecLimits } from '../../../../../engine/query/plan/plan.js';
import { parseRequest } from '../../../../../engine/query/plan/request.js';
import type { AggregateOutcome } from '../../../../../engine/query/exec/result.js';
import {
  GOLDEN_CASES, goldenPlan, goldenState, partialOutcome, randomEvents, type GoldenCase, type TestEvent,
} from '../../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const NOW = START + 10 * DAY;
const events = randomEvents(23, 3000, START, 3 * DAY);
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-04T00:00:00.000Z' };

const KINDS: [string, Record<string, unknown>][] = [
  ['count', {}],
  ['count_unique', { target_property: 'user' }],
  ['count_unique', { target_property: 'tags' }],
  ['minimum', { target_property: 'price' }],
  ['maximum', { target_property: 'nested.level' }],
  ['sum', { target_property: 'price' }],
  ['average', { target_property: 'price' }],
  ['median', { target_property: 'price' }],
  ['percentile', { target_property: 'price', percentile: 90 }],
  ['standard_deviation', { target_property: 'price' }],
  ['select_unique', { target_property: 'user' }],
  ['select_unique', { target_property: 'tags' }],
  ['multi_analysis', { analyses: {
    n: { analysis_type: 'count' },
    u: { analysis_type: 'count_unique', target_property: 'country' },
    q: { analysis_type: 'percentile', target_property: 'price', percentile: 25 },
    d: { analysis_type: 'standard_deviation', target_property: 'nested.level' },
  } }],
];

const MODES: Record<string, Record<string, unknown>> = {
  plain: {},
  group_by: { group_by: 'country' },
  interval: { interval: 'every_6_hours' },
  group_by_interval: { group_by: ['country', 'flag'], interval: 'daily' },
};

/** Exact states, and states past tiny budgets (count_unique and percentile sketches). */
const BUDGETS: Record<string, Partial<ExecLimits>> = {
  exact: {},
  approximate: { countUniqueExactMax: 25, percentileExactMax: 150 },
};

function planOf(analysis: string, params: Record<string, unknown>): AggregatePlan {
  return parseRequest(analysis, { event_collection: 'e', timeframe, ...params }, { nowMs: NOW }) as AggregatePlan;
}

/** The response body of states, or the error it gives (a non-numeric target, say). */
function finish(plan: AggregatePlan, outcome: AggregateOutcome): unknown {
  try {
    return finishAggregate(plan, outcome, 0, 0);
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

/** The merged states' body, or the merge's error. */
function mergeAndFinish(plan: AggregatePlan, outcomes: AggregateOutcome[]): unknown {
  let merged: AggregateOutcome;
  try {
    merged = mergeOutcomes(plan, outcomes);
  } catch (error) {
    return `merge failed: ${(error as Error).message}`;
  }
  return finish(plan, merged);
}

function roundTrip(outcome: AggregateOutcome, plan: AggregatePlan): AggregateOutcome {
  const bytes = encodeOutcome(outcome, 1234);
  const decoded = decodePartial(bytes, plan);
  if (decoded.eventsScanned !== 1234) throw new Error('eventsScanned lost');
  return decoded.outcome;
}

t.test('every analysis finalizes the same after encode and decode', async (t) => {
  for (const [budget, limits] of Object.entries(BUDGETS)) {
    for (const [analysis, extra] of KINDS) {
      for (const [mode, params] of Object.entries(MODES)) {
        const plan = planOf(analysis, { ...extra, ...params });
        const want = finish(plan, await partialOutcome(plan, events, limits));
        const got = finish(plan, roundTrip(await partialOutcome(plan, events, limits), plan));
        t.same(got, want, `${analysis} ${JSON.stringify(extra.target_property ?? '')} ${mode} ${budget}`);
      }
    }
  }
});

t.test('merging decoded states answers like merging the states', async (t) => {
  // Two shares with different groups and budgets crossed on one side only: by time (the first
  // day alone has fewer values), and at random.
  const splits: Record<string, (event: TestEvent, at: number) => boolean> = {
    by_time: (event) => event.ts < START + DAY,
    random: (_event, at) => (at * 2654435761) % 7 < 3,
  };
  for (const [budget, limits] of Object.entries(BUDGETS)) {
    for (const [analysis, extra] of KINDS) {
      for (const [mode, params] of Object.entries(MODES)) {
        for (const [split, left] of Object.entries(splits)) {
          const plan = planOf(analysis, { ...extra, ...params });
          const a = events.filter((event, at) => left(event, at));
          const b = events.filter((event, at) => !left(event, at));
          const name = `${analysis} ${JSON.stringify(extra.target_property ?? '')} ${mode} ${budget} ${split}`;
          const want = mergeAndFinish(plan, [await partialOutcome(plan, a, limits), await partialOutcome(plan, b, limits)]);
          const got = mergeAndFinish(plan, [
            roundTrip(await partialOutcome(plan, a, limits), plan),
            roundTrip(await partialOutcome(plan, b, limits), plan)]);
          t.same(got, want, name);
          // States whose sketches were sized for different cell counts merge at the smaller size.
          if (typeof want === 'string' && want.startsWith('merge failed')) {
            t.fail(`${name}: ${want}`);
            continue;
          }
          // A merged state encodes and decodes too (a coordinator passing it on).
          const merged = mergeOutcomes(plan, [
            await partialOutcome(plan, a, limits), await partialOutcome(plan, b, limits)]);
          t.same(finish(plan, roundTrip(merged, plan)), want, `${name}: merged state`);
        }
      }
    }
  }
});

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../../../test/fixtures/partial-state');

t.test('golden states of every format version decode to their recorded answers', async (t) => {
  const versions = fs.readdirSync(fixtures).filter((name) => /^v\d+$/.test(name));
  t.ok(versions.includes(`v${VERSION}`), `golden states of the current version v${VERSION} exist`);
  for (const version of versions) {
    for (const file of fs.readdirSync(path.join(fixtures, version)).filter((name) => name.endsWith('.bin'))) {
      const recorded = JSON.parse(fs.readFileSync(path.join(fixtures, version, file.replace(/\.bin$/, '.json')), 'utf8')) as
        GoldenCase & { body: unknown };
      const plan = await goldenPlan(recorded);
      // readFileSync's Buffer may sit at any offset of its ArrayBuffer: decoding copies the arrays then.
      const bytes = fs.readFileSync(path.join(fixtures, version, file));
      t.same(finish(plan, decodeOutcome(bytes, plan)), recorded.body, `${version}/${file}`);
      t.same(finish(plan, decodeOutcome(new Uint8Array(bytes), plan)), recorded.body, `${version}/${file}, aligned`);
      if (['count_unique', 'select_unique', 'minimum', 'maximum'].includes(recorded.analysis)) {
        // A union with itself changes nothing: decoded hash sets still find their own keys
        // (their slot layout is part of the format).
        const twice = mergeOutcomes(plan, [decodeOutcome(new Uint8Array(bytes), plan), decodeOutcome(new Uint8Array(bytes), plan)]);
        t.same(finish(plan, twice), recorded.body, `${version}/${file}, merged with itself`);
      }
    }
  }
  for (const golden of GOLDEN_CASES) {
    t.ok(fs.existsSync(path.join(fixtures, `v${VERSION}`, `${golden.name}.bin`)), `v${VERSION}/${golden.name}.bin exists`);
  }
});

t.test('the encoder still writes the current golden states byte for byte', async (t) => {
  // A difference here means the format changed: bump VERSION, add a decoder for the old one if
  // old states must still be read, and generate the new version's directory (generate.ts).
  for (const golden of GOLDEN_CASES) {
    const { bytes, body } = await goldenState(golden);
    const stored = fs.readFileSync(path.join(fixtures, `v${VERSION}`, `${golden.name}.bin`));
    t.ok(Buffer.from(bytes).equals(stored), `${golden.name}.bin unchanged`);
    const recorded = JSON.parse(fs.readFileSync(path.join(fixtures, `v${VERSION}`, `${golden.name}.json`), 'utf8')) as { body: unknown };
    t.same(body, recorded.body, `${golden.name}: the same answer`);
  }
});

t.test('the state is one transferable ArrayBuffer', async (t) => {
  const plan = planOf('median', { target_property: 'price', group_by: 'country' });
  const bytes = encodeOutcome(await partialOutcome(plan, events), 7);
  t.equal(bytes.byteOffset, 0);
  t.equal(bytes.buffer.byteLength, bytes.length, 'the buffer holds the state alone');
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<Uint8Array>((resolve) => port2.once('message', resolve));
  port1.postMessage(bytes, [bytes.buffer]);
  t.equal(bytes.buffer.byteLength, 0, 'the sender\'s buffer is detached: moved, not copied');
  const arrived = await received;
  port1.close();
  const want = finish(plan, await partialOutcome(plan, events));
  t.same(finish(plan, decodeOutcome(arrived, plan)), want, 'decodes on the other side');
});

t.test('refuses what it cannot decode, naming what is wrong', async (t) => {
  const plan = planOf('count', {});
  const good = encodeOutcome(await partialOutcome(plan, events), 3);
  const copy = () => new Uint8Array(good);
  const refused = (bytes: Uint8Array, pattern: RegExp, what: string, withPlan: AggregatePlan | undefined = plan) => {
    try {
      decodeOutcome(bytes, withPlan);
      t.fail(`${what}: decoded`);
    } catch (error) {
      t.ok(error instanceof PartialStateError && pattern.test(error.message), `${what}: ${(error as Error).message}`);
    }
  };
  t.same(finish(plan, decodeOutcome(good, plan)), finish(plan, await partialOutcome(plan, events)), 'the good state decodes');

  const magic = copy();
  magic.set([0x7b, 0x22, 0x61, 0x22]);
  refused(magic, /not a partial state: magic is 7b 22 61 22, not "TPS1"/, 'another magic');
  t.equal(MAGIC, 'TPS1');

  const version = copy();
  new DataView(version.buffer).setUint16(4, FUNNEL_VERSION + 1, true);
  refused(version, new RegExp(`format version ${FUNNEL_VERSION + 1} is not supported`), 'a newer version');
  new DataView(version.buffer).setUint16(4, 0, true);
  refused(version, /format version 0 is not supported/, 'version 0');
  // Version 2 holds funnel step states: its kind field must say so, and an aggregate reader refuses them by name.
  new DataView(version.buffer).setUint16(4, FUNNEL_VERSION, true);
  refused(version, /unknown state kind 0 \(format version 2\)/, 'version 2 of kind 0');
  new DataView(version.buffer).setUint16(6, 1, true);
  refused(version, /this is a funnel's step actor sets, not an aggregate state/, 'a funnel state read as an aggregate\'s');
  const reserved = copy();
  new DataView(reserved.buffer).setUint16(6, 1, true);
  refused(reserved, /the reserved header field is not 0/, 'version 1 with a kind');

  // count without groups: header 16, eventsScanned 8, buckets 4, aggregates 4, rowsPerCell 4, groups 1.
  const tag = copy();
  t.equal(tag[37], 1, 'the first aggregate\'s tag is count\'s');
  tag[37] = 200;
  refused(tag, /unknown aggregate tag 200 \(aggregate 0, offset 37\)/, 'an unknown tag');
  tag[37] = 0;
  refused(tag, /unknown aggregate tag 0/, 'tag 0');
  tag[37] = 5;
  refused(tag, /aggregate 0 \(sum\)/, 'a known tag over another kind\'s bytes');

  for (let length = 0; length < good.length; length++) {
    refused(good.slice(0, length), /truncated/, `cut to ${length} bytes`);
  }
  // Cut, with the header's length made to match: the cut is found where the bytes run out.
  for (let length = 16; length < good.length; length++) {
    const cut = good.slice(0, length);
    new DataView(cut.buffer).setFloat64(8, length, true);
    refused(cut, /truncated|is \d+ bytes, its decoder read/, `cut to ${length} bytes, header adjusted`);
  }
  const long = new Uint8Array(good.length + 8);
  long.set(good);
  refused(long, /the header says \d+ bytes, but \d+ arrived/, 'bytes after the state');
  new DataView(long.buffer).setFloat64(8, long.length, true);
  refused(long, /8 bytes left over/, 'bytes after the state, header adjusted');

  refused(good, /aggregate 0 is count, the plan's is sum/, 'another plan\'s state', planOf('sum', { target_property: 'price' }));
  refused(good, /grouped by null, the plan by \["country"\]/, 'a plan with group_by', planOf('count', { group_by: 'country' }));
  refused(good, /1 buckets, the plan has 3/, 'a plan with buckets', planOf('count', { interval: 'daily' }));

  // Every prefix of a richer state (groups, sketches, values) is refused too.
  const rich = planOf('multi_analysis', { ...KINDS[KINDS.length - 1][1], group_by: ['country', 'flag'], interval: 'daily' });
  const richBytes = encodeOutcome(await partialOutcome(rich, events.slice(0, 300), BUDGETS.approximate));
  let allRefused = true;
  for (let length = 16; length < richBytes.length; length += 7) {
    const cut = richBytes.slice(0, length);
    new DataView(cut.buffer).setFloat64(8, length, true);
    try {
      decodeOutcome(cut, rich);
      allRefused = false;
      t.fail(`a ${length}-byte prefix decoded`);
    } catch (error) {
      if (!(error instanceof PartialStateError)) {
        allRefused = false;
        t.fail(`a ${length}-byte prefix: ${String(error)}`);
      }
    }
  }
  t.ok(allRefused, `every cut of a ${richBytes.length}-byte grouped, sketched state is refused with a PartialStateError`);
});
