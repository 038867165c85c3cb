/**
 * Whether cache warming may run now (query/exec/pool.ts warm): not while events arrive at a bulk
 * load's rate, when the load's write buffers and the garbage of its batches need the memory.
 */
import { WARM_LOAD_EVENTS_PER_S } from '../base/limits.js';

/** `accepted`: events accepted since start (WritePath.accepted); `now`: ms. */
export function notLoading(accepted: () => number, now: () => number = () => performance.now()): () => boolean {
  let lastMs = now();
  let lastAccepted = accepted();
  let loading = false;
  return () => {
    const ms = now();
    // The rate over the last second or more; a call within a second keeps the last verdict.
    if (ms - lastMs >= 1_000) {
      const count = accepted();
      loading = ((count - lastAccepted) * 1_000) / (ms - lastMs) > WARM_LOAD_EVENTS_PER_S;
      lastMs = ms;
      lastAccepted = count;
    }
    return !loading;
  };
}
