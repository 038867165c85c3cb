/**
 * svc.id values: 24 lowercase hex characters (docs/api.md §4). An event's id is a function of its
 * collection and its log offset (seq): 8 hex of the collection's key, then 16 hex of a keyed
 * 64-bit permutation (a 4-round Feistel network) of the seq. It is unique within a collection
 * (a permutation of unique offsets), looks random, and costs no bytes on disk: extraction and the
 * outbound stream rebuild it from the seq every row already has.
 */

/** FNV-1a of a string, 32 bits. */
function fnv1a(text: string, seed: number): number {
  let hash = 0x811c9dc5 ^ seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The key of a collection's ids: stable for the life of the collection, from its names. */
export function collectionIdKey(project: string, collection: string): number {
  return fnv1a(`${project}\u0000${collection}`, 0);
}

function round(half: number, key: number, index: number): number {
  let x = (half ^ key ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function hex32(value: number): string {
  return HEX[value >>> 24] + HEX[(value >>> 16) & 255] + HEX[(value >>> 8) & 255] + HEX[value & 255];
}

/** svc.id of the event at log offset `seq` of the collection whose key is `key`. */
export function eventId(key: number, seq: number): string {
  let left = Math.floor(seq / 0x1_0000_0000) >>> 0;
  let right = seq >>> 0;
  for (let index = 0; index < 4; index++) {
    const next = (left ^ round(right, key, index)) >>> 0;
    left = right;
    right = next;
  }
  return hex32(key) + hex32(left) + hex32(right);
}
