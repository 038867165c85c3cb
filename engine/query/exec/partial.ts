/**
 * Fan-out of one aggregate query over several workers: which worker scans which segment
 * (deterministic by file, so each worker's chunk cache keeps its own segments warm), how a
 * worker's partial states cross the thread boundary (encoded by partial-codec.ts into one
 * ArrayBuffer that is transferred, not cloned), and how the coordinator merges the partial
 * states: group ids are worker-local, so groups are merged by their values and cells
 * renumbered before merging. A funnel's steps scanned on several cluster nodes are combined
 * here too (finishFunnel).
 */
import type { ScanSource, SegmentRef } from '../../storage/chunk.js';
import type { Aggregator } from '../aggregate/index.js';
import { FixedAggregator } from './execute.js';
import type { AggregatePlan, FunnelPlan } from '../plan/plan.js';
import type { AggregateOutcome } from './result.js';
import { combineFunnel, type Actor } from './funnel.js';
import { countFunnel, decodeStepKeys } from './funnel-keys.js';
import type { PackedKeys } from '../eval/packed-keys.js';
import { decodeFunnelSteps, PartialStateError } from './partial-codec.js';
import { addMetadata } from './execute.js';

/** The worker (0 .. workers-1) that scans a segment file: stable for the file's lifetime. */
export function workerOfSegment(file: string, workers: number): number {
  if (workers <= 1) return 0;
  const slash = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
  // A collection's segments live in one directory per day (storage/collection.ts): consecutive
  // days go round-robin, so any run of days splits evenly, and a day's segments, compacted
  // or not, stay with the worker whose cache holds that day. (By first sequence number, as
  // before, 90 days split 2:1 in a measured run: the slower worker set every query's time.)
  const day = /(\d{4})-(\d{2})-(\d{2})$/.exec(file.slice(0, Math.max(slash, 0)));
  if (day !== null) return Math.floor(Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3])) / 86_400_000) % workers;
  // Other files named by a number spread round-robin; anything else is hashed.
  const base = file.slice(slash + 1);
  const digits = /^\d{1,15}/.exec(base);
  if (digits !== null) return Number(digits[0]) % workers;
  let h = 0x811c9dc5;
  for (let i = 0; i < file.length; i++) h = Math.imul(h ^ file.charCodeAt(i), 0x01000193);
  return (h >>> 0) % workers;
}

/**
 * Splits a source into per-worker shares (segments by workerOfSegment; the write buffer's rows
 * to the worker with the fewest rows). Empty shares are null.
 */
export function splitSource(source: ScanSource, workers: number): (ScanSource | null)[] {
  const segments: SegmentRef[][] = Array.from({ length: workers }, () => []);
  const rows = new Array<number>(workers).fill(0);
  for (const ref of source.segments) {
    const w = workerOfSegment(ref.file, workers);
    segments[w].push(ref);
    rows[w] += ref.footer.rows;
  }
  let memoryAt = -1;
  if (source.memory !== null && source.memory.rows > 0) memoryAt = rows.indexOf(Math.min(...rows));
  return segments.map((refs, w) => (refs.length === 0 && w !== memoryAt ? null
    : (w === memoryAt ? { ...source, segments: refs }
      : { ...source, segments: refs, memory: null, memoryVersion: 0 })));
}

/**
 * A worker's partial result as it crosses to the coordinator: its outcome and the events it
 * scanned, encoded by partial-codec.ts, alone in an ArrayBuffer the worker transfers.
 */
export interface PartialBody {
  readonly state: Uint8Array<ArrayBuffer>;
}

/** The buffers to transfer (not clone) with a worker's reply body: a partial state's. */
export function transferablesOf(body: Record<string, unknown>): ArrayBuffer[] {
  const state = (body as Partial<PartialBody>).state;
  return state instanceof Uint8Array && state.byteOffset === 0 && state.byteLength === state.buffer.byteLength
    ? [state.buffer as ArrayBuffer] : [];
}

/** Merges the partial outcomes of one plan's shares into the first. */
export function mergeOutcomes(plan: AggregatePlan, outcomes: readonly AggregateOutcome[]): AggregateOutcome {
  const fixed = outcomes.find((outcome) => outcome.aggregators[0] instanceof FixedAggregator);
  if (fixed !== undefined) return fixed;
  const [base, ...rest] = outcomes;
  for (const other of rest) {
    const states = new Set<Aggregator>([...other.aggregators, other.rowsPerCell]);
    if (base.groups !== null && other.groups !== null) {
      const buckets = base.bucketCount;
      const map = new Int32Array(other.groups.size * buckets);
      for (let g = 0; g < other.groups.size; g++) {
        const id = base.groups.idOfTuple(other.groups.tuple(g));
        for (let b = 0; b < buckets; b++) map[g * buckets + b] = id * buckets + b;
      }
      for (const state of states) state.remap(map);
    }
    other.aggregators.forEach((state, a) => base.aggregators[a].merge(state));
    if (!base.aggregators.includes(base.rowsPerCell)) base.rowsPerCell.merge(other.rowsPerCell);
  }
  void plan;
  return base;
}

/**
 * The body of a funnel from the step states (partial-codec.ts, version 2) of the nodes that
 * scanned its steps: every step in exactly one state, combined by the same step logic as on one
 * node (funnel.ts), each step's actors decoded when the logic reaches it.
 */
/**
 * The body of a funnel fanned out over a node's query workers, from their shares' step keys
 * (funnel-keys.ts encodeStepKeys): each step's keys united and intersected a partition at a
 * time (countFunnel); TooManyGroupsError when a step's actors, united, pass `actorsMax`.
 */
export function finishFunnelKeys(plan: FunnelPlan, states: readonly Uint8Array[], startedMs: number, actorsMax: number): Record<string, unknown> {
  const keys: PackedKeys[][] = plan.steps.map(() => []);
  let eventsScanned = 0;
  for (const state of states) {
    const decoded = decodeStepKeys(state, plan.steps.length);
    eventsScanned += decoded.eventsScanned;
    decoded.keys.forEach((packed, index) => keys[index].push(packed));
  }
  const body = { result: countFunnel(plan, keys, actorsMax), steps: plan.steps.map((step) => step.normalized) };
  if (plan.includeMetadata) addMetadata(body, startedMs, eventsScanned, 1);
  return body;
}

export function finishFunnel(plan: FunnelPlan, states: readonly Uint8Array[], startedMs: number): Record<string, unknown> {
  const byStep = new Map<number, () => Set<Actor>>();
  let eventsScanned = 0;
  for (const state of states) {
    const decoded = decodeFunnelSteps(state, plan.steps.length);
    for (const [index, read] of decoded.steps) {
      if (byStep.has(index)) throw new PartialStateError(`step ${index} is in two states`);
      byStep.set(index, read);
    }
    eventsScanned += decoded.eventsScanned;
  }
  const missing = plan.steps.map((_, index) => index).filter((index) => !byStep.has(index));
  if (missing.length > 0) throw new PartialStateError(`no state has step${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  const body = combineFunnel(plan, (index) => byStep.get(index)!());
  if (plan.includeMetadata) addMetadata(body, startedMs, eventsScanned, 1);
  return body;
}
