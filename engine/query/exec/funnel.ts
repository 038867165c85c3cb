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
 * A funnel that lists no actors (no step with_actors) keeps them as keys (funnel-keys.ts).
 */
import { packKeys } from '../eval/packed-keys.js';
import { countFunnel, stepActorKeys, tooManyActors } from './funnel-keys.js';
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
  const keys = plan.steps.map((step, index) => [packKeys(stepActorKeys(step, sources[index], env, buffers))]);
  return { result: countFunnel(plan, keys, env.limits.funnelActorsMax), steps: plan.steps.map((s) => s.normalized) };
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

/** Marks list actors (kept as JSON) apart from string actors. */
const LIST_MARK = '\u0000list:';

function decodeActor(actor: Actor): unknown {
  return typeof actor === 'string' && actor.startsWith(LIST_MARK)
    ? JSON.parse(actor.slice(LIST_MARK.length)) : actor;
}
