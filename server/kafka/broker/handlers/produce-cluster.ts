/**
 * Produce on the inbound listener of a cluster node (docs/cluster.md "Kafka produce into a
 * node"): a partition's events go through the cluster write path (checked, stamped, produced to
 * the real events topic with acks = all) instead of the engine's append, and the answer waits for
 * Kafka's acknowledgement.
 *
 * Idempotent batches are not in this node's WAL, so a crash between Kafka's acknowledgement and
 * the producer state file's fsync would leave a retry unrecognised here. Each event of an
 * idempotent batch therefore carries a uniqueness token derived from the batch's identity (this
 * node, the producer id, epoch, base sequence and record count, and the record's index), unless the
 * client gave one: a retry, after a restart too, is the same batch with the same tokens, and the
 * nodes that store the collection drop the repeats (docs/api.md: per collection, 31 days).
 */
import { createHash } from 'node:crypto';
import { limits } from '../../../../engine/index.js';
import type { AppendResult, EventToWrite, WriteContext } from '../../../../engine/index.js';
import type { ClusterWrite } from '../context.js';

/** The idempotence fields of a partition's first record batch (producerId -1: not idempotent). */
export interface BatchIdentity { producerId: number; epoch: number; baseSequence: number }

/**
 * The uniqueness token of record `index` of an idempotent batch of `count` records:
 * `kafka:<node>:<producer id>:<epoch>:<base sequence>:<count>:<index>`, or a hash of that when it
 * would be longer than a token may be (ids near 2^63).
 */
export function producerToken(nodeId: number, batch: BatchIdentity, count: number, index: number): string {
  const token = `kafka:${nodeId}:${batch.producerId}:${batch.epoch}:${batch.baseSequence}:${count}:${index}`;
  if (token.length <= limits.UNIQUENESS_TOKEN_CHARS_MAX) return token;
  return `kafka:${createHash('sha256').update(token).digest('base64url').slice(0, limits.UNIQUENESS_TOKEN_CHARS_MAX - 6)}`;
}

/**
 * Gives each event of an idempotent batch its token (in place) when its `svc` has none. An event
 * whose `svc` is not an object is left as it is: the checks refuse it as on a single node.
 */
function addTokens(nodeId: number, batch: BatchIdentity, events: readonly EventToWrite[]): void {
  if (batch.producerId < 0) return;
  events.forEach(({ event }, index) => {
    if (event === null || typeof event !== 'object' || Array.isArray(event)) return;
    const fields = event as Record<string, unknown>;
    const svc = fields['svc'];
    if (svc === undefined) fields['svc'] = { uniqueness_token: producerToken(nodeId, batch, events.length, index) };
    else if (svc !== null && typeof svc === 'object' && !Array.isArray(svc)) {
      const own = svc as Record<string, unknown>;
      if (own['uniqueness_token'] === undefined) own['uniqueness_token'] = producerToken(nodeId, batch, events.length, index);
    }
  });
}

/**
 * One partition's events through the cluster write path, all or none (one refused event refuses
 * the batch, nothing produced); resolves once Kafka acknowledged them. The store's log offsets
 * are not known here: every result's offset is -1.
 */
export function produceToCluster(
  cluster: ClusterWrite, projectId: string, ctx: WriteContext, batch: BatchIdentity, events: readonly EventToWrite[],
): Promise<AppendResult[]> {
  addTokens(cluster.nodeId, batch, events);
  return cluster.write(projectId, events, ctx, { atomic: true });
}
