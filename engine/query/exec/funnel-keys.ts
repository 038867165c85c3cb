/**
 * A funnel that lists no actors (no step with_actors) keeps each step's actors as the 64-bit keys
 * a distinct count keeps (count-unique.ts: strings hashed from the stored dictionary bytes, a bit
 * per dense id of a warmed id column, numbers by their bits), never as JS strings: at 10M events
 * a funnel of two steps on user_id took ~8 s making ~10M strings and hashing them into a Set.
 * Fanned out over a node's query workers (service.ts), each worker posts its steps' keys packed
 * by partition (packed-keys.ts), and the coordinator unites and intersects them a partition at a
 * time (countFunnel).
 */
import { ApiError } from '../../base/errors.js';
import type { ScanSource } from '../../storage/chunk.js';
import { CountUniqueAggregator } from '../aggregate/count-unique.js';
import { PairSet, type PartitionedPairSet } from '../eval/hash-table.js';
import { PARTITIONS, packKeys, type PackedKeys } from '../eval/packed-keys.js';
import { PartialStateError, StateReader, StateWriter } from '../eval/state-io.js';
import type { FunnelPlan, FunnelStepPlan } from '../plan/plan.js';
import { scanSource, type ExecEnv, type ScanBuffers } from './scan.js';

export function tooManyActors(step: FunnelStepPlan, max: number): ApiError {
  return new ApiError('TooManyGroupsError', `funnel step on "${step.collection}" has more than ${max} actors; narrow its timeframe or filters`);
}

/**
 * The keys of the actors with an event matching the step in its timeframe (a distinct count's
 * exact keys of the actor property over the step's rows); TooManyGroupsError past funnelActorsMax.
 */
export function stepActorKeys(step: FunnelStepPlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers): PartitionedPairSet {
  const max = env.limits.funnelActorsMax;
  const actors = new CountUniqueAggregator(step.actorProperty, Infinity, true, env.views);
  scanSource(source, { range: step.range, filters: step.filters, columns: [step.actorProperty] }, env, buffers,
    ({ chunk, idx, n, inRange }) => {
      const column = env.views.column(chunk, step.actorProperty);
      if (column === undefined || n === 0) return;
      const dense = idx === buffers.identity && n === chunk.rows && inRange === n;
      actors.update({ column, idx, n, cells: null, cellCount: 1, dense, tagMask: env.views.tagMask(column) });
      if (actors.storedSize > max) throw tooManyActors(step, max);
    });
  const keys = actors.exactKeys();
  if (keys.size > max) throw tooManyActors(step, max);
  return keys;
}

/**
 * The funnel's counts from each step's keys, found in parts (keys[step]: a share's each, the
 * parts of a step possibly sharing actors): step i counts the actors of every earlier
 * non-optional step that did (inverted: did not do) step i, as combineFunnel (funnel.ts).
 * A partition at a time: each step's parts united, then intersected with the actors still in
 * the funnel, all within one partition's keys. TooManyGroupsError when a step's united actors
 * pass `actorsMax`.
 */
export function countFunnel(plan: FunnelPlan, keys: readonly (readonly PackedKeys[])[], actorsMax: number): number[] {
  const steps = plan.steps;
  const result = steps.map(() => 0);
  const sizes = steps.map(() => 0);
  // Scratch sets, reused from partition to partition (a partition's keys are a few thousand).
  const spare: PairSet[] = [];
  const taken: PairSet[] = [];
  const take = (): PairSet => {
    const set = spare.pop() ?? new PairSet();
    set.clear();
    taken.push(set);
    return set;
  };
  for (let p = 0; p < PARTITIONS; p++) {
    let current: PairSet | null = null;
    spare.push(...taken.splice(0));
    steps.forEach((step, index) => {
      const did = take();
      let total = 0;
      for (const part of keys[index]) total += part.starts[p + 1] - part.starts[p];
      did.reserve(total);
      for (const { keys: flat, starts } of keys[index]) {
        for (let k = starts[p]; k < starts[p + 1]; k++) did.add(flat[2 * k], flat[2 * k + 1]);
      }
      sizes[index] += did.size;
      if (current === null) {
        // The first step: neither optional nor inverted (request.ts).
        result[index] += did.size;
        current = did;
        return;
      }
      const { his, los, used } = current;
      // The actors still in the funnel after this step matter only to a later step.
      const kept = !step.optional && index < steps.length - 1 ? take() : null;
      let count = 0;
      for (let s = 0; s < used.length; s++) {
        if (used[s] === 0 || did.has(his[s], los[s]) === step.inverted) continue;
        count++;
        kept?.add(his[s], los[s]);
      }
      result[index] += count;
      if (kept !== null) current = kept;
    });
  }
  sizes.forEach((size, index) => {
    if (size > actorsMax) throw tooManyActors(steps[index], actorsMax);
  });
  return result;
}

/**
 * A funnel share's actor keys, a set per step in order (stepActorKeys), packed, and the events its
 * scans read: what a query worker posts back (transferred) when a node's funnel is fanned out over
 * its workers (service.ts). Not a format between nodes (those exchange partial-codec.ts states).
 */
export function encodeStepKeys(sets: readonly PartitionedPairSet[], eventsScanned: number): Uint8Array<ArrayBuffer> {
  const writer = new StateWriter();
  writer.u32(sets.length);
  for (const set of sets) {
    const { keys, starts } = packKeys(set);
    writer.i32Array(starts);
    writer.i32Array(keys);
  }
  writer.f64(eventsScanned);
  return writer.finish();
}

export function decodeStepKeys(bytes: Uint8Array, steps: number): { keys: PackedKeys[]; eventsScanned: number } {
  const reader = new StateReader(bytes);
  const count = reader.u32('step count');
  if (count !== steps) throw new PartialStateError(`${count} step key sets for a ${steps}-step funnel`);
  const keys = Array.from({ length: count }, (): PackedKeys => {
    const starts = reader.i32Array('partition starts');
    const flat = reader.i32Array('keys');
    if (starts.length !== PARTITIONS + 1 || starts[0] !== 0 || 2 * starts[PARTITIONS] !== flat.length) {
      throw new PartialStateError(`packed keys of ${flat.length / 2} with ${starts.length} partition starts`);
    }
    for (let p = 0; p < PARTITIONS; p++) if (starts[p + 1] < starts[p]) throw new PartialStateError('partition starts out of order');
    return { keys: flat, starts };
  });
  return { keys, eventsScanned: reader.f64('events scanned') };
}
