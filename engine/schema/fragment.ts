/**
 * An add-on result kept once per distinct input and shared by every event that needs it: the value
 * (deeply frozen) and its flattened leaves. The write path appends the leaves under the output
 * name, so a cache hit costs no object copy and no flattening; a 1.6 KB enriched event made those
 * the write path's hottest code. `cloneJson` gives a mutable copy for events that need the value
 * inside the object.
 */
import { flattenObject, leafBytes, newLeaves, type Leaves, type PathJoiner } from './flatten.js';

export interface Fragment {
  readonly value: Readonly<Record<string, unknown>>;
  /** Dotted paths relative to the output, in flattenEvent's order. */
  readonly leafPaths: readonly string[];
  readonly leafValues: readonly unknown[];
  /** The output name `pathsUnder` was made for, and the leaf paths under it (the write path's). */
  under: string | null;
  pathsUnder: readonly string[];
  /** leafBytes of the leaves at their paths relative to the output (leavesBytes' measure). */
  readonly leafBytes: number;
  /** Which LeafEncoder call last put this result in its record's table, under which name, where. */
  stamp: number;
  stampName: string | null;
  stampIndex: number;
}

/**
 * The leaf paths of `fragment` under output `name`, made once per name (a result is nearly always
 * used under one name).
 */
export function pathsUnder(fragment: Fragment, name: string, joiner: Pick<PathJoiner, 'join'>): readonly string[] {
  if (fragment.under !== name) {
    fragment.pathsUnder = fragment.leafPaths.map((path) => joiner.join(name, path));
    fragment.under = name;
  }
  return fragment.pathsUnder;
}

/** leafBytes summed over the fragment's leaves under output `name` (each path is `name.path`). */
export function bytesUnder(fragment: Fragment, name: string): number {
  return fragment.leafBytes + fragment.leafPaths.length * (name.length + 1);
}

/**
 * Whether a leaf value is an add-on result standing for its leaves under the leaf's path (the
 * output name): the fast batch reader gives these to LeafEncoder, which keeps each result's leaves
 * once per record. Other leaf values are null, numbers, strings, booleans and arrays.
 */
export function isFragment(value: unknown): value is Fragment {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function makeFragment(value: Record<string, unknown>): Fragment {
  const leaves = newLeaves();
  flattenObject(value, leaves);
  let bytes = 0;
  for (let j = 0; j < leaves.count; j++) bytes += leafBytes(leaves.paths[j], leaves.values[j]);
  return {
    value: deepFreeze(value),
    leafPaths: leaves.paths,
    leafValues: leaves.values,
    under: null,
    pathsUnder: [],
    leafBytes: bytes,
    stamp: 0,
    stampName: null,
    stampIndex: -1,
  };
}

/** Add-on results that go after the event's own properties, as the last keys of its object. */
export interface Appended {
  readonly names: string[];
  readonly fragments: Fragment[];
  count: number;
}

export function newAppended(): Appended {
  return { names: [], fragments: [], count: 0 };
}

/** Appends the results' leaves after an event's own (flattenEvent's order), under their names. */
export function appendLeaves(appended: Appended, leaves: Leaves, joiner: Pick<PathJoiner, 'join'>): void {
  for (let i = 0; i < appended.count; i++) {
    const fragment = appended.fragments[i];
    const paths = pathsUnder(fragment, appended.names[i], joiner);
    const values = fragment.leafValues;
    let at = leaves.count;
    for (let j = 0; j < paths.length; j++, at++) {
      leaves.paths[at] = paths[j];
      leaves.values[at] = values[j];
    }
    leaves.count = at;
  }
}

/** A mutable deep copy of a JSON value (plain objects, arrays, primitives). */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  const copy: Record<string, unknown> = {};
  for (const key in value) copy[key] = cloneJson((value as Record<string, unknown>)[key]);
  return copy as T;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}
