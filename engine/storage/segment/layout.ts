/**
 * The column layout of a segment's Arrow file, shared by writer.ts and reader.ts. The file is a
 * standard Arrow IPC file (one record batch, ZSTD body compression; LZ4_FRAME before 2026-11-25,
 * still read); what this module adds
 * is the meaning of its fields, which every field states in its own metadata, so names never need
 * parsing (a property path may itself contain ':').
 *
 *   Segment  => svc.timestamp:Timestamp(ms) svc.created_at:Timestamp(ms) _seq:Float64
 *               Property*
 *   Property => Main Extra*              (one group per property path, main field first)
 *   Main     => <path>: the schema type's Arrow type, valid on rows of that type
 *   Extra    => <path>:num Float64 | <path>:str Dictionary<Int32,Utf8> | <path>:bool Bool
 *             | <path>:list_num List<Float64> | <path>:list_str List<Utf8>
 *             | <path>:list_bool List<Bool> | <path>:null Bool (true on explicit nulls)
 *   Codes    => <path>:codes FixedSizeList<Bool>(bits), right after a main field whose codes it
 *               holds (tally.codes = bitpacked on the main field; below)
 *
 * An extra exists only when some row of the chunk holds a value the main field cannot. A row is
 * valid in at most one field of its path; valid in none means the path is missing on that row.
 * Field metadata: tally.path (property path), tally.role (a Role), tally.type (main only: the
 * schema type). Schema metadata: tally.version and tally.footer (footer.ts, without sketches).
 *
 * Compact encodings, each stated in the field's metadata so a plain Arrow reader can undo it:
 * - dictionary codes take the narrowest width the dictionary allows (Int8, Int16, Int32);
 * - a dictionary of 256 entries or more is stored sorted (by its values' first 16 UTF-8 bytes, ties
 *   in first-seen order), and when that is smaller its values are
 *   FixedSizeBinary of the longest value's width, each value's UTF-8 padded with zero bytes
 *   (tally.encoding = padded on the field; values never hold a zero byte then, so a reader drops
 *   the zeros at each value's end);
 * - (layout 3) a main string field's codes are bit-packed when that is no larger than their ZSTD
 *   frame (bitpack.ts): the main field (tally.codes = bitpacked) keeps its type and dictionary but
 *   no row is valid in it; the field right after it, `<path>:codes` (tally.role = codes,
 *   tally.bits = b, no tally.path), is a FixedSizeList<Bool>(b) valid on the main field's rows,
 *   whose row i holds the bits of that row's code, least significant first, stored uncompressed;
 * - a padded dictionary of more than two frames' entries (2026-11-29; earlier files have none,
 *   and are read the same) is compressed as consecutive ZSTD frames of DICTIONARY_BLOCK_ENTRIES
 *   entries each, in its one buffer (any ZSTD decoder reads it whole), and tally.blocks on the
 *   field names each frame's compressed size and first entry (dict-blocks.ts), so a lookup of one
 *   value decodes the frame that may hold it;
 * - a number field whose values are all exact multiples of 10^-s in a narrow integer range is
 *   stored as Int8/Int16/Int32 of value × 10^s, with tally.scale = s;
 * - svc.timestamp, svc.created_at and _seq are stored as Int8/Int16/Int32 (the narrowest that fits) differences from the previous row
 *   (tally.encoding = delta, tally.base = the first row's value) when every difference fits,
 *   else as Timestamp(ms) / Float64.
 */
import type { SchemaType } from '../chunk.js';

export const LAYOUT_VERSION = '3';
/**
 * Layouts the reader still reads. Version 1 also stored each event's JSON in `_raw` (ignored now):
 * its columns answer every query; events rebuilt from them lack svc.addons and empty objects, and
 * get svc.id from their log offset. Version 2 has no bit-packed codes (it is read as it is: every
 * field of a version 2 file reads the same under version 3). Compaction rewrites both as version 3.
 */
export const READABLE_LAYOUT_VERSIONS: readonly string[] = ['1', '2', LAYOUT_VERSION];

export const META_SCALE = 'tally.scale';
export const META_ENCODING = 'tally.encoding';
export const META_BASE = 'tally.base';
export const ENCODING_DELTA = 'delta';
export const ENCODING_PADDED = 'padded';
/** On a main field whose codes are in the `:codes` field after it. */
export const META_CODES = 'tally.codes';
export const CODES_BITPACKED = 'bitpacked';
/** On a main or `:str` field whose padded dictionary is blocked (dict-blocks.ts). */
export const META_BLOCKS = 'tally.blocks';
/** On a `:codes` field: the bits of each code. */
export const META_BITS = 'tally.bits';

/** The sidecar of segment `file` is `file + SIDECAR_SUFFIX` (footer.ts has its format). */
export const SIDECAR_SUFFIX = '.meta';

export const META_PATH = 'tally.path';
export const META_ROLE = 'tally.role';
export const META_TYPE = 'tally.type';
export const META_VERSION = 'tally.version';
export const META_FOOTER = 'tally.footer';

export const FIELD_TS = 'svc.timestamp';
export const FIELD_CREATED_AT = 'svc.created_at';
export const FIELD_SEQ = '_seq';

/** What a field holds. `main` holds the schema type; the others hold one value kind each. */
export type Role =
  | 'ts'
  | 'created_at'
  | 'seq'
  | 'main'
  | 'num'
  | 'str'
  | 'bool'
  | 'list_num'
  | 'list_str'
  | 'list_bool'
  | 'null'
  | 'codes';

/** Element kind of a list row: that of its non-null elements, or `none` if it has none. */
export type ListKind = 'num' | 'str' | 'bool' | 'none';

/** The Arrow representation of a path's main field, from its schema type. */
export type MainKind = 'num' | 'datetime' | 'str' | 'bool' | 'list' | 'null';

export function mainKindOf(type: SchemaType): MainKind {
  switch (type) {
    case 'num':
      return 'num';
    case 'datetime':
      return 'datetime';
    case 'string':
      return 'str';
    case 'bool':
      return 'bool';
    case 'list':
    case 'geo':
      return 'list';
    case 'null':
      return 'null';
  }
}

/** Field name of an extra: path plus role, readable by plain Arrow tools. */
export function extraName(path: string, role: Role): string {
  return `${path}:${role}`;
}
