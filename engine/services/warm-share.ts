/**
 * How much of each query cache warming may fill now (query/exec/pool.ts warm): all of it, except
 * while events arrive at a bulk load's rate, when the load's write buffers and the garbage of
 * its batches need the memory: then WARM_SHARE_LOADING (none), the rest once the load is over.
 */
import { WARM_LOAD_EVENTS_PER_S, WARM_SHARE_LOADING } from '../base/limits.js';

/** `accepted`: events accepted since start (WritePath.accepted); `now`: ms. */
export function warmShareByLoad(accepted: () => number, now: () => number = () => performance.now()): () => number {
  let lastMs = now();
  let lastAccepted = accepted();
  let loading = false;
  return () => {
    const ms = now();
    // The rate over the last second or more; a first call within a second keeps the last verdict.
    if (ms - lastMs >= 1_000) {
      const count = accepted();
      loading = ((count - lastAccepted) * 1_000) / (ms - lastMs) > WARM_LOAD_EVENTS_PER_S;
      lastMs = ms;
      lastAccepted = count;
    }
    return loading ? WARM_SHARE_LOADING : 1;
  };
}
