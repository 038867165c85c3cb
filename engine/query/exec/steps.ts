/**
 * A scan as steps: a generator that yields between segments, run either to its end at once
 * (runSteps) or letting its thread's event loop turn between two steps when asked (runStepsPaced).
 * A query worker paces its scans so that the native zstd decoder's output, which Node frees only
 * on a later turn of the event loop (storage/segment/arrow.ts), is freed as the scan goes: it can
 * then decode every column it keeps natively, 2-3x as fast as the WebAssembly decoder, with no
 * more memory (worker.ts).
 */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to its end without letting the event loop turn. */
export function runSteps<T>(steps: Steps<T>): T {
  let step = steps.next();
  // Bound: the job's own steps (one a segment read).
  while (step.done !== true) step = steps.next();
  return step.value;
}

/** Runs `steps` to its end, letting the event loop turn before a step whenever `mustTurn()`. */
export async function runStepsPaced<T>(steps: Steps<T>, mustTurn: () => boolean): Promise<T> {
  let step = steps.next();
  // Bound: the job's own steps (one a segment read).
  while (step.done !== true) {
    if (mustTurn()) await new Promise((resolve) => setImmediate(resolve));
    step = steps.next();
  }
  return step.value;
}
