/**
 * Every bound in Tally, in one place, each with what it bounds, why this number, and the error it
 * raises. Numbers from the seed's Limits section are marked "seed". Relations are asserted at load.
 * The server's own bounds are in server/common/limits.ts; test/unit/limits-placement.test.ts finds any
 * declared elsewhere.
 */
import { assert } from './assert.js';

/** Bytes of one event's JSON (seed); over it → 413 RequestTooLargeError / InvalidEventError in a batch. */
export const EVENT_BYTES_MAX = 900_000;
/** Bytes of a batch request body (seed "bulk event payload"); over it → 413 RequestTooLargeError. */
export const BATCH_BYTES_MAX = 10_000_000;
/** Bytes of any HTTP request body we buffer; the larger of the two write limits. */
export const BODY_BYTES_MAX = BATCH_BYTES_MAX;
/** Events in one batch request; the seed recommends 5,000, we accept 4x that before InvalidBatchError. */
export const BATCH_EVENTS_MAX = 20_000;
/** Batch bodies from this size up are parsed and prepared on ingest workers (engine/ingest). */
export const INGEST_WORKER_BODY_BYTES_MIN = 64 * 1024;
/** Property name length: "fewer than 256 characters" (seed) → InvalidPropertyNameError. */
export const PROPERTY_NAME_CHARS_MAX = 255;
/** String value length: "fewer than 10,000 characters" (seed) → InvalidPropertyValueError. */
export const STRING_VALUE_CHARS_MAX = 9_999;
/** Distinct property paths per collection (seed) → TooManyPropertiesError. */
export const COLLECTION_PROPERTIES_MAX = 1_000;
/** Collection name length (docs/api.md §4) → InvalidCollectionNameError. */
export const COLLECTION_NAME_CHARS_MAX = 64;
/** Collections returned by the list endpoint (seed). */
export const COLLECTIONS_LISTED_MAX = 5_000;
/** Uniqueness token length in characters (seed) → InvalidSvcNamespaceProperty. */
export const UNIQUENESS_TOKEN_CHARS_MAX = 64;
/** Duplicate window of uniqueness tokens: 31 days (seed). */
export const UNIQUENESS_WINDOW_MS = 31 * 24 * 3600 * 1000;
/** Nesting depth of an event; deeper objects are almost surely a bug → InvalidEventError. */
export const EVENT_DEPTH_MAX = 32;
/** Elements of one list property; bounds per-row work → InvalidPropertyValueError. */
export const LIST_ITEMS_MAX = 10_000;
/** Inclusive number range of property values (seed: -2^63 .. 2^63-1) → InvalidPropertyValueError. */
export const NUMBER_MIN = -(2 ** 63);
export const NUMBER_MAX = 2 ** 63 - 1;
/** Bytes the svc fields add to an event as sent; a batch item's size may exceed the limit by this. */
export const SVC_OVERHEAD_BYTES = 2_048;
/** The longest tag an append may carry, in utf8 bytes. */
export const TAG_BYTES_MAX = 1024;
/**
 * Joined property paths cached (schema/flatten.ts); past it the cache starts over (junk paths of
 * refused events).
 */
export const JOINED_PATHS_MAX = 100_000;
/**
 * Add-on lists the fast batch reader (ingest/fast-batch.ts) keeps planned (addon-plan.ts), newest
 * first: a body's events repeat one or two.
 */
export const ADDON_PLANS_KEPT = 4;
/** Longer add-on lists (as sent) go the general way, unplanned: five add-ons take ~420 bytes. */
export const ADDON_LIST_BYTES_MAX = 16 * 1024;

/**
 * Rows buffered in memory per collection before a flush to a segment; bounds replay time (the
 * memory budget bounds the buffers' bytes) and what a query posts to a worker with every scan of
 * the buffer. Compaction merges the small per-day segments that frequent flushes make.
 */
export const BUFFER_ROWS_MAX = 250_000;
/** Longest time rows stay only in the WAL and memory before a flush; bounds WAL replay time. */
export const FLUSH_INTERVAL_MS = 10_000;
/**
 * Buffered rows (all collections) past which writes wait for a flush: twice the rows at which a
 * flush is asked for (BUFFER_ROWS_MAX), so only a flush held up behind a merge makes writes wait.
 */
export const WRITE_BACKLOG_ROWS = 2 * BUFFER_ROWS_MAX;
/** Writes have stopped when none started for this long (and none is in flight): a quiet flush. */
export const WRITE_QUIET_MS = 1_000;
/**
 * Buffers that held at least this many rows (their capacity, let go at once) are worth a full
 * collection when writes stop: ~20 MB of arrays and strings; a trickle of events costs none.
 */
export const QUIET_COLLECT_ROWS = 65_536;
/** Rows between two sums of the write buffers' bytes: cheap, and fine-grained enough for the budget. */
export const BUDGET_CHECK_ROWS = 8192;
/** A failing flush (a full disk) is logged at most once per this many ms. */
export const FLUSH_ERROR_LOG_MS = 60_000;
/** Bytes of WAL frames the write path keeps for reuse (engine/write/byte-pool.ts). */
export const WAL_POOL_BYTES_MAX = 64 * 1024 * 1024;
/** Bytes of one WAL record; a batch body bounds it, plus framing. A longer length means corruption. */
export const WAL_RECORD_BYTES_MAX = 64 * 1024 * 1024;
/**
 * Bytes written by one WAL group commit. Bounds the concatenation copy and the time one fdatasync
 * holds up the queue; 16 MiB is ~10 batches of the largest size.
 */
export const WAL_GROUP_BYTES_MAX = 16 * 1024 * 1024;
/**
 * Group commits in flight at once: the next group's synchronized write starts while the one before
 * it syncs, and is acknowledged after it. Two kept 64 writers at 48-89k appends/s where one allowed
 * 14-88k on the shared test machine (2026-11-27, alternating 2 s runs); three gained nothing more.
 */
export const WAL_GROUPS_IN_FLIGHT_MAX = 2;
/**
 * Pre-zeroed WAL room: a synchronized write into bytes the file already holds (written, not
 * merely allocated) needs no journal commit for the file's size, so it costs half as much
 * (write + fdatasync of a small group, this machine: 90-95 µs against 184-223 µs appending).
 * The WAL zeroes WAL_ZERO_CHUNK_BYTES past its writes (one synchronized write, ~1 ms) whenever fewer
 * than WAL_ZERO_AHEAD_BYTES of zeroed room are left, and only for groups of at most
 * WAL_ZERO_GROUP_BYTES_MAX: a big group (a batch) pays the journal commit once for many events,
 * and zeroing ahead of batches would double the bytes written.
 */
export const WAL_ZERO_CHUNK_BYTES = 1024 * 1024;
export const WAL_ZERO_AHEAD_BYTES = 256 * 1024;
export const WAL_ZERO_GROUP_BYTES_MAX = 64 * 1024;
/** A failed WAL tries to recover on the first append this long after its last failure (503 until then). */
export const WAL_RECOVER_AFTER_MS = 200;
/** Cells (rows times columns) detachedSnapshotInSteps copies between turns of the event loop: ~2-4 ms. */
export const SNAPSHOT_STEP_CELLS = 1_000_000;
/** Segments of one partition above which compaction merges them even while flushes still add to it. */
export const PARTITION_SEGMENTS_MAX = 8;
/**
 * A partition no flush has written to for this long has all its small segments merged into one:
 * after a load, each day ends up as one segment (one dictionary per string column, one file to scan).
 */
export const PARTITION_QUIET_MS = 5_000;
/**
 * Compaction waits until no query has run for this long: queries come first on a small machine, and
 * a merge replaces segments whose columns the query workers have decoded, so it waits for a pause
 * in an interactive session rather than the gap between two of its queries.
 */
export const COMPACTION_QUERY_IDLE_MS = 2_000;
/**
 * Milliseconds a merge or a delete rewrite under way may stand still in all for the queries that
 * arrive meanwhile (base/query-activity.ts): bounded, so merges still end under queries that
 * overlap without a pause. Writes, deletes and a close waiting for it end its pauses at once.
 */
export const BACKGROUND_PAUSE_MAX_MS = 10_000;
/**
 * Rows of a compacted segment; bounds the memory and the duration of one compaction. A merge runs
 * on the segment worker, where the next flush waits for it while the write buffers fill: at 2M
 * rows, a 50M-event load merged 555,000-row days for seconds at a time, and the write thread's
 * buffers and heap grew to 1.1 GB meanwhile (bench/scale; 10M events, 111,000 a day, fit a day
 * in one merge either way). The segment worker's own peak grows with it too (~140 MB at 500,000).
 */
export const SEGMENT_ROWS_MAX = 250_000;
/** HyperLogLog precision: 2^14 registers, ~0.8% standard error, 16 KiB per column per segment. */
export const HLL_PRECISION = 14;
/** Distinct values a column may list in its segment's sidecar; more and it lists none. */
export const DISTINCT_VALUES_MAX = 256;
/**
 * Per-value sums, least and greatest numbers a segment's sidecar holds at most, over all its
 * (column of few values, column of numbers) pairs (storage/segment/sketches.ts computeGroupStats):
 * ~37 KB before zstd, while the bench's segments hold 338 (50 countries and 5 devices by 2
 * numbers, three each; is_member by 2 numbers, two each).
 */
export const GROUP_STATS_NUMBERS_MAX = 4096;
/**
 * A count fused with a filter (query/eval/code-match.ts countMatching) counts a group column of at
 * most this many dictionary entries in four lanes: 4 × 4,096 Int32 counts, 64 KiB, stay in cache.
 */
export const COUNT_LANES_ENTRIES_MAX = 4096;
/**
 * Pair tables (storage/segment/pair-counts.ts): a column of strings gets one with a column of few
 * values only when its dictionary has at most this many entries; at most PAIR_TABLES_MAX (F, G)
 * pairs are tried a segment, cheapest first, and their cells are at most one per PAIR_ROWS_PER_CELL
 * rows all told (12 bytes each before zstd; 5 devices by 1,000 paths in a day of bench/scale's
 * 100M events: ~5,000 cells of 1.1M rows).
 */
export const PAIR_GROUP_ENTRIES_MAX = 4096;
export const PAIR_TABLES_MAX = 16;
export const PAIR_ROWS_PER_CELL = 8;
/**
 * The cells a segment of at least as many rows may hold in its pair tables (storage/segment/pair-counts.ts):
 * right after a load, a day partition is two or three flushed segments of 10,000-100,000 rows
 * until they merge, and one of 30,000 rows would otherwise fall short of 5 devices by 1,000
 * paths (~5,000 cells) and be scanned. ~100 KB before zstd at most.
 */
export const PAIR_CELLS_MIN = 8192;
/**
 * Distinct strings a query worker's chunk cache keeps one copy of for the pair-table summaries it
 * holds (chunk-cache.ts internStrings: a path in every segment's tables is one string, not one a
 * table); past it the copies start afresh. ~5 MB a worker at most.
 */
export const DERIVED_STRINGS_MAX = 65_536;
/** What a chunk cache's derived entry (a pair-table summary) is counted at beyond its arrays: its key, the entry, the chunk's Map. */
export const DERIVED_ENTRY_BYTES = 512;
/**
 * Entries of a dictionary whose strings a grouping or select_unique makes at once and keeps with
 * the column (storage/chunk.ts entriesOf); a larger one (ids) has only the entries rows select made.
 */
export const DICTIONARY_STRINGS_AT_ONCE_MAX = 4096;
/**
 * Entries of each ZSTD frame of a blocked dictionary (storage/segment/dict-blocks.ts): a filter
 * for one id decodes one frame (32 KB of 8-byte ids) rather than the segment's whole dictionary.
 * Frames this size cost no disk on 240,000 ids of 8 bytes (1.5% smaller than one frame) and 2%
 * more on 12-byte session ids; dictionaries of more than two frames are blocked.
 */
export const DICTIONARY_BLOCK_ENTRIES = 4096;
/** Segment files whose blocked paths a query worker's chunk cache remembers (a few strings each). */
export const BLOCKED_FILES_KEPT_MAX = 65_536;
/**
 * Strings of an in filter looked for in a segment's dictionary as stored one at a time, byte by
 * byte (query/eval/stored-match.ts); more, and each entry is hashed once and looked up among them.
 */
export const STORED_MATCH_VALUES_MAX = 16;
/** Native output a thread may leave as garbage within one job (see zstdDecompressColumn). */
export const NATIVE_BYTES_PER_TURN = 32 * 1024 * 1024;
/**
 * Native output after which a query worker lets its event loop turn between two segments, so the
 * garbage is freed (query/exec/steps.ts): well under NATIVE_BYTES_PER_TURN, so a paced scan
 * decodes natively throughout. Measured over 10M events' segments, five columns a pass: 8 MiB
 * took 152-154 ms a pass at a 193 MB peak RSS, against 323-329 ms and 190 MB unpaced (mostly
 * WebAssembly), 157-158 ms and 199 MB at 16 MiB, 166-174 ms and 180 MB at 4 MiB.
 */
export const NATIVE_YIELD_BYTES = 8 * 1024 * 1024;
/**
 * zstd frames whose content bound is past this go to the native decoder, not the WebAssembly one
 * (storage/segment/arrow.ts): the WebAssembly build's malloc returns 0 when its memory cannot
 * grow, and decoding there would write over its own heap. A segment's largest buffer is a few MB
 * (250,000 rows of 8 bytes); a damaged or foreign header can claim far more.
 */
export const ZSTD_WASM_CONTENT_BYTES_MAX = 256 * 1024 * 1024;
/** The smallest budget that still lets a flush and one decoded segment fit. */
export const MEMORY_BUDGET_MIN_BYTES = 64 * 1024 * 1024;
/**
 * Young generation of the query and segment workers' V8 heaps (MB; V8 splits it into two 2 MB
 * semi-spaces and a large-object space). Their scan loops and Arrow writes allocate typed arrays
 * (off the V8 heap) and few short-lived objects, so the default 16 MB semi-spaces per worker were
 * RSS bought for nothing: 2M events over HTTP, peak RSS 1,023 -> 910 MB with 2 MB semi-spaces.
 * The ingest worker and the main thread, which parse JSON, keep V8's default.
 */
export const WORKER_YOUNG_GENERATION_MB = 6;
/**
 * Default budgets of a query worker's caches of decoded columns and of footers (query/exec/chunk-cache.ts),
 * for callers without a memory plan (engine/base/memory.ts makes one).
 */
export const CHUNK_CACHE_BYTES_DEFAULT = 512 * 1024 * 1024;
export const FOOTER_CACHE_BYTES_DEFAULT = 64 * 1024 * 1024;
/**
 * A query worker's priming at start (query/exec/prime.ts): each request runs this many times over
 * made-up segments, in a cache of its own of this size (the made-up store decodes to ~2 MB).
 */
export const PRIME_ROUNDS = 2;
export const PRIME_CACHE_BYTES = 16 * 1024 * 1024;
/** An unparsable data-dir lock this old was left by a process that died between creating and writing it. */
export const LOCK_HALF_WRITTEN_STALE_MS = 10_000;

/** Distinct values counted exactly before count_unique estimates (seed) → ApproximationRequiredError. */
export const COUNT_UNIQUE_EXACT_MAX = 1_000_000;
/** Values kept exactly for median/percentile before a sketch estimates (seed). */
export const PERCENTILE_EXACT_MAX = 1_000_000;
/** Groups of a group_by (seed) → TooManyGroupsError. */
export const GROUPS_MAX = 1_000_000;
/** Buckets of an interval (seed) → TooManyIntervalsError. */
export const INTERVALS_MAX = 9_000;
/** Response bytes of a query (seed: 150 MB) → ResponseTooLargeError. */
export const RESPONSE_BYTES_MAX = 150 * 1_000_000;
/** Events a synchronous extraction may scan (seed) → ExtractionTooLargeError. */
export const EXTRACTION_SCAN_MAX = 1_000_000;
/** Events a synchronous extraction may return (seed) → ExtractionTooLargeError. */
export const EXTRACTION_RESULT_MAX = 100_000;
/** Events an asynchronous extraction job may write (docs/api.md §11) → ExtractionTooLargeError. */
export const ASYNC_EXTRACTION_EVENTS_MAX = 10_000_000;
/** How long an asynchronous extraction's record and file are kept after it is submitted (spec: 24 h). */
export const ASYNC_EXTRACTION_TTL_MS = 24 * 3_600_000;
/** Runs of one extraction job before it fails (a read that failed on I/O may pass on the next run). */
export const EXTRACTION_JOB_ATTEMPTS_MAX = 3;
/**
 * Cached queries (refresh_rate > 0) per project (docs/api.md §9): each holds a result in memory and
 * runs on a timer → 400 InvalidQueryError; reported as `cached_queries.limit` by organization-usage (§12).
 */
export const CACHED_QUERIES_MAX = 100;
/** A cached query's `refresh_rate` in seconds: 4 to 24 hours (docs/api.md §9) → InvalidQueryError. */
export const REFRESH_RATE_MIN_S = 14_400;
export const REFRESH_RATE_MAX_S = 86_400;
/**
 * A cached query whose refresh failed runs again this soon rather than a whole refresh rate later
 * (in a cluster, the nodes storing its collection may have been down a moment); reads serve the
 * last successful result meanwhile, or the failure when there is none.
 */
export const CACHED_QUERY_RETRY_MS = 60_000;
/** Bytes of a saved query's `metadata` as JSON → InvalidQueryError. */
export const SAVED_QUERY_METADATA_BYTES_MAX = 100_000;
/** Cached datasets per project (docs/api.md §10) → 400; reported by organization-usage (§12). */
export const DATASETS_MAX = 100;
/** Properties of a dataset's `index_by` (docs/api.md §10) → MissingRequiredRequestFieldError. */
export const DATASET_INDEX_BY_MAX = 3;
/**
 * Records and bytes a dataset reads from its collection's log per step while following it; a step
 * yields to other work between.
 */
export const DATASET_READ_RECORDS = 5_000;
export const DATASET_READ_BYTES = 8 * 1024 * 1024;
/** Buckets of one dataset results request's timeframe → TooManyIntervalsError. */
export const DATASET_BUCKETS_MAX = 10_000;
/** Length of an access key's name → InvalidAccessKeyDefinitionError. */
export const ACCESS_KEY_NAME_CHARS_MAX = 256;
/** Access keys per project (docs/api.md §8); a request's key is compared with each → 400. */
export const ACCESS_KEYS_MAX = 1_000;
/** Unique actors of a funnel (seed) → TooManyGroupsError. */
export const FUNNEL_ACTORS_MAX = 1_000_000;
/**
 * Bytes of the actor sets of a funnel's steps one cluster node sends another (partial-codec.ts,
 * format version 2), and holds while it does → ResponseTooLargeError. Below the server's
 * CLUSTER_PEER_ANSWER_BYTES_MAX, so it is this clear 400 that a node meets, not that bound.
 */
export const FUNNEL_STATE_BYTES_MAX = 128 * 1024 * 1024;
/** Steps of a funnel; bounds the work of one request → InvalidQueryError. */
export const FUNNEL_STEPS_MAX = 100;
/** Query wall time (seed: 5 minutes) → 504 QueryIncompleteError. */
export const QUERY_TIMEOUT_MS = 300_000;
/** Ad-hoc queries per minute per project (seed) → 429 RateLimitExceededError. */
export const QUERIES_PER_MINUTE = 200;
/** Extractions per minute per project (seed). */
export const EXTRACTIONS_PER_MINUTE = 200;
/** Deletes per minute per project (seed). */
export const DELETES_PER_MINUTE = 10;
/** Collection deletes per minute per project (seed). */
export const COLLECTION_DELETES_PER_MINUTE = 100;
/** The fixed window of the per-minute limits above (base/rate-limit.ts). */
export const RATE_LIMIT_WINDOW_MS = 60_000;
/** Queries executing at once (K); more would only share the same 2 cores. */
export const QUERIES_RUNNING_MAX = 4;
/** Queries waiting to start (Q); past it → 429 TooManyConcurrentQueriesError. */
export const QUERIES_WAITING_MAX = 64;
/** How long a query may wait to start; past it → 503 ServiceUnavailableError (fast failure). */
export const QUERY_START_DEADLINE_MS = 10_000;
/** Write buffer snapshots a query worker keeps: the newest of each collection, at most this many. */
export const WORKER_SNAPSHOTS_KEPT_MAX = 16;
/**
 * Fresh segments waiting to be decoded into a query worker's cache (query/exec/pool.ts warm); past
 * it the oldest waiting are not warmed (a load writes faster than a busy worker decodes).
 */
export const WARM_QUEUE_MAX = 1_024;
/**
 * While events arrive faster than this (a bulk load), warming waits: the load's write buffers and
 * garbage need the memory (bench/scale at 100M, 315,000 events/s: with a quarter of each cache
 * warmed during the load the server peaked at 1,068 MB).
 */
export const WARM_LOAD_EVENTS_PER_S = 20_000;
/** Warming held back by a load looks again this much later. */
export const WARM_RETRY_MS = 1_000;
/**
 * A column is warmed only when its segment has at least this many rows per dictionary entry:
 * page paths, countries, devices are; user and session ids (about a row per entry) are not.
 */
export const WARM_ROWS_PER_DICTIONARY_ENTRY = 8;
/**
 * The share of a query worker's cache that warming fills, ids included (query/exec/pool.ts
 * warmRest): ids go in only while the store's columns without ids and the ids taken so far stay
 * within it, so a quarter of the cache stays free for what queries decode on first use (times of
 * boundary segments, columns of segments warmed earlier and since evicted).
 */
export const WARM_REST_SHARE = 0.75;

/**
 * The share of a query worker's cache its table of key ids may take (query/eval/key-ids.ts),
 * counted in the cache: 500,000 user ids take ~17 MB of the 192 MiB a worker has by default.
 * Dictionaries past it keep the hash path of a distinct count (about twice as slow).
 */
export const KEY_IDS_SHARE = 0.25;
/**
 * The share of a query worker's cache that the collections' newest segments, held whole (every
 * column and the times), may take (query/exec/chunk-cache.ts warmWhole): queries neither evict nor
 * trim them, so an extraction of the latest events reads no file however much the queries before
 * it read. A 250,000-row segment of bench/scale takes ~15 MB of the 192 MiB a worker has.
 */
export const NEWEST_HELD_SHARE = 0.125;
/** Segment footers a query worker keeps (a few hundred bytes each) before both sides start over. */
export const SENT_FOOTERS_MAX = 20_000;
/** Regex filter pattern length (docs/api.md §6) → InvalidFilterError. */
export const REGEX_PATTERN_CHARS_MAX = 256;
/** Nesting of `or` filters; deeper is surely not a real query → InvalidFilterError. */
export const FILTER_OR_DEPTH_MAX = 8;
/** Filters in one list; bounds per-chunk compile work → InvalidFilterError. */
export const FILTERS_MAX = 1_000;
/** Relative timeframes kept resolved by zone and name (query/plan/timeframe.ts); past it the cache starts over. */
export const RELATIVE_TIMEFRAME_CACHE_ENTRIES_MAX = 1024;

// Enrichment (engine/enrich): caches keep add-ons off the write path's critical cost.
/** Entries of one event's `svc.addons`; five add-ons exist, so more is a bug → InvalidEventError. */
export const ADDONS_PER_EVENT_MAX = 16;
/** Parsed dotted add-on paths; clients send the same few configurations over and over. */
export const PATH_CACHE_ENTRIES_MAX = 1_000;
/** Add-on results (value, JSON, leaves) kept per add-on by input; ~1 KB each → ≤ ~10 MB per add-on. */
export const FRAGMENT_CACHE_ENTRIES_MAX = 10_000;
/** Longest input (all of an add-on's inputs joined) whose result is cached; longer ones are recomputed. */
export const FRAGMENT_KEY_CHARS_MAX = 1_024;
/** Parsed user agents kept in the LRU; a few thousand are hot; keys ≤ UA_CHARS_MAX → ≤ ~25 MB. */
export const UA_CACHE_ENTRIES_MAX = 10_000;
/** Characters of a user agent that are parsed; real UAs are shorter, and it bounds regex time. */
export const UA_CHARS_MAX = 1_024;
/** Addresses whose location is cached; a client sends many events from one address. */
export const GEO_IP_CACHE_ENTRIES_MAX = 10_000;
/** Decoded mmdb records kept per geo database (maxmind.open's default); places repeat. */
export const GEO_RECORD_CACHE_ENTRIES_MAX = 10_000;
/**
 * How long a thread waits for another to finish reading a geo database into shared memory
 * (~0.1-0.5 s for the bundled files) before it reads its own copy: a thread that died while
 * reading must not hang every later lookup.
 */
export const GEO_LOAD_WAIT_MS = 10_000;
/** Longest textual address ip_to_geo looks up (IPv4-mapped IPv6: 45) plus slack; bounds cache keys. */
export const GEO_ADDRESS_CHARS_MAX = 64;
/** Parsed referrer URLs kept in the LRU; search URLs vary by term, so hits come from the rest. */
export const REFERRER_CACHE_ENTRIES_MAX = 10_000;
/** Parsed URLs of svc:url_parser kept in the LRU; pages of a site repeat. */
export const URL_CACHE_ENTRIES_MAX = 10_000;
/** Longest URL kept as a cache key; longer ones are parsed each time, so keys stay ≤ ~10 MB. */
export const URL_CACHED_CHARS_MAX = 1_024;
/** Page URL → host entries kept for the INTERNAL check; a site has few hot pages. */
export const PAGE_HOST_CACHE_ENTRIES_MAX = 10_000;


assert(BODY_BYTES_MAX >= EVENT_BYTES_MAX, 'a body must be able to hold one event');
assert(WAL_RECORD_BYTES_MAX > BATCH_BYTES_MAX * 2, 'a WAL record must hold a whole batch');
assert(COUNT_UNIQUE_EXACT_MAX <= GROUPS_MAX, 'exact distinct bound within group bound');
assert(ADDONS_PER_EVENT_MAX >= 5, 'an event must be able to use every add-on once');
assert(UA_CHARS_MAX >= 256, 'common user agents must be parsed whole');

/**
 * A flush of at most this many rows, when the segment worker is not started, is written on the
 * calling thread (maintenance/segment-pool.ts): a few milliseconds, against ~0.4 s to start the worker.
 */
export const SEGMENT_INLINE_ROWS_MAX = 4096;

/** The largest encoding the scratch buffer takes; a larger one gets a fresh buffer. */
export const LEAF_SCRATCH_BYTES_MAX = 64 * 1024;

/** The smallest small buffer; a size class is a power of two from here to POOLED_BYTES_MIN / 2. */
export const WAL_POOL_SMALL_BYTES_MIN = 512;

/** Bytes kept per small size class, at most: about the frames of the calls in flight at once. */
export const WAL_POOL_SMALL_CLASS_BYTES_MAX = 512 * 1024;

/** Segment files whose parsed layout (footer and message headers, ~10 KB each) a query thread keeps. */
export const SEGMENT_LAYOUTS_CACHED_MAX = 512;
