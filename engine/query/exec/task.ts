/**
 * One query task as a worker (or the in-process path) runs it: execute the plan, then refuse a
 * response over the byte limit. Tasks are plain data so they can be posted to a worker.
 */
import { ApiError } from '../../base/errors.js';
import { WORKER_SNAPSHOTS_KEPT_MAX } from '../../base/limits.js';
import type { ScanSource } from '../../storage/chunk.js';
import { aggregateSteps, executeSteps } from './execute.js';
import { extractToFile, type ExtractionOutput } from './extraction.js';
import type { PartialBody } from './partial.js';
import { encodeFunnelSteps, encodeOutcome } from './partial-codec.js';
import { stepActors } from './funnel.js';
import { encodeStepKeys, stepActorKeys } from './funnel-keys.js';
import type { ExecLimits, Plan } from '../plan/plan.js';
import { ScanBuffers, type ExecEnv } from './scan.js';
import { runSteps, runStepsPaced, type Steps } from './steps.js';

export { checkResponseBytes };

/**
 * The buffer snapshots a query worker holds, newest per collection (by id key), least recently
 * used dropped first. The pool keeps one of these per worker with the versions only, the worker
 * one with the rows, and both apply every task's sources in the same order, so they agree on what
 * the worker holds: the pool posts a snapshot's rows once, later tasks name only its version.
 */
export class KeptSnapshots<T> {
  private readonly byKey = new Map<number, { version: number; value: T }>();

  /** The value kept for this collection's snapshot `version`, marking it used; undefined if none. */
  get(idKey: number, version: number): T | undefined {
    const kept = this.byKey.get(idKey);
    if (kept === undefined || kept.version !== version) return undefined;
    this.byKey.delete(idKey);
    this.byKey.set(idKey, kept);
    return kept.value;
  }

  keep(idKey: number, version: number, value: T): void {
    this.byKey.delete(idKey);
    this.byKey.set(idKey, { version, value });
    if (this.byKey.size > WORKER_SNAPSHOTS_KEPT_MAX) this.byKey.delete(this.byKey.keys().next().value!);
  }
}

export interface QueryTask {
  readonly plan: Plan;
  readonly sources: readonly ScanSource[];
  readonly limits: ExecLimits;
  readonly deadlineMs: number;
  readonly timeoutMs: number;
  /**
   * Fan-out: set on a share of an aggregate plan; sources[0] is this worker's share of `whole`,
   * and the task returns its encoded partial states (partial-codec.ts) instead of a response body.
   */
  readonly whole?: ScanSource;
  /**
   * Cluster: set on a funnel's task to scan only these steps (indexes); the task returns their
   * encoded actor sets (partial-codec.ts, version 2) instead of a response body.
   */
  readonly funnelSteps?: readonly number[];
  /**
   * Set on a funnel's share of a node's fan-out (service.ts): sources[i] is step i's share; the
   * task returns every step's actor keys, encoded (funnel.ts encodeStepKeys), in `state`.
   */
  readonly funnelKeys?: true;
  /** Set on an asynchronous extraction's task: the events go to this file, the body is {events}. */
  readonly output?: ExtractionOutput;
}

export function runTask(task: QueryTask, env: TaskEnv): Record<string, unknown> {
  return runSteps(taskSteps(task, env));
}

/**
 * runTask, letting the thread's event loop turn between two segments whenever `mustTurn()` (a
 * query worker: when its native zstd decoder has made enough garbage, which Node frees only on a
 * later turn; steps.ts). Nothing else runs on the worker meanwhile: its tasks are queued.
 */
export function runTaskPaced(task: QueryTask, env: TaskEnv, mustTurn: () => boolean): Promise<Record<string, unknown>> {
  return runStepsPaced(taskSteps(task, env), mustTurn);
}

type TaskEnv = Omit<ExecEnv, 'limits' | 'deadlineMs' | 'timeoutMs'>;

function* taskSteps(task: QueryTask, env: TaskEnv): Steps<Record<string, unknown>> {
  env.cache?.beginQuery();
  if (task.whole !== undefined && task.plan.kind === 'aggregate') {
    const buffers = new ScanBuffers();
    const outcome = yield* aggregateSteps(task.plan, task.sources[0], {
      ...env, limits: task.limits, deadlineMs: task.deadlineMs, timeoutMs: task.timeoutMs,
    }, buffers, task.whole);
    const partial: PartialBody = { state: encodeOutcome(outcome, buffers.eventsScanned) };
    return partial as unknown as Record<string, unknown>;
  }
  if (task.funnelSteps !== undefined && task.plan.kind === 'funnel') {
    const { plan, sources, limits } = task;
    const buffers = new ScanBuffers();
    const execEnv: ExecEnv = { ...env, limits, deadlineMs: task.deadlineMs, timeoutMs: task.timeoutMs };
    const state = encodeFunnelSteps(task.funnelSteps, (index) => stepActors(plan.steps[index], sources[index], execEnv, buffers),
      () => buffers.eventsScanned, limits.funnelStateBytesMax);
    return { state } satisfies PartialBody as unknown as Record<string, unknown>;
  }
  if (task.funnelKeys === true && task.plan.kind === 'funnel') {
    const { plan, sources, limits } = task;
    const buffers = new ScanBuffers();
    const execEnv: ExecEnv = { ...env, limits, deadlineMs: task.deadlineMs, timeoutMs: task.timeoutMs };
    const sets = plan.steps.map((step, index) => stepActorKeys(step, sources[index], execEnv, buffers));
    return { state: encodeStepKeys(sets, buffers.eventsScanned) } satisfies PartialBody as unknown as Record<string, unknown>;
  }
  if (task.output !== undefined && task.plan.kind === 'extraction') {
    const events = extractToFile(task.plan, task.sources[0], {
      ...env, limits: task.limits, deadlineMs: task.deadlineMs, timeoutMs: task.timeoutMs,
    }, new ScanBuffers(), task.output);
    return { events };
  }
  const body = yield* executeSteps(task.plan, task.sources, {
    ...env, limits: task.limits, deadlineMs: task.deadlineMs, timeoutMs: task.timeoutMs,
  });
  checkResponseBytes(body, task.limits.responseBytesMax);
  return body;
}

function checkResponseBytes(body: unknown, max: number): void {
  const json = JSON.stringify(body);
  // UTF-16 length bounds UTF-8 bytes from below by at most 3x; measure exactly only near the limit.
  if (json.length * 3 <= max) return;
  if (Buffer.byteLength(json) > max) {
    throw new ApiError('ResponseTooLargeError',
      `the response would exceed ${max} bytes; narrow the timeframe, add filters, group by ` +
      'fewer distinct values or use a larger interval');
  }
}
