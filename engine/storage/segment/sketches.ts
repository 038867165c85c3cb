/**
 * One HyperLogLog per column of a segment, over the column's distinct values, and the value hash
 * that defines "distinct": numbers, strings, bools and lists hash with different seeds so 1, "1"
 * and true count apart; -0 is 0; a list counts as one value (its JSON text). Nulls and missing
 * rows are not values. count_unique must hash with `hashValue` to merge with these sketches.
 */
import { hashNumber, hashString } from '../../sketch/hash.js';
import { HyperLogLog } from '../../sketch/hyperloglog.js';
import {
  TAG_BOOL,
  TAG_LIST,
  TAG_NUM,
  TAG_STR,
  type Column,
  type ColumnChunk,
  type Primitive,
} from '../chunk.js';

const SEED_NUM = 0x5bd1e995;
const SEED_STR = 0x1b873593;
const SEED_BOOL = 0x27d4eb2f;
const SEED_LIST = 0x165667b1;

/** Hash of one stored value as the segment sketches count it; null for null (not counted). */
export function hashValue(value: Primitive | readonly Primitive[]): number | null {
  if (value === null) return null;
  if (typeof value === 'number') return hashNumber(value, SEED_NUM);
  if (typeof value === 'string') return hashString(value, SEED_STR);
  if (typeof value === 'boolean') return hashNumber(value ? 1 : 0, SEED_BOOL);
  return hashString(JSON.stringify(value), SEED_LIST);
}

/** Serialized sketches of every column of `chunk`, keyed by property path. */
export function computeSketches(chunk: ColumnChunk): Record<string, Uint8Array> {
  const sketches: Record<string, Uint8Array> = {};
  for (const [path, column] of chunk.columns) {
    sketches[path] = sketchColumn(column, chunk.rows).serialize();
  }
  return sketches;
}

export function sketchColumn(column: Column, rows: number): HyperLogLog {
  const sketch = new HyperLogLog();
  const { tags, num, str, dict, lists } = column;
  // Each dictionary entry is hashed once; rows then cost a table lookup.
  const dictHashes = dict === null ? null : new Uint32Array(dict.length);
  for (let code = 0; dictHashes !== null && code < dict!.length; code++) {
    dictHashes[code] = hashString(dict![code], SEED_STR);
  }
  for (let row = 0; row < rows; row++) {
    const tag = tags[row];
    if (tag === TAG_NUM) sketch.add(hashNumber(num![row], SEED_NUM));
    else if (tag === TAG_STR) sketch.add(dictHashes![str![row]]);
    else if (tag === TAG_BOOL) sketch.add(hashNumber(num![row] !== 0 ? 1 : 0, SEED_BOOL));
    else if (tag === TAG_LIST) sketch.add(hashString(JSON.stringify(lists![row]), SEED_LIST));
  }
  return sketch;
}
