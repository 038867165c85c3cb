/**
 * Fan-out of one aggregate query over several workers: which worker scans which segment
 * (deterministic by file, so each worker's chunk cache keeps its own segments warm), how a
 * worker's partial states cross the thread boundary (structured clone keeps typed arrays and
 * maps but drops classes: `pack` tags every class instance with its class name and `unpack`
 * restores the prototypes), and how the coordinator merges the partial states: group ids are
 * worker-local, so groups are merged by their values and cells renumbered before merging.
 */
import { HyperLogLog } from '../sketch/hyperloglog.js';
import type { ScanSource, SegmentRef } from '../storage/chunk.js';
import { createAggregator, type Aggregator } from './aggregate/index.js';
import { QuantileSketch } from './aggregate/quantile-sketch.js';
import { ColumnViews } from './columns.js';
import { FixedAggregator } from './execute.js';
import { GroupTable } from './group-by.js';
import { NumberMap, PartitionedPairSet, TripleSet } from './hash-table.js';
import type { AggregatePlan, AggregateSpec, ExecLimits } from './plan.js';
import type { AggregateOutcome } from './result.js';

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

/** A worker's partial result: its packed outcome and the events it scanned. */
export interface PartialBody {
  readonly outcome: unknown;
  readonly eventsScanned: number;
}

const CLASS_KEY = '\u0000class';
const WEAK_KEY = '\u0000weak';

let classes: Map<string, object> | null = null;

/** Every class a partial state may hold, by name, found by walking fresh instances. */
function registry(): Map<string, object> {
  if (classes !== null) return classes;
  const found = new Map<string, object>();
  const seen = new Set<object>();
  const visit = (value: unknown): void => {
    if (typeof value !== 'object' || value === null || seen.has(value) || ArrayBuffer.isView(value) ||
      value instanceof ArrayBuffer || value instanceof WeakMap) return;
    seen.add(value);
    const proto = Object.getPrototypeOf(value) as object | null;
    if (value instanceof Map) {
      for (const entry of value.values()) visit(entry);
      return;
    }
    if (proto !== null && proto !== Object.prototype && proto !== Array.prototype) {
      for (let p: object | null = proto; p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
        found.set((p as { constructor: { name: string } }).constructor.name, p);
      }
    }
    for (const member of Object.values(value)) visit(member);
  };
  const limits: ExecLimits = {
    countUniqueExactMax: 1, percentileExactMax: 1, groupsMax: 1, extractionScanMax: 1,
    extractionResultMax: 1, funnelActorsMax: 1, responseBytesMax: 1,
  };
  const kinds: AggregateSpec['kind'][] = ['count', 'count_unique', 'minimum', 'maximum', 'sum',
    'average', 'median', 'percentile', 'standard_deviation', 'select_unique'];
  const views = new ColumnViews();
  for (const kind of kinds) {
    visit(createAggregator({ label: null, kind, targetProperty: 'x', percentile: 50, forceExact: false }, limits, views));
  }
  for (const instance of [new GroupTable(['a', 'b'], 1), new PartitionedPairSet(), new TripleSet(),
    new NumberMap(), new HyperLogLog(), new QuantileSketch(), new FixedAggregator(0), views]) visit(instance);
  classes = found;
  return found;
}

/** A structured-clone-safe copy of a partial state graph (typed arrays are shared, not copied). */
export function pack(value: unknown, memo = new Map<object, unknown>()): unknown {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value) ||
    value instanceof ArrayBuffer) return value;
  const known = memo.get(value);
  if (known !== undefined) return known;
  if (value instanceof WeakMap) return { [WEAK_KEY]: true };
  if (value instanceof Map) {
    const copy = new Map();
    memo.set(value, copy);
    for (const [key, entry] of value) copy.set(key, pack(entry, memo));
    return copy;
  }
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array(value.length);
    memo.set(value, copy);
    value.forEach((entry, at) => (copy[at] = pack(entry, memo)));
    return copy;
  }
  const copy: Record<string, unknown> = {};
  memo.set(value, copy);
  (value as { beforePack?: () => void }).beforePack?.();
  const proto = Object.getPrototypeOf(value) as { constructor: { name: string } } | null;
  if (proto !== null && proto !== Object.prototype) {
    const name = proto.constructor.name;
    if (registry().get(name) !== proto) throw new Error(`cannot pass a ${name} between workers`);
    copy[CLASS_KEY] = name;
  }
  for (const [key, member] of Object.entries(value)) copy[key] = pack(member, memo);
  return copy;
}

/**
 * Restores what `pack` copied (after structured clone). Class instances are rebuilt with
 * Object.create and their fields assigned in order (not by changing the clone's prototype,
 * which would leave them in slow dictionary mode for the merge loops).
 */
export function unpack(value: unknown, memo = new Map<object, unknown>()): unknown {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value) ||
    value instanceof ArrayBuffer) return value;
  if (memo.has(value)) return memo.get(value);
  if (value instanceof Map) {
    memo.set(value, value);
    for (const [key, entry] of value) value.set(key, unpack(entry, memo));
    return value;
  }
  if (Array.isArray(value)) {
    memo.set(value, value);
    for (let at = 0; at < value.length; at++) value[at] = unpack(value[at], memo);
    return value;
  }
  const record = value as Record<string, unknown>;
  if (record[WEAK_KEY] === true) {
    const weak = new WeakMap();
    memo.set(value, weak);
    return weak;
  }
  const name = record[CLASS_KEY];
  let proto: object | null = Object.prototype;
  if (typeof name === 'string') {
    const found = registry().get(name);
    if (found === undefined) throw new Error(`unknown partial-state class ${name}`);
    proto = found;
  }
  const object = Object.create(proto) as Record<string, unknown>;
  memo.set(value, object);
  for (const key of Object.keys(record)) {
    if (key !== CLASS_KEY) object[key] = unpack(record[key], memo);
  }
  return object;
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
