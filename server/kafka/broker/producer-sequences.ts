/**
 * Duplicate detection for idempotent producers (KIP-98, minimal): per producer id, epoch and
 * topic, the last few appended batches by sequence. A retried batch that matches one is answered
 * with its original base offset and not stored again. Anything else is accepted: after a restart
 * the cache is empty, and refusing unknown sequences (error 45) would be fatal to librdkafka.
 */
import { limits } from '../../../engine/index.js';

const { PRODUCER_BATCHES_KEPT, PRODUCERS_TRACKED_MAX } = limits;

interface SeenBatch { baseSequence: number; count: number; baseOffset: number }

export class ProducerSequences {
  private readonly seen = new Map<string, SeenBatch[]>();

  private static key(projectId: string, topic: string, producerId: number, epoch: number): string {
    return `${projectId}\u0000${topic}\u0000${producerId}\u0000${epoch}`;
  }

  /** The base offset of an identical batch appended before, or undefined. */
  duplicateOf(projectId: string, topic: string, producerId: number, epoch: number,
    baseSequence: number, count: number): number | undefined {
    if (producerId < 0) return undefined;
    const batches = this.seen.get(ProducerSequences.key(projectId, topic, producerId, epoch));
    return batches?.find((b) => b.baseSequence === baseSequence && b.count === count)?.baseOffset;
  }

  record(projectId: string, topic: string, producerId: number, epoch: number,
    baseSequence: number, count: number, baseOffset: number): void {
    if (producerId < 0) return;
    const key = ProducerSequences.key(projectId, topic, producerId, epoch);
    const batches = this.seen.get(key) ?? [];
    batches.push({ baseSequence, count, baseOffset });
    if (batches.length > PRODUCER_BATCHES_KEPT) batches.shift();
    // Re-insert so the map's order is least recently used first; evict beyond the bound.
    this.seen.delete(key);
    this.seen.set(key, batches);
    if (this.seen.size > PRODUCERS_TRACKED_MAX) this.seen.delete(this.seen.keys().next().value!);
  }
}
