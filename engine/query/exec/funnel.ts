/**
 * funnel: per step, the set of actors (values of actor_property) with a matching event in the
 * step's timeframe; step i counts the actors of every earlier non-optional step that did (or,
 * inverted, did not do) step i. Optional steps do not narrow later steps. Order in time is not
 * enforced (docs/api.md §6). Over funnelActorsMax actors in a step → TooManyGroupsError.
 */
import { ApiError } from '../../base/errors.js';
import { TAG_BOOL, TAG_LIST, TAG_NUM, TAG_STR, type Primitive, type ScanSource } from '../../storage/chunk.js';
import type { FunnelPlan, FunnelStepPlan } from '../plan/plan.js';
import { scanSource, type ExecEnv, type ScanBuffers } from './scan.js';

type Actor = Primitive | string;

export function runFunnel(
  plan: FunnelPlan, sources: readonly ScanSource[], env: ExecEnv, buffers: ScanBuffers,
): Record<string, unknown> {
  let current: Set<Actor> | null = null;
  const result: number[] = [];
  const actors: (unknown[] | null)[] = [];
  plan.steps.forEach((step, index) => {
    const did = actorsOf(step, sources[index], env, buffers);
    const base: Set<Actor> = current ?? did;
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

function actorsOf(step: FunnelStepPlan, source: ScanSource, env: ExecEnv, buffers: ScanBuffers): Set<Actor> {
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
      if (actors.size > max) {
        throw new ApiError('TooManyGroupsError',
          `funnel step on "${step.collection}" has more than ${max} actors; narrow its timeframe or filters`);
      }
    });
  return actors;
}

/** Marks list actors (kept as JSON) apart from string actors. */
const LIST_MARK = '\u0000list:';

function decodeActor(actor: Actor): unknown {
  return typeof actor === 'string' && actor.startsWith(LIST_MARK)
    ? JSON.parse(actor.slice(LIST_MARK.length)) : actor;
}
