/**
 * An event's `svc.addons` as the fast batch reader (fast-batch.ts) runs it: each add-on's inputs
 * as leaf paths of the event and its output as a new top-level name, so the reader looks its inputs
 * up among the leaves it has just read and appends the cached result's leaves after them, as the
 * general path's Appended does (enrich/pipeline.ts). A list is planned once from its text; events
 * of a batch send the same list again and again.
 *
 * Only the common shape is planned. Anything else gives no plan, and the event's body goes the
 * general way, which has every error message and rarity: an unknown add-on, an input in `svc`
 * other than `svc.timestamp`, `remove_ip_property`, a nested or repeated output, a placeholder,
 * text that JSON.stringify would not give back as it is.
 */
import type { Enricher } from '../enrich/pipeline.js';
import { appendableName } from '../enrich/pipeline.js';
import { isObject, parsePath } from '../enrich/path.js';
import { ADDONS_PER_EVENT_MAX } from '../base/limits.js';

/** An input that reads the event's svc.timestamp text (the receipt time when it has none). */
export const TIMESTAMP_INPUT = 'svc.timestamp';

export interface AddonStep {
  readonly name: string;
  /** Leaf paths of the event, or TIMESTAMP_INPUT, in the add-on's inputKeys order. */
  readonly inputs: readonly string[];
  /** A top-level name. */
  readonly output: string;
  /** The reader's scratch: the input values of the event at hand, and where each input was last found. */
  readonly values: unknown[];
  readonly offsets: Int32Array;
}

export interface AddonPlan {
  /** The list's text as sent. */
  readonly text: string;
  readonly steps: readonly AddonStep[];
}

/** The plan for an `svc.addons` list sent as `text`, or null: the general path must read it. */
export function planAddons(text: string, enricher: Pick<Enricher, 'inputKeys'>): AddonPlan | null {
  if (text.includes('${')) return null; // placeholders are replaced first (prepare.ts)
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    return null;
  }
  // The stored leaf is the list's JSON.stringify text: the reader stores the bytes as they came.
  if (!Array.isArray(list) || list.length > ADDONS_PER_EVENT_MAX || JSON.stringify(list) !== text) return null;
  const steps: AddonStep[] = [];
  const outputs = new Set<string>();
  for (const entry of list) {
    if (!isObject(entry) || typeof entry.name !== 'string' || !isObject(entry.input)) return null;
    const keys = enricher.inputKeys(entry.name);
    if (keys === undefined || entry.input.remove_ip_property !== undefined) return null;
    const inputs: string[] = [];
    for (const key of keys) {
      const segments = parsePath(entry.input[key]);
      if (segments === null) return null;
      const path = segments.join('.');
      if (segments[0] === 'svc' && path !== TIMESTAMP_INPUT) return null;
      inputs.push(path);
    }
    const output = parsePath(entry.output);
    if (output === null || output.length !== 1) return null;
    const name = output[0];
    if (name === 'svc' || !appendableName(name) || outputs.has(name)) return null;
    // An input that reads an earlier output goes the general way: the event's own leaves lack it.
    if (inputs.some((input) => outputs.has(input.split('.')[0]))) return null;
    outputs.add(name);
    steps.push({ name: entry.name, inputs, output: name, values: new Array<unknown>(inputs.length), offsets: new Int32Array(inputs.length) });
  }
  return { text, steps };
}
