/**
 * A topic another node has just created is not served by every broker at once: for a moment a
 * broker answers "This server does not host this topic-partition" (UNKNOWN_TOPIC_OR_PARTITION) or
 * has no leader for it yet, and kafkajs's subscribe, metadata and offset calls throw. Start-up
 * asks again until it is served; its own bound (withTimeout in index.ts) ends the wait.
 */
import { CLUSTER_NOT_SERVED_RETRY_MS } from '../common/limits.js';

const NOT_SERVED = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_OR_FOLLOWER']);

/** True when `error` (or an error it wraps) says Kafka will serve the topic shortly. */
export function notServedYet(error: unknown): boolean {
  for (let e = error as { type?: unknown; retriable?: unknown; name?: unknown; originalError?: unknown; cause?: unknown } | null | undefined, depth = 0;
    e !== null && e !== undefined && typeof e === 'object' && depth < 5; e = (e.originalError ?? e.cause) as typeof e, depth++) {
    if (typeof e.type === 'string' && NOT_SERVED.has(e.type)) return true;
    if (e.name === 'KafkaJSTopicMetadataNotLoaded') return true;
  }
  return false;
}

/** `work()`, asked again while it fails with notServedYet and `stopped()` is false. */
export async function untilServed<T>(work: () => Promise<T>, stopped: () => boolean = () => false): Promise<T> {
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (stopped() || !notServedYet(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, CLUSTER_NOT_SERVED_RETRY_MS));
    }
  }
}
