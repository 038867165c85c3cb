/**
 * Blocked dictionaries (layout.ts META_BLOCKS): a sorted, padded dictionary of ids is compressed
 * as consecutive ZSTD frames of DICTIONARY_BLOCK_ENTRIES entries each, in the one buffer Arrow
 * holds it in (a ZSTD decoder reads concatenated frames as their concatenated content, so the file
 * stays plain Arrow and every reader decodes it whole as before), and the field's metadata names
 * each frame's compressed size and first entry. A filter for one id then decodes the frame or two
 * whose range holds it, not the whole dictionary (~2 MB a segment of ids at 100M events), and a
 * segment without the id is skipped unread (query/exec/scan.ts).
 *
 *   tally.blocks = <entries a frame> ";" <size>("," <size>)* ";" <base64 of each frame's first entry, padded>
 *
 * The dictionary is ordered by its entries' first SORT_PREFIX_BYTES bytes (a zero pad byte before
 * any other byte, ties in first-seen order), so an entry whose prefix is P lies in a frame whose
 * first entry's prefix is at most P and whose successor's is at least P.
 */
import { DICTIONARY_BLOCK_ENTRIES } from '../../base/limits.js';
import { presetCompression, zstdCompress } from './arrow.js';
import { SORT_PREFIX_BYTES } from './arrow-data.js';

/** A blocked dictionary's frames: their entries, compressed sizes and first entries (width bytes each). */
export interface DictBlocks {
  readonly entries: number;
  readonly sizes: readonly number[];
  readonly firsts: Uint8Array;
}

/**
 * For the writer: presets the compression of `padded` (`count` entries of `width` bytes, sorted)
 * as frames of DICTIONARY_BLOCK_ENTRIES entries and returns the field's META_BLOCKS value, or
 * null when the dictionary is too small to be worth blocking (two frames or fewer).
 */
export function blockDictionary(padded: Uint8Array, width: number, count: number): string | null {
  const per = DICTIONARY_BLOCK_ENTRIES;
  if (count <= 2 * per || width <= 0) return null;
  const frames: Uint8Array[] = [];
  const firsts = new Uint8Array(Math.ceil(count / per) * width);
  for (let first = 0, block = 0; first < count; first += per, block++) {
    const end = Math.min(count, first + per);
    frames.push(zstdCompress(padded.subarray(first * width, end * width)));
    firsts.set(padded.subarray(first * width, (first + 1) * width), block * width);
  }
  const joined = Buffer.concat(frames);
  presetCompression(padded, joined);
  return `${per};${frames.map((f) => f.byteLength).join(',')};${Buffer.from(firsts).toString('base64')}`;
}

/** The frames META_BLOCKS `value` names for a dictionary of `count` entries of `width` bytes; null when malformed. */
export function parseBlocks(value: string, width: number, count: number): DictBlocks | null {
  const [perText, sizesText, firstsText] = value.split(';');
  const entries = Number(perText);
  if (!Number.isInteger(entries) || entries <= 0 || sizesText === undefined || firstsText === undefined) return null;
  const sizes = sizesText.split(',').map(Number);
  const firsts = new Uint8Array(Buffer.from(firstsText, 'base64'));
  if (sizes.length !== Math.ceil(count / entries) || sizes.some((s) => !Number.isInteger(s) || s <= 0)) return null;
  if (firsts.byteLength !== sizes.length * width) return null;
  return { entries, sizes, firsts };
}

/**
 * The frames that may hold `key` (its UTF-8 padded with zeros to `width`): those whose first
 * entry's prefix is at most the key's and whose successor's is at least it.
 */
export function candidateBlocks(blocks: DictBlocks, key: Uint8Array, width: number): number[] {
  const prefix = Math.min(SORT_PREFIX_BYTES, width);
  const out: number[] = [];
  const count = blocks.sizes.length;
  for (let block = 0; block < count; block++) {
    if (comparePrefix(blocks.firsts, block * width, key, prefix) > 0) break;
    if (block + 1 < count && comparePrefix(blocks.firsts, (block + 1) * width, key, prefix) < 0) continue;
    out.push(block);
  }
  return out;
}

/** Sign of entry-at-`at`'s first `prefix` bytes against `key`'s (which is padded as entries are). */
function comparePrefix(bytes: Uint8Array, at: number, key: Uint8Array, prefix: number): number {
  for (let i = 0; i < prefix; i++) {
    const d = bytes[at + i] - key[i];
    if (d !== 0) return d;
  }
  return 0;
}

/** True when one of the `count` padded entries of `width` bytes in `block` equals `key` (padded). */
export function blockHolds(block: Uint8Array, width: number, count: number, key: Uint8Array): boolean {
  outer: for (let entry = 0, at = 0; entry < count; entry++, at += width) {
    for (let i = 0; i < width; i++) if (block[at + i] !== key[i]) continue outer;
    return true;
  }
  return false;
}
