/**
 * Deletes in cluster mode (docs/cluster.md, "Deletes"): a delete asked of any node is checked
 * there (engine.collections.planDeleteEvents/planDeleteProperty: the same 400s and 429s as a
 * single node, a relative timeframe resolved to absolute times) and produced to the events topic
 * with the collection's key, so it lands in the collection's partition, ordered with its events.
 * Every owner's consumer applies it where it reaches it (consumer.ts), to exactly the events that
 * precede it in the partition.
 *
 * A delete record is told from an event by its header `tally-op: delete`; its value is a JSON
 * array `["tally-delete", 1, <DeletePlan>]`, no JSON object, so a node that predates deletes
 * skips it as "no Tally event" rather than storing it as one. Records without the header are
 * events, as they always were.
 */
import type { KafkaMessage } from 'kafkajs';
import { ApiError, type DeletePlan } from '../../engine/index.js';
import type { LogMessage } from './producer.js';

const HEADER = 'tally-op';
const OP = 'delete';
const MARK = 'tally-delete';
const VERSION = 1;

/** The record of a delete of `collection`'s events, properties or itself. */
export function deleteMessage(key: string, plan: DeletePlan): LogMessage {
  return { key, value: JSON.stringify([MARK, VERSION, plan]), headers: { [HEADER]: OP } };
}

/** True for a record produced by deleteMessage (by its header). */
export function isDeleteRecord(message: KafkaMessage): boolean {
  const op = message.headers?.[HEADER];
  const value = Array.isArray(op) ? op[0] : op;
  return value !== undefined && value.toString() === OP;
}

/** The plan of a delete record, or null when its value is none (logged and skipped by the consumer). */
export function decodeDelete(message: KafkaMessage): DeletePlan | null {
  let value: unknown;
  try {
    value = message.value === null ? null : JSON.parse(message.value.toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 3 || value[0] !== MARK || value[1] !== VERSION) return null;
  return planOf(value[2]);
}

function planOf(value: unknown): DeletePlan | null {
  if (typeof value !== 'object' || value === null) return null;
  const plan = value as Record<string, unknown>;
  switch (plan.kind) {
    case 'collection':
      return { kind: 'collection' };
    case 'property':
      return typeof plan.property === 'string' && plan.property !== '' ? { kind: 'property', property: plan.property } : null;
    case 'rows':
      return typeof plan.startMs === 'number' && typeof plan.endMs === 'number' && Number.isFinite(plan.startMs)
        && Number.isFinite(plan.endMs) ? { kind: 'rows', startMs: plan.startMs, endMs: plan.endMs, filters: plan.filters ?? [] } : null;
    default:
      return null;
  }
}

/** The 503 of a delete Kafka did not take within the bound. */
export function deleteUnavailable(reason: string): ApiError {
  return new ApiError('ServiceUnavailableError',
    `Kafka did not acknowledge the delete (${reason}); it was not acknowledged (it may still be applied). Retry later.`);
}
