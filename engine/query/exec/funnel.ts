/**
 * funnel: per step, the set of actors (values of actor_property) with a matching event in the
 * step's timeframe; step i counts the actors of every earlier non-optional step that did (or,
 * inverted, did not do) step i. Optional steps do not narrow later steps. Order in time is not
 * enforced (docs/api.md §6). Over funnelActorsMax actors in a step → TooManyGroupsError.
 *
 * Two halves: stepActors scans one step's actor set; combineFunnel is the step logic over sets,
 * however they were found: scanned here (runFunnel) or, in a cluster, scanned by the nodes that
 * store the steps' collections and sent as partial states (partial-codec.ts, service.ts).
 *
 * A funnel that returns no actors (no step with_actors) keeps each step's actors as the 64-bit
 * keys a distinct count keeps (count-unique.ts: strings hashed from the stored dictionary bytes,
 * or a bit per dense id of a warmed id column; numbers by their bits), never as JS strings: at
 * 10M events, a funnel of two steps on user_id took ~8 s making ~10M strings and hashing them
 * into a Set.
 */
import { ApiError } from '../../base/errors.js';
import { CountUniqueAggregator } from '../aggregate/count-unique.js';
import { PartitionedPairSet } from '../eval/hash-table.js';
import { PartialStateError, StateReader, StateWriter } from '../eval/state-io.js';
import { TAG_BOOL, TAG_LIST, TAG_NUM, TAG_STR, type Primitive, type ScanSource } from '../../storage/chunk.js';
import type { FunnelPlan, FunnelStepPlan } from '../plan/plan.js';
import { scanSource, type ExecEnv, type ScanBuffers } from './scan.js';

/** An actor as a set member: strings, numbers (-0 as 0), booleans, and lists as LIST_MARK + JSON. */
export type Actor = Primitive | string;

export function runFunnel(
  plan: FunnelPlan, sources: readonly ScanSource[], env: ExecEnv, buffers: ScanBuffers,
): Record<string, unknown> {
  if (plan.steps.some((step) => step.withActors)) {
    return combineFunnel(plan, (index) => stepActors(plan.steps[index], sources[index], env, buffers));
  }
  return combineFunnelKeys(plan, (index) => stepActorKeys(plan.steps[index], sources[index], env, buffers));
}

/** combineFunnel over actor keys (stepActorKeys): the same counts, no actors listed. */
export function combineFunnelKeys(plan: FunnelPlan, keysOf: (index: number) => PartitionedPairSet): Record<string, unknown> {
  let current: PartitionedPairSet | null = null;
  const result: number[] = [];
  plan.steps.forEach((step, index) => {
    const did = keysOf(index);
    let counted = did;
    if (current !== null || step.inverted) {
      const base: PartitionedPairSet = current ?? did;
      counted = new PartitionedPairSet();
      base.forEach((hi, lo) => {
        if (did.has(hi, lo) !== step.inverted) counted.add(hi, lo);
      });
    }
    result.push(counted.size);
    if (!step.optional) current = counted;
  });
  return { result, steps: plan.steps.map((s) => s.normalized) };
}

/**
 * stepActors as keys (a distinct count's exact keys of the actor property over the step's
 * rows); TooManyGroupsError past funnelActorsMax, as stepActors.
 */
export function stepActorKeys(step: FunnelStepPlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers): PartitionedPairSet {
  const max = env.limits.funnelActorsMax;
  const actors = new CountUniqueAggregator(step.actorProperty, Infinity, true, env.views);
  const tooMany = () => tooManyActors(step, max);
  scanSource(source, { range: step.range, filters: step.filters, columns: [step.actorProperty] }, env, buffers,
    ({ chunk, idx, n, inRange }) => {
      const column = env.views.column(chunk, step.actorProperty);
      if (column === undefined || n === 0) return;
      const dense = idx === buffers.identity && n === chunk.rows && inRange === n;
      actors.update({ column, idx, n, cells: null, cellCount: 1, dense, tagMask: env.views.tagMask(column) });
      if (actors.storedSize > max) throw tooMany();
    });
  const keys = actors.exactKeys();
  if (keys.size > max) throw tooMany();
  return keys;
}

/**
 * The funnel's body from its steps' actor sets, asked for once each, in step order (so at most
 * two sets need to be alive at once: the actors still in the funnel and the step's).
 */
export function combineFunnel(plan: FunnelPlan, actorsOf: (index: number) => ReadonlySet<Actor>): Record<string, unknown> {
  let current: ReadonlySet<Actor> | null = null;
  const result: number[] = [];
  const actors: (unknown[] | null)[] = [];
  plan.steps.forEach((step, index) => {
    const did = actorsOf(index);
    const base: ReadonlySet<Actor> = current ?? did;
    const counted = new Set<Actor>();
    for (const actor of base) if (did.has(actor) !== step.inverted) counted.add(actor);
    result.push(counted.size);
    actors.push(step.withActors ? [...counted].map(decodeActor) : null);
    if (!step.optional) current = counted;
  });
  const body: Record<string, unknown> = { result, steps: plan.steps.map((s) => s.normalized) };
  if (plan.steps.some((step) => step.withActors)) body.actors = actors;
  return body;
}

/** The actors with an event matching the step in its timeframe; TooManyGroupsError past funnelActorsMax. */
export function stepActors(step: FunnelStepPlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers): Set<Actor> {
  const actors = new Set<Actor>();
  const max = env.limits.funnelActorsMax;
  scanSource(source, { range: step.range, filters: step.filters, columns: [step.actorProperty] }, env, buffers,
    ({ chunk, idx, n }) => {
      const column = env.views.column(chunk, step.actorProperty);
      if (column === undefined) return;
      const { tags, num, str, dict, lists } = column;
      for (let k = 0; k < n; k++) {
        const i = idx[k];
        const t = tags[i];
        if (t === TAG_STR) actors.add(dict![str![i]]);
        else if (t === TAG_NUM) actors.add(num![i] + 0);
        else if (t === TAG_BOOL) actors.add(num![i] === 1);
        else if (t === TAG_LIST && lists![i] !== null) actors.add(LIST_MARK + JSON.stringify(lists![i]));
      }
      if (actors.size > max) throw tooManyActors(step, max);
    });
  return actors;
}

export function tooManyActors(step: FunnelStepPlan, max: number): ApiError {
  return new ApiError('TooManyGroupsError', `funnel step on "${step.collection}" has more than ${max} actors; narrow its timeframe or filters`);
}

/**
 * A funnel share's actor keys, a set per step in order (stepActorKeys), and the events its scans
 * read: what a query worker posts back (transferred) when a node's funnel is fanned out over its
 * workers (service.ts). Not a format between nodes (those exchange partial-codec.ts states).
 */
export function encodeStepKeys(sets: readonly PartitionedPairSet[], eventsScanned: number): Uint8Array<ArrayBuffer> {
  const writer = new StateWriter();
  writer.u32(sets.length);
  for (const set of sets) set.encode(writer);
  writer.f64(eventsScanned);
  return writer.finish();
}

export function decodeStepKeys(bytes: Uint8Array, steps: number): { sets: PartitionedPairSet[]; eventsScanned: number } {
  const reader = new StateReader(bytes);
  const count = reader.u32('step count');
  if (count !== steps) throw new PartialStateError(`${count} step key sets for a ${steps}-step funnel`);
  const sets = Array.from({ length: count }, () => PartitionedPairSet.decode(reader));
  return { sets, eventsScanned: reader.f64('events scanned') };
}

/** Marks list actors (kept as JSON) apart from string actors. */
const LIST_MARK = '\u0000list:';

function decodeActor(actor: Actor): unknown {
  return typeof actor === 'string' && actor.startsWith(LIST_MARK)
    ? JSON.parse(actor.slice(LIST_MARK.length)) : actor;
}
