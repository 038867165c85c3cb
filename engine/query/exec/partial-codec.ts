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
 * Anything else is refused with a PartialStateError naming what is wrong: another magic or
 * version, an unknown tag, a short or long buffer, a state that does not fit the plan. A change
 * to any encode() needs a new VERSION here and a decoder for the old one, or a deliberate break
 * the golden states of test/fixtures/partial-state will report.
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
import { PartialStateError, StateReader, StateWriter } from '../eval/state-io.js';

export { PartialStateError } from '../eval/state-io.js';

export const MAGIC = 'TPS1';
export const VERSION = 1;
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
  const writer = new StateWriter();
  for (const byte of MAGIC_BYTES) writer.u8(byte);
  writer.u16(VERSION);
  writer.u16(0);
  writer.f64(0); // byteLength, set below
  writer.f64(eventsScanned);
  writer.u32(outcome.bucketCount);
  writer.u32(outcome.aggregators.length);
  const rowsAt = outcome.aggregators.indexOf(outcome.rowsPerCell);
  writer.i32(rowsAt);
  writer.bool(outcome.groups !== null);
  outcome.groups?.encode(writer);
  for (const aggregator of outcome.aggregators) writeAggregate(writer, aggregator);
  if (rowsAt === -1) writeAggregate(writer, outcome.rowsPerCell);
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
  const reader = new StateReader(bytes);
  reader.need(4, 'the magic');
  for (let k = 0; k < 4; k++) {
    if (bytes[k] !== MAGIC_BYTES[k]) {
      const found = Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
      throw new PartialStateError(`not a partial state: magic is ${found}, not "${MAGIC}"`);
    }
  }
  reader.u8();
  reader.u8();
  reader.u8();
  reader.u8();
  const version = reader.u16('the format version');
  if (version !== VERSION) {
    throw new PartialStateError(`format version ${version} is not supported (this build reads version ${VERSION})`);
  }
  if (reader.u16('the reserved field') !== 0) throw new PartialStateError('the reserved header field is not 0');
  const declared = reader.f64('the byte length');
  if (declared !== bytes.length) {
    throw new PartialStateError(declared > bytes.length
      ? `truncated: the header says ${declared} bytes, only ${bytes.length} arrived`
      : `the header says ${declared} bytes, but ${bytes.length} arrived`);
  }
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
