/**
 * Bounds of the server around the engine: the Kafka wire protocol, broker and bridge, the HTTP
 * routes that stream, and the process itself. The engine's own bounds are in engine/base/limits.ts;
 * nothing else declares a bound inline (test/unit/limits-placement.test.ts checks).
 */

// Kafka broker (server/kafka/broker), wire protocol (server/kafka/protocol) and bridge (server/kafka/bridge).
/** Frames queued per connection before its socket is paused; bounds memory per client. */
export const CONNECTION_QUEUE_MAX = 64;
/** Produce requests of one connection in flight at once; lets their fsyncs group. */
export const PRODUCE_PIPELINE_MAX = 8;
/** Batches remembered per idempotent producer and topic for duplicate detection (as Kafka). */
export const PRODUCER_BATCHES_KEPT = 5;
/** Idempotent producer/topic pairs remembered; least recently used beyond it are forgotten. */
export const PRODUCERS_TRACKED_MAX = 10_000;
/** The idempotent producers' state file is rewritten from the state in memory once past this size. */
export const PRODUCER_STATE_COMPACT_BYTES = 64 * 1024 * 1024;
/** Records one Fetch partition reads from the log; bounds the work of one response. */
export const FETCH_RECORDS_MAX = 20_000;
/** Bytes per Fetch partition when the client asks for more; bounds one response's memory. */
export const FETCH_PARTITION_BYTES_MAX = 8 * 1024 * 1024;
/** Longest long-poll a Fetch may park for, whatever the client asks (clients send 0.5–5 s). */
export const FETCH_WAIT_MS_MAX = 30_000;
/** Decompressed bytes of one produced batch (Kafka: message.max.bytes ≈ 1 MiB); → 10 / 2. */
export const BATCH_RECORDS_BYTES_MAX = 64 * 1024 * 1024;
/** Consumer group session timeout bounds (Kafka's group.min/max.session.timeout.ms) → 26. */
export const GROUP_SESSION_TIMEOUT_MS_MIN = 6_000;
export const GROUP_SESSION_TIMEOUT_MS_MAX = 1_800_000;
/** Delay before the first generation of an empty group, so members starting together share it. */
export const GROUP_INITIAL_REBALANCE_DELAY_MS = 1_000;
/** Members of one group; bounds coordinator memory per group → rejected with 25 beyond it. */
export const GROUP_MEMBERS_MAX = 1_000;
/** Commit metadata length (Kafka offset.metadata.max.bytes) → 12 OFFSET_METADATA_TOO_LARGE. */
export const OFFSET_METADATA_BYTES_MAX = 4_096;
/** Kafka topic name rules: legal characters and length → 17 INVALID_TOPIC_EXCEPTION. */
export const TOPIC_NAME_CHARS_MAX = 249;
/** Kafka frame size; checked before buffering a frame → connection closed. */
export const FRAME_BYTES_MAX = 100 * 1024 * 1024;
/**
 * The largest window a frame may ask for. A window can exceed its frame's content (librdkafka's
 * frames say 2 MB whatever they hold), so it is not held to `outputBytesMax`; 64 MB is past what
 * Kafka clients write (zstd levels up to 19: 8 MB) and half libzstd's own default limit (128 MB).
 */
export const ZSTD_WINDOW_BYTES_MAX = 64 * 1024 * 1024;
/**
 * Records and bytes the Kafka bridge (server/kafka/bridge) reads from a collection's log per
 * outbound produce; kafkajs batches of this size stay well under 1 MiB for events.
 */
export const OUTPUT_BATCH_RECORDS = 1_000;
export const OUTPUT_BATCH_BYTES = 900_000;

// HTTP (server/http). The live view of a collection (http/live.ts, Server-Sent Events):
/** Events sent on connect: enough to fill the page's list without a long first paint. */
export const LIVE_BACKLOG_EVENTS_MAX = 20;
/** Events and bytes read per append notification; a burst beyond it is read on the next pass at once. */
export const LIVE_READ_EVENTS_MAX = 200;
export const LIVE_READ_BYTES_MAX = 1 << 20;
/** Open streams per process; each holds a socket and a listener on every append (429 beyond). */
export const LIVE_STREAMS_MAX = 64;
/** A comment line this often keeps uWS (10 s idle timeout) and proxies from closing the stream. */
export const LIVE_HEARTBEAT_MS = 5_000;
/** Bytes queued on a slow client before the stream is closed; EventSource resumes by its id. */
export const LIVE_BACKLOG_BYTES_MAX = 4 << 20;
/** Bytes read at a time from a file sent as a response (http/stream-file.ts): its memory per response. */
export const FILE_CHUNK_BYTES = 256 * 1024;
/** Length of a project's name (POST .../projects) → MissingRequiredRequestFieldError. */
export const PROJECT_NAME_CHARS_MAX = 256;

// The process (server/main.ts).
/** How long shutdown waits for in-flight requests before closing connections. */
export const SHUTDOWN_DRAIN_MS = 30_000;
/** How often a server started by `npm start` checks that npm, its parent, still lives. */
export const PARENT_POLL_MS = 500;

// Cluster mode (server/cluster/, docs/cluster.md).
/** How long a write waits for Kafka's acknowledgement before it is answered 503. */
export const CLUSTER_WRITE_TIMEOUT_MS = 5_000;
/** How long a fetch of the shared metadata topic waits for new records: a change is in force on every node within about this. */
export const CLUSTER_META_WAIT_MS = 100;
/** How long the events consumer waits for the metadata topic when a record names a project it does not know. */
export const CLUSTER_META_SYNC_TIMEOUT_MS = 10_000;
/** How long start-up waits for the Kafka cluster to answer. */
export const CLUSTER_START_TIMEOUT_MS = 30_000;
/** Start-up asks again this often while a topic just created is not served yet (cluster/served.ts). */
export const CLUSTER_NOT_SERVED_RETRY_MS = 200;
/** The events topic's max.message.bytes: a batch request (10 MB) goes to one partition whole. */
export const CLUSTER_TOPIC_MESSAGE_BYTES_MAX = 16 * 1024 * 1024;
/** Bytes of messages per send: a batch request body is at most 10 MB, so one always fits. */
export const CLUSTER_SEND_BYTES_MAX = 8 * 1024 * 1024;
/** Events in the records of one append at most (a fetch of 10 MB of small events is ~50,000). */
export const CLUSTER_RUN_EVENTS_MAX = 5_000;
/** Refusals are logged at most this often (they are counted always). */
export const CLUSTER_REFUSAL_LOG_MS = 10_000;
/** Partitions of the events topic when a node creates it (--cluster-partitions). */
export const CLUSTER_PARTITIONS_DEFAULT = 12;
/** Node ids are small integers (they name consumer groups and, later, partition owners). */
export const CLUSTER_NODE_ID_MAX = 1023;
/** The shortest --cluster-secret: the nodes' internal query endpoint answers anyone who has it. */
export const CLUSTER_SECRET_LENGTH_MIN = 16;
/** How long a node waits for another's share of a query (the engine's own query timeout is 300 s) before it counts it down. */
export const CLUSTER_PEER_QUERY_TIMEOUT_MS = 310_000;
/** How often a node asks Kafka its partitions' end offsets (lag) and the other nodes' /ready (membership). */
export const CLUSTER_PROBE_INTERVAL_MS = 2_000;
/** How long one such ask may take before the node counts as down (or the lag stays as it was). */
export const CLUSTER_PROBE_TIMEOUT_MS = 1_500;
/** Bytes of a peer's answer to a share of a query at most (a partial state or a body: responses are bounded too). */
export const CLUSTER_PEER_ANSWER_BYTES_MAX = 256 * 1024 * 1024;

/** Paths whose match is remembered, at most; a full cache starts over. */
export const ROUTER_CACHED_PATHS_MAX = 1024;
/** How often a starting node checks whether it has caught up, before saved and cached queries run through the cluster. */
export const CLUSTER_CATCH_UP_POLL_MS = 100;

/**
 * Request bodies up to this size are cut from a shared slab of BODY_SLAB_BYTES (server/http/body.ts)
 * rather than each allocated: Node's own pool is 8 KiB, so single-event bodies made it allocate a
 * new pool every ~70 requests. A slab is never reused, only dropped once full (its bodies live on
 * until their requests end), so no body ever shares bytes with another.
 */
export const SLAB_BODY_BYTES_MAX = 4 * 1024;
export const BODY_SLAB_BYTES = 256 * 1024;
