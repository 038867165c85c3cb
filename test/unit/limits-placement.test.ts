/**
 * Bounds live in two files: the engine's in engine/base/limits.ts, the server's and Kafka's in
 * server/common/limits.ts. This scans every TypeScript source of engine/ and server/ for a top-level
 * constant named like a bound (a word of its name after the first is MAX, MIN, MS, BYTES, ROWS, ...)
 * and set to a number, anywhere else, and fails naming the file and line. ALLOWED lists what stays
 * where it is, each with why: format constants (a layout, a wire format or a codec's own numbers,
 * which a limit file must not let anyone "tune"), numbers private to one algorithm that bound
 * nothing an operator sees.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

/** The repository (this file runs as dist/test/unit/limits-placement.test.js). */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const LIMIT_FILES = new Set(['engine/base/limits.ts', 'server/common/limits.ts']);

/** Words that make a constant's name a bound's, after its first word (MIN_MAGNITUDE is not one). */
const BOUND_WORDS = new Set([
  'MAX', 'MIN', 'MS', 'BYTES', 'ROWS', 'RECORDS', 'EVENTS', 'ENTRIES', 'CELLS', 'CHARS', 'KEPT',
  'LIMIT', 'TIMEOUT', 'INTERVAL', 'DEADLINE', 'ATTEMPTS', 'RETRIES', 'DEFAULT', 'MB',
]);
/** `const NAME = <number>` at the top level (column 0), with or without `export` or `: number`. */
const DECLARATION = /^(?:export\s+)?const\s+([A-Z][A-Z0-9_]*)\s*(?::\s*number\s*)?=\s*[-(]*\s*\d/;

interface Allowed { readonly file: string; readonly names: readonly string[]; readonly why: string }

const ALLOWED: readonly Allowed[] = [
  // Format constants: sizes a file layout, a wire format or a codec defines.
  { file: 'engine/wal/record.ts', names: ['RECORD_HEADER_BYTES'], why: 'WAL record header layout' },
  { file: 'engine/write/wal-payload.ts', names: ['EVENT_FIXED_BYTES'], why: 'WAL event layout: three u32, three f64, one i32' },
  { file: 'engine/storage/segment/bitpack.ts', names: ['PACKED_BITS_MAX'], why: 'segment layout 3: the widest packed code (Int32 codes are signed)' },
  { file: 'engine/sketch/hyperloglog.ts', names: ['HEADER_BYTES', 'SPARSE_ENTRY_BYTES'], why: 'serialized sketch layout' },
  { file: 'engine/storage/segment/footer.ts', names: ['SIDECAR_HEADER_BYTES'], why: 'sidecar file header layout' },
  { file: 'engine/storage/segment/projection.ts', names: ['LENGTH_PREFIX_BYTES'], why: 'Arrow IPC: a compressed buffer starts with its int64 length' },
  { file: 'engine/storage/partition.ts', names: ['PARTITION_SPAN_MS'], why: 'data directory layout: one partition per UTC day' },
  { file: 'engine/storage/segment/arrow.ts', names: ['BLOCK_CONTENT_MAX'], why: 'zstd format: a block holds at most 128 KiB' },
  { file: 'server/kafka/protocol/zstd.ts', names: ['ZSTD_BLOCK_MAX'], why: 'zstd format: a block holds at most 128 KiB' },
  { file: 'server/kafka/protocol/zstd.ts', names: ['LL_CODE_MAX', 'ML_CODE_MAX', 'OF_CODE_MAX', 'LL_LOG_MAX', 'ML_LOG_MAX', 'OF_LOG_MAX'], why: 'zstd format (RFC 8878 §3.1.1.3.2): the largest literal-length, match-length and offset codes and their FSE table logs' },
  { file: 'engine/storage/segment/lz4-frame.ts', names: ['EXPANSION_MAX'], why: 'LZ4 format: output is at most 255x its input' },
  { file: 'server/kafka/protocol/record-batch.ts', names: ['HEADER_BYTES'], why: 'Kafka RecordBatch header layout' },
  { file: 'engine/query/eval/group-by.ts', names: ['VALUE_IDS_MAX'], why: 'key packing: id * 2^26 + value stays an exact double' },
  { file: 'engine/ingest/fast-batch.ts', names: ['LONG_LITERAL_CHARS'], why: 'number syntax: digits past which a literal may leave the int64 range' },
  // Private to one algorithm: initial sizes, crossovers between two correct paths, encoding choices.
  { file: 'engine/query/eval/hash-table.ts', names: ['PENDING_MAX', 'PENDING_MIN', 'SMALL_KEYS_MAX'], why: 'sizing of the hash sets\' sort buffer and their small-set crossover' },
  { file: 'engine/query/eval/state-io.ts', names: ['CHUNK_BYTES', 'INLINE_ARRAY_BYTES'], why: 'allocation unit and copy-or-reference crossover of the partial-state codec' },
  { file: 'engine/query/aggregate/numeric.ts', names: ['EXACT_INTEGER_ROWS'], why: 'arithmetic: up to 2^22 integers below 2^31 sum exactly in doubles in any order' },
  { file: 'engine/storage/cell-sums.ts', names: ['LANED_CELLS_MAX'], why: 'crossover to the laned sum tables (speed only)' },
  { file: 'engine/query/aggregate/count-unique.ts', names: ['SEEN_BITMAP_MAX'], why: 'crossover from a bitmap to hashing (speed only)' },
  { file: 'engine/query/eval/key-ids.ts', names: ['SLOTS_MIN'], why: 'initial size of a partition of the key id table' },
  { file: 'engine/storage/chunk.ts', names: ['TIME_BLOCK_ROWS'], why: 'the granularity of the greatest times a segment chunk keeps, by which an extraction of the latest events skips rows; bounds nothing' },
  { file: 'engine/write/byte-pool.ts', names: ['POOLED_BYTES_MIN'], why: 'which requests the pool serves; its cap is limits.WAL_POOL_BYTES_MAX' },
  { file: 'engine/write/write-path.ts', names: ['LEAVES_KEPT'], why: 'reuse pool of about the calls in flight' },
  { file: 'engine/storage/buffer.ts', names: ['INITIAL_ROWS', 'UNIQUE_CHECK_ROWS'], why: 'initial capacity and the sample that stops interning' },
  { file: 'engine/storage/collection.ts', names: ['PARTITION_SPAN_DAYS_MAX'], why: 'crossover from an array by day to a Map' },
  { file: 'engine/storage/segment/arrow-data.ts', names: ['SORTED_DICTIONARY_ENTRIES_MIN', 'SORT_PREFIX_BYTES', 'PADDED_WIDTH_MAX', 'PADDED_GROWTH_MAX'], why: 'dictionary encoding choices of the segment writer' },
  { file: 'engine/ingest/fast-batch.ts', names: ['SMALL_EVENT_BYTES', 'SHARED_LIST_BYTES_MAX'], why: 'fast-path crossovers of the batch reader' },
];

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sources(rel));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

interface Found { readonly file: string; readonly line: number; readonly name: string; readonly text: string }

/** Every bound-like numeric constant declared outside the two limit files. */
function inlineBounds(): Found[] {
  const found: Found[] = [];
  for (const file of [...sources('engine'), ...sources('server')].sort()) {
    if (LIMIT_FILES.has(file)) continue;
    const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
    lines.forEach((text, i) => {
      const name = DECLARATION.exec(text)?.[1];
      if (name !== undefined && name.split('_').slice(1).some((word) => BOUND_WORDS.has(word))) {
        found.push({ file, line: i + 1, name, text: text.trim() });
      }
    });
  }
  return found;
}

const isAllowed = (f: Found) => ALLOWED.some((a) => a.file === f.file && a.names.includes(f.name));

t.test('the scan sees the sources and the pattern', async (t) => {
  t.ok(fs.existsSync(path.join(ROOT, 'engine/base/limits.ts')), `repository root found at ${ROOT}`);
  const match = (line: string) => DECLARATION.exec(line)?.[1];
  t.equal(match('const FOO_BYTES_MAX = 64 * 1024;'), 'FOO_BYTES_MAX');
  t.equal(match('export const FOO_MS: number = 1_000;'), 'FOO_MS');
  t.equal(match('const FOO_MAX = 1 << 20;'), 'FOO_MAX');
  t.equal(match('const FOO_MAX = limits.BAR_MAX;'), undefined, 'an alias of a limit is not a new number');
  t.equal(match('  const FOO_MAX = 3;'), undefined, 'only top-level declarations');
});

t.test('bounds are declared in engine/base/limits.ts or server/common/limits.ts only', async (t) => {
  const misplaced = inlineBounds().filter((f) => !isAllowed(f));
  t.same(misplaced.map((f) => `${f.file}:${f.line}: ${f.text}`), [],
    'move each to engine/base/limits.ts (engine) or server/common/limits.ts (server, Kafka) with its doc '
    + 'comment and import it; or, for a format constant, add it to ALLOWED in this file with why');
});

t.test('every ALLOWED entry still names a constant the scan finds', async (t) => {
  const found = inlineBounds();
  const stale = ALLOWED.flatMap((a) => a.names
    .filter((name) => !found.some((f) => f.file === a.file && f.name === name))
    .map((name) => `${a.file}: ${name}`));
  t.same(stale, [], 'drop these from ALLOWED: they moved, were renamed or are gone');
  for (const a of ALLOWED) t.ok(a.why.length > 0, `${a.file} says why`);
});
