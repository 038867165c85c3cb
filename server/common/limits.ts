/**
 * Bounds of the server around the engine: the Kafka wire protocol and broker. The engine's own
 * bounds are in engine/base/limits.ts; nothing else declares a bound inline.
 */

// Kafka broker (server/kafka/broker) and wire protocol (server/kafka/protocol).
/** Frames queued per connection before its socket is paused; bounds memory per client. */
export const CONNECTION_QUEUE_MAX = 64;
/** Produce requests of one connection in flight at once; lets their fsyncs group. */
export const PRODUCE_PIPELINE_MAX = 8;
/** Batches remembered per idempotent producer and topic for duplicate detection (as Kafka). */
export const PRODUCER_BATCHES_KEPT = 5;
/** Idempotent producer/topic pairs remembered; least recently used beyond it are forgotten. */
export const PRODUCERS_TRACKED_MAX = 10_000;
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
