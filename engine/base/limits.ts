/**
 * Every bound in Tally, in one place, each with what it bounds, why this number, and the error it
 * raises. Numbers from the seed's Limits section are marked "seed". Relations are asserted at load.
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
 * Rows of a compacted segment; bounds the memory and the duration of one compaction. A merge runs
 * on the segment worker, where the next flush waits for it while the write buffers fill: at 2M
 * rows, a 50M-event load merged 555,000-row days for seconds at a time, and the write thread's
 * buffers and heap grew to 1.1 GB meanwhile (bench/scale; 10M events, 111,000 a day, fit a day
 * in one merge either way). The segment worker's own peak grows with it too (~140 MB at 500,000).
 */
export const SEGMENT_ROWS_MAX = 250_000;
/** HyperLogLog precision: 2^14 registers, ~0.8% standard error, 16 KiB per column per segment. */
export const HLL_PRECISION = 14;

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
/**
 * Cached queries (refresh_rate > 0) per project (docs/api.md §9): each holds a result in memory and
 * runs on a timer → 400 InvalidQueryError; reported as `cached_queries.limit` by organization-usage (§12).
 */
export const CACHED_QUERIES_MAX = 100;
/** Cached datasets per project (docs/api.md §10) → 400; reported by organization-usage (§12). */
export const DATASETS_MAX = 100;
/** Unique actors of a funnel (seed) → TooManyGroupsError. */
export const FUNNEL_ACTORS_MAX = 1_000_000;
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
/** Queries executing at once (K); more would only share the same 2 cores. */
export const QUERIES_RUNNING_MAX = 4;
/** Queries waiting to start (Q); past it → 429 TooManyConcurrentQueriesError. */
export const QUERIES_WAITING_MAX = 64;
/** How long a query may wait to start; past it → 503 ServiceUnavailableError (fast failure). */
export const QUERY_START_DEADLINE_MS = 10_000;
/** Regex filter pattern length (docs/api.md §6) → InvalidFilterError. */
export const REGEX_PATTERN_CHARS_MAX = 256;

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
