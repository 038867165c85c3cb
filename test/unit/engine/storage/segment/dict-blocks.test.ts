/**
 * Blocked dictionaries (storage/segment/dict-blocks.ts): a segment's dictionary of ids is stored
 * as ZSTD frames of DICTIONARY_BLOCK_ENTRIES entries, read whole by both readers as before, and
 * looked up one frame at a time: segmentLacks agrees with the rows for values present, absent,
 * between frames, at their edges, longer than the entries, and for ids sharing their first 16
 * bytes (the sort key) across frames. Real segment files in a temporary directory.
 */
import t from 'tap';
import { DICTIONARY_BLOCK_ENTRIES } from '../../../../../engine/base/limits.js';
import { IpcFile } from '../../../../../engine/storage/segment/ipc-read.js';
import { META_BLOCKS, META_PATH } from '../../../../../engine/storage/segment/layout.js';
import { blockedPaths, readSegment, readSegmentArrow, segmentLacks } from '../../../../../engine/storage/segment/reader.js';
import { writeDaySegments } from '../../../../helpers/query/segments.js';
import type { Value } from '../../../../helpers/query/test-support.js';
import { valueAt } from '../../../../helpers/test-chunk.js';
import type { ColumnChunk } from '../../../../../engine/storage/chunk.js';

const ROWS = 3 * DICTIONARY_BLOCK_ENTRIES + 1234;

/** Row i of segment s: a distinct id, a wide id sharing its first 20 bytes, a device, a path mixing strings and lists. */
function props(s: number, i: number): Record<string, Value> {
  const row: Record<string, Value> = {
    id: `u${s}-${(i * 7919) % ROWS}`,
    wide: `${'x'.repeat(20)}${s}-${i}`,
    device: ['mobile', 'desktop', 'tablet'][i % 3]!,
    mixed: i % 5 === 0 ? ['a', `m${i}`] : `m${s}-${i}`,
  };
  if (i % 97 === 0) row.id = null;
  if (i % 89 === 0) delete row.wide;
  return row;
}

function rowValues(chunk: ColumnChunk, path: string): unknown[] {
  const column = chunk.columns.get(path)!;
  return Array.from({ length: chunk.rows }, (_, i) => valueAt(column, i));
}

/** The META_BLOCKS of the field of `path` that has one (the main field, or `:str` when a null came first). */
function blocksOf(file: string, path: string): string | undefined {
  const ipc = IpcFile.open(file)!;
  try {
    return ipc.fields.find((f) => f.metadata.get(META_PATH) === path && f.metadata.has(META_BLOCKS))?.metadata.get(META_BLOCKS);
  } finally {
    ipc.close();
  }
}

t.test('ids are stored in frames, read whole as before, and looked up a frame at a time', async (t) => {
  const refs = writeDaySegments(t, 2, ROWS, props);
  const [first] = refs;
  t.ok(blocksOf(first!.file, 'id')?.startsWith(`${DICTIONARY_BLOCK_ENTRIES};`), 'the id dictionary is blocked (row 0 is null: its strings are in id:str)');
  t.ok(blocksOf(first!.file, 'wide')?.startsWith(`${DICTIONARY_BLOCK_ENTRIES};`), 'the wide ids too (in the main field)');
  t.equal(blocksOf(first!.file, 'device'), undefined, 'a small dictionary is not');
  t.same(blockedPaths(first!.file).sort(), ['id', 'wide'], 'the paths segmentLacks answers for: not a small dictionary, not one mixing lists');

  for (const [s, ref] of refs.entries()) {
    const expected = Array.from({ length: ROWS }, (_, i) => props(s, i));
    for (const read of [readSegment, readSegmentArrow]) {
      const chunk = read(ref.file, ['id', 'wide']);
      const ids = rowValues(chunk, 'id');
      const wide = rowValues(chunk, 'wide');
      t.ok(expected.every((row, i) => ids[i] === row.id && wide[i] === row.wide), `segment ${s}, ${read.name}: every row reads back`);
    }
  }

  const ids = (s: number) => new Set(Array.from({ length: ROWS }, (_, i) => props(s, i).id).filter((v): v is string => typeof v === 'string'));
  const held = [ids(0), ids(1)];
  const probes = [
    ...[...held[0]!].sort().filter((_, k) => k % 401 === 0 || k % DICTIONARY_BLOCK_ENTRIES === 0 || k % DICTIONARY_BLOCK_ENTRIES === DICTIONARY_BLOCK_ENTRIES - 1),
    ...[...held[1]!].slice(0, 50),
    'u0-', 'u0', 'u', '', 'u0-99999999', 'u1-0x', 'a', 'zzz', 'u0-1\u00e9', 'u0-12345678901234567890',
  ];
  for (const [s, ref] of refs.entries()) {
    let disagree = 0;
    for (const value of probes) if (segmentLacks(ref.file, 'id', [value]) !== !held[s]!.has(value)) disagree++;
    t.equal(disagree, 0, `segment ${s}: segmentLacks agrees with the rows on ${probes.length} single values`);
    t.equal(segmentLacks(ref.file, 'id', ['nope', 'u9-1', `u${s}-5`]), false, `segment ${s}: an in filter with one value held`);
    t.equal(segmentLacks(ref.file, 'id', ['nope', 'u9-1']), true, `segment ${s}: an in filter with none held`);
    t.equal(segmentLacks(ref.file, 'device', ['phone']), false, 'a path without a blocked dictionary: cannot tell');
    t.equal(segmentLacks(ref.file, 'mixed', ['zzz']), false, 'a path with lists: cannot tell');
  }

  // Every wide id has the same first 16 bytes, the dictionary's sort key: any frame may hold one.
  let disagree = 0;
  for (const i of [0, 1, 88, 89, 90, 4095, 4096, 8191, 8192, ROWS - 1, ROWS, ROWS + 5]) {
    const value = `${'x'.repeat(20)}0-${i}`;
    const has = i < ROWS && i % 89 !== 0;
    if (segmentLacks(first!.file, 'wide', [value]) !== !has) disagree++;
  }
  t.equal(disagree, 0, 'ids sharing their sort key across frames are found in whichever frame holds them');
});
