/**
 * The versioned wire format of an aggregate query's partial state (AggregateOutcome plus the
 * events its scan read): what a query worker hands the coordinator, and what nodes of a cluster
 * will exchange. One self-contained byte string; the worker transfers its ArrayBuffer.
 *
 * Format version 1, integers and floats little-endian (state-io.ts):
 *   State      => Header Body
 *   Header     => magic:"TPS1" version:u16 reserved:u16(0) byteLength:f64   (16 bytes)
 *   Body       => eventsScanned:f64 bucketCount:u32 aggregateCount:u32 rowsPerCell:i32
 *                 hasGroups:u8 [GroupTable] Aggregate[aggregateCount] [Aggregate if rowsPerCell = -1]
 *   Aggregate  => tag:u8 length:u32 body:u8[length]   (tag: aggregate/types.ts AggregateTag;
 *                 body: the class's encode(), e.g. aggregate/count.ts)
 *   rowsPerCell is the index of the count aggregate that doubles as the row count per cell, or -1
 *   when the row counts follow the aggregates as their own count state.
 * Typed arrays are u32 element counts followed by raw elements at an 8-aligned offset from the
 * start of the state, so decoding views them in the received buffer rather than copying them.
 *
 * Format version 2 adds a second kind of state, a funnel's step actor sets (what the nodes of a
 * cluster that store a funnel's collections send the node that combines them, funnel.ts); the
 * header's u16 after the version, reserved in version 1, is then the kind (1 = funnel steps).
 * Aggregate states are still written as version 1, byte for byte as before:
 *   FunnelState => Header(version 2, kind 1) stepCount:u32 Step[stepCount] eventsScanned:f64
 *   Step        => index:u32 length:u32 actorCount:u32 Actor[actorCount]   (length: bytes after it)
 *   Actor       => 0 utf8:u32 length + bytes | 1 number:f64 | 2 false | 3 true | 4 null
 *                | 5 a string with a lone surrogate, as UTF-16: u32 units + u16[units]
 * A list actor is a string (funnel.ts marks it). A step's actors are decoded when the funnel
 * asks for that step, so the combining node holds two sets at a time, as a single node does.
 *
 * Anything else is refused with a PartialStateError naming what is wrong: another magic or
 * version, an unknown tag or kind, a short or long buffer, a state that does not fit the plan. A
 * change to any encode() needs a new VERSION here and a decoder for the old one, or a deliberate
 * break the golden states of test/fixtures/partial-state will report.
 */
import { AverageAggregator } from '../aggregate/average.js';
import { CountUniqueAggregator } from '../aggregate/count-unique.js';
import { CountAggregator } from '../aggregate/count.js';
import { MaxAggregator } from '../aggregate/max.js';
import { MedianAggregator } from '../aggregate/median.js';
import { MinAggregator } from '../aggregate/min.js';
import { PercentileAggregator } from '../aggregate/percentile.js';
import { SelectUniqueAggregator } from '../aggregate/select-unique.js';
import { StandardDeviationAggregator } from '../aggregate/standard-deviation.js';
import { SumAggregator } from '../aggregate/sum.js';
import { AggregateTag, type Aggregator } from '../aggregate/types.js';
import { ColumnViews } from '../eval/columns.js';
import { FixedAggregator } from './execute.js';
import { GroupTable } from '../eval/group-by.js';
import type { AggregatePlan } from '../plan/plan.js';
import type { AggregateOutcome } from './result.js';
import type { Actor } from './funnel.js';
import { ApiError } from '../../base/errors.js';
import { PartialStateError, StateReader, StateWriter } from '../eval/state-io.js';

export { PartialStateError } from '../eval/state-io.js';

export const MAGIC = 'TPS1';
/** The version aggregate states are written in. */
export const VERSION = 1;
/** The version funnel step states are written in (and the only one they have). */
export const FUNNEL_VERSION = 2;
/** Version 2's kinds of state. */
const KIND_FUNNEL_STEPS = 1;
const MAGIC_BYTES = Uint8Array.from(MAGIC, (c) => c.charCodeAt(0));

/** What decoding needs besides the bytes: where count_unique states read columns (unused once decoded). */
export interface DecodeContext {
  readonly views: ColumnViews;
}

type Decoder = (reader: StateReader, context: DecodeContext) => Aggregator;

/** Every tag's decoder: a new tag without one here does not compile. */
const DECODERS: { readonly [T in AggregateTag]: Decoder } = {
  [AggregateTag.count]: (reader) => CountAggregator.decode(reader),
  [AggregateTag.count_unique]: (reader, context) => CountUniqueAggregator.decode(reader, context),
  [AggregateTag.minimum]: (reader) => MinAggregator.decode(reader),
  [AggregateTag.maximum]: (reader) => MaxAggregator.decode(reader),
  [AggregateTag.sum]: (reader) => SumAggregator.decode(reader),
  [AggregateTag.average]: (reader) => AverageAggregator.decode(reader),
  [AggregateTag.median]: (reader) => MedianAggregator.decode(reader),
  [AggregateTag.percentile]: (reader) => PercentileAggregator.decode(reader),
  [AggregateTag.standard_deviation]: (reader) => StandardDeviationAggregator.decode(reader),
  [AggregateTag.select_unique]: (reader) => SelectUniqueAggregator.decode(reader),
  [AggregateTag.fixed]: (reader) => FixedAggregator.decode(reader),
};

const TAG_NAMES = new Map<number, string>(Object.entries(AggregateTag).map(([name, tag]) => [tag, name]));

/** A worker's share of an aggregate query: its partial states and the events it scanned. */
export interface DecodedPartial {
  readonly outcome: AggregateOutcome;
  readonly eventsScanned: number;
}

/** The encoded state, alone in its ArrayBuffer (exactly as long), ready to transfer. */
export function encodeOutcome(outcome: AggregateOutcome, eventsScanned = 0): Uint8Array<ArrayBuffer> {
  const writer = headerWriter(VERSION, 0);
  writer.f64(eventsScanned);
  writer.u32(outcome.bucketCount);
  writer.u32(outcome.aggregators.length);
  const rowsAt = outcome.aggregators.indexOf(outcome.rowsPerCell);
  writer.i32(rowsAt);
  writer.bool(outcome.groups !== null);
  outcome.groups?.encode(writer);
  for (const aggregator of outcome.aggregators) writeAggregate(writer, aggregator);
  if (rowsAt === -1) writeAggregate(writer, outcome.rowsPerCell);
  return finishState(writer);
}

/** A writer with the header written, its byte length to be set by finishState. */
function headerWriter(version: number, kind: number): StateWriter {
  const writer = new StateWriter();
  for (const byte of MAGIC_BYTES) writer.u8(byte);
  writer.u16(version);
  writer.u16(kind);
  writer.f64(0); // byteLength, set by finishState
  return writer;
}

function finishState(writer: StateWriter): Uint8Array<ArrayBuffer> {
  const bytes = writer.finish();
  new DataView(bytes.buffer).setFloat64(8, bytes.length, true);
  return bytes;
}

function writeAggregate(writer: StateWriter, aggregator: Aggregator): void {
  writer.u8(aggregator.codecTag);
  const lengthAt = writer.length;
  writer.u32(0);
  const start = writer.length;
  aggregator.encode(writer);
  writer.patchU32(lengthAt, writer.length - start);
}

/** decodePartial's outcome alone. */
export function decodeOutcome(bytes: Uint8Array, plan?: AggregatePlan, context?: DecodeContext): AggregateOutcome {
  return decodePartial(bytes, plan, context).outcome;
}

let sharedViews: ColumnViews | null = null;

/**
 * The state encodeOutcome wrote. With `plan`, also checks that the state is one of this plan's
 * (its aggregates, groups and buckets). Typed arrays of the result may view `bytes`' buffer.
 */
export function decodePartial(bytes: Uint8Array, plan?: AggregatePlan, context?: DecodeContext): DecodedPartial {
  const reader = readHeader(bytes, 'aggregate');
  const ctx = context ?? { views: (sharedViews ??= new ColumnViews()) };
  const eventsScanned = reader.f64('events scanned');
  const bucketCount = reader.u32('the bucket count');
  const count = reader.u32('the aggregate count');
  const rowsAt = reader.i32('the row-count aggregate');
  if (rowsAt < -1 || rowsAt >= count) throw new PartialStateError(`row counts at aggregate ${rowsAt} of ${count}`);
  const groups = reader.bool('whether there are groups') ? GroupTable.decode(reader) : null;
  reader.need(count * 5, 'the aggregates');
  const aggregators: Aggregator[] = [];
  for (let a = 0; a < count; a++) aggregators.push(readAggregate(reader, ctx, `aggregate ${a}`));
  const rowsPerCell = rowsAt === -1 ? readAggregate(reader, ctx, 'the row counts') : aggregators[rowsAt];
  if (!(rowsPerCell instanceof CountAggregator)) {
    throw new PartialStateError(`the row counts are a ${TAG_NAMES.get(rowsPerCell.codecTag)} state, not a count`);
  }
  if (reader.remaining !== 0) throw new PartialStateError(`${reader.remaining} bytes left over after the state`);
  const outcome: AggregateOutcome = { aggregators, rowsPerCell, groups, bucketCount };
  if (plan !== undefined) checkAgainst(plan, outcome);
  return { outcome, eventsScanned };
}

/** The two kinds of state, as named in refusals. */
const KIND_NAMES = { aggregate: 'an aggregate state', funnel: "a funnel's step actor sets" } as const;

/** Reads and checks the header of a state of kind `want`; the reader is then at its body. */
function readHeader(bytes: Uint8Array, want: keyof typeof KIND_NAMES): StateReader {
  const reader = new StateReader(bytes);
  reader.need(4, 'the magic');
  for (let k = 0; k < 4; k++) {
    if (bytes[k] !== MAGIC_BYTES[k]) {
      const found = Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
      throw new PartialStateError(`not a partial state: magic is ${found}, not "${MAGIC}"`);
    }
  }
  reader.skip(4, 'the magic');
  const version = reader.u16('the format version');
  if (version !== VERSION && version !== FUNNEL_VERSION) {
    throw new PartialStateError(`format version ${version} is not supported (this build reads versions ${VERSION} and ${FUNNEL_VERSION})`);
  }
  const kind = reader.u16(version === VERSION ? 'the reserved field' : 'the state kind');
  if (version === VERSION && kind !== 0) throw new PartialStateError('the reserved header field is not 0');
  if (version === FUNNEL_VERSION && kind !== KIND_FUNNEL_STEPS) {
    throw new PartialStateError(`unknown state kind ${kind} (format version ${FUNNEL_VERSION})`);
  }
  const found = version === VERSION ? 'aggregate' : 'funnel';
  if (found !== want) throw new PartialStateError(`this is ${KIND_NAMES[found]}, not ${KIND_NAMES[want]}`);
  const declared = reader.f64('the byte length');
  if (declared !== bytes.length) {
    throw new PartialStateError(declared > bytes.length
      ? `truncated: the header says ${declared} bytes, only ${bytes.length} arrived`
      : `the header says ${declared} bytes, but ${bytes.length} arrived`);
  }
  return reader;
}

function readAggregate(reader: StateReader, context: DecodeContext, what: string): Aggregator {
  const at = reader.offset;
  const tag = reader.u8(`${what}'s tag`);
  const decode = DECODERS[tag as AggregateTag] as Decoder | undefined;
  if (decode === undefined || !Object.hasOwn(DECODERS, tag)) {
    throw new PartialStateError(`unknown aggregate tag ${tag} (${what}, offset ${at})`);
  }
  const length = reader.u32(`${what}'s length`);
  reader.need(length, `${what} (${TAG_NAMES.get(tag)})`);
  const start = reader.offset;
  let aggregator: Aggregator;
  try {
    aggregator = decode(reader, context);
  } catch (error) {
    if (!(error instanceof PartialStateError)) throw error;
    throw new PartialStateError(`${what} (${TAG_NAMES.get(tag)}): ${error.message.replace(/^partial state: /, '')}`);
  }
  if (reader.offset - start !== length) {
    throw new PartialStateError(`${what} (${TAG_NAMES.get(tag)}) is ${length} bytes, its decoder read ${reader.offset - start}`);
  }
  return aggregator;
}

/** Refuses a state that is not one of this plan's. */
function checkAgainst(plan: AggregatePlan, outcome: AggregateOutcome): void {
  const { aggregators } = outcome;
  const fixed = aggregators.length === 1 && aggregators[0] instanceof FixedAggregator;
  if (!fixed) {
    if (aggregators.length !== plan.aggregates.length) {
      throw new PartialStateError(`${aggregators.length} aggregates, the plan has ${plan.aggregates.length}`);
    }
    plan.aggregates.forEach((spec, a) => {
      if (aggregators[a].codecTag !== AggregateTag[spec.kind]) {
        throw new PartialStateError(`aggregate ${a} is ${TAG_NAMES.get(aggregators[a].codecTag)}, the plan's is ${spec.kind}`);
      }
    });
  }
  const buckets = plan.buckets === null ? 1 : plan.buckets.edges.length - 1;
  if (outcome.bucketCount !== buckets) throw new PartialStateError(`${outcome.bucketCount} buckets, the plan has ${buckets}`);
  const paths = outcome.groups?.paths ?? null;
  const want = plan.groupBy;
  if ((paths === null) !== (want === null) || (paths !== null && paths.join('\u0000') !== want!.join('\u0000'))) {
    throw new PartialStateError(`grouped by ${JSON.stringify(paths)}, the plan by ${JSON.stringify(want)}`);
  }
}

/** Actor kinds of a funnel step state (format version 2). */
const ActorKind = { utf8: 0, number: 1, false: 2, true: 3, null: 4, utf16: 5 } as const;
/** A string UTF-8 cannot carry as it is (encodeInto would replace the surrogate). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The actor sets of a funnel's `steps` (indexes), each asked of `actorsOf` in turn and let go
 * once written, then the events the scans read (asked last). Past `bytesMax` bytes (what one node
 * may send another, and hold while it does) → ResponseTooLargeError, a 400.
 */
export function encodeFunnelSteps(
  steps: readonly number[], actorsOf: (index: number) => ReadonlySet<Actor>, eventsScanned: () => number, bytesMax: number,
): Uint8Array<ArrayBuffer> {
  const writer = headerWriter(FUNNEL_VERSION, KIND_FUNNEL_STEPS);
  writer.u32(steps.length);
  for (const index of steps) {
    writer.u32(index);
    const lengthAt = writer.length;
    writer.u32(0);
    const start = writer.length;
    const actors = actorsOf(index);
    writer.u32(actors.size);
    for (const actor of actors) {
      writeActor(writer, actor);
      if (writer.length > bytesMax) {
        throw new ApiError('ResponseTooLargeError', `the actors of this funnel's steps stored on one node take more than ${bytesMax} `
          + 'bytes, more than a node sends another; narrow the steps\' timeframes or filters');
      }
    }
    writer.patchU32(lengthAt, writer.length - start);
  }
  writer.f64(eventsScanned());
  return finishState(writer);
}

function writeActor(writer: StateWriter, actor: Actor): void {
  if (typeof actor === 'string') {
    if (!LONE_SURROGATE.test(actor)) {
      writer.u8(ActorKind.utf8);
      writer.string(actor);
      return;
    }
    writer.u8(ActorKind.utf16);
    writer.u32(actor.length);
    for (let k = 0; k < actor.length; k++) writer.u16(actor.charCodeAt(k));
  } else if (typeof actor === 'number') {
    writer.u8(ActorKind.number);
    writer.f64(actor);
  } else {
    writer.u8(actor === null ? ActorKind.null : actor ? ActorKind.true : ActorKind.false);
  }
}

/** A decoded funnel step state: each step's actors, decoded when asked for (a PartialStateError if garbled). */
export interface FunnelSteps {
  readonly steps: ReadonlyMap<number, () => Set<Actor>>;
  readonly eventsScanned: number;
}

/** The state encodeFunnelSteps wrote; with `stepCount` (the plan's), its indexes are checked against it. */
export function decodeFunnelSteps(bytes: Uint8Array, stepCount?: number): FunnelSteps {
  const reader = readHeader(bytes, 'funnel');
  const count = reader.u32('the step count');
  reader.need(count * 8, `${count} steps`);
  const steps = new Map<number, () => Set<Actor>>();
  for (let s = 0; s < count; s++) {
    const index = reader.u32(`step ${s}'s index`);
    if (stepCount !== undefined && index >= stepCount) throw new PartialStateError(`step index ${index}, the funnel has ${stepCount} steps`);
    if (steps.has(index)) throw new PartialStateError(`step ${index} twice`);
    const length = reader.u32(`step ${index}'s length`);
    reader.need(length, `step ${index}'s actors`);
    const body = bytes.subarray(reader.offset, reader.offset + length);
    reader.skip(length, `step ${index}'s actors`);
    steps.set(index, () => readActors(body, index));
  }
  const eventsScanned = reader.f64('events scanned');
  if (reader.remaining !== 0) throw new PartialStateError(`${reader.remaining} bytes left over after the state`);
  return { steps, eventsScanned };
}

function readActors(body: Uint8Array, index: number): Set<Actor> {
  const reader = new StateReader(body);
  const what = `step ${index}`;
  const count = reader.u32(`${what}'s actor count`);
  reader.need(count, `${what}'s ${count} actors`); // each takes a byte at least: a garbled count fails here
  const actors = new Set<Actor>();
  for (let a = 0; a < count; a++) actors.add(readActor(reader, what));
  if (reader.remaining !== 0) throw new PartialStateError(`${reader.remaining} bytes left over after ${what}'s actors`);
  if (actors.size !== count) throw new PartialStateError(`${what} has ${count - actors.size} actors twice`);
  return actors;
}

function readActor(reader: StateReader, what: string): Actor {
  const at = reader.offset;
  const kind = reader.u8(`${what}'s actor kind`);
  switch (kind) {
    case ActorKind.utf8: {
      const length = reader.u32(`${what}'s actor's length`);
      const start = reader.offset;
      reader.skip(length, `${what}'s actor`);
      return utf8Actor(reader.bytes.subarray(start, start + length), `${what}'s actor at offset ${at}`);
    }
    case ActorKind.number: return reader.f64(`${what}'s actor`);
    case ActorKind.false: return false;
    case ActorKind.true: return true;
    case ActorKind.null: return null;
    case ActorKind.utf16: {
      const units = reader.u32(`${what}'s actor's length`);
      reader.need(units * 2, `${what}'s actor`);
      let text = '';
      for (let k = 0; k < units; k++) text += String.fromCharCode(reader.u16());
      return text;
    }
    default: throw new PartialStateError(`unknown actor kind ${kind} in ${what} at offset ${at}`);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A UTF-8 actor; bytes that are not UTF-8 are a PartialStateError. */
function utf8Actor(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new PartialStateError(`${what} is not UTF-8`);
  }
}
