/**
 * Fetch (1), advertised v0–11, served for v4+ (RecordBatch v2). Empty records are sent as
 * zero-length bytes, never null (librdkafka fails on null).
 *
 *   request:  replica_id int32, max_wait_ms int32, min_bytes int32, v3+ max_bytes int32,
 *             v4+ isolation_level int8, v7+ session_id int32, v7+ session_epoch int32,
 *             topics [topic string, partitions [partition int32, v9+ current_leader_epoch int32,
 *                     fetch_offset int64, v5+ log_start_offset int64, partition_max_bytes int32]],
 *             v7+ forgotten_topics_data [topic string, partitions [int32]], v11+ rack_id string
 *   response: v1+ throttle_time_ms int32, v7+ error_code int16, v7+ session_id int32,
 *             responses [topic string, partitions [partition_index int32, error_code int16,
 *               high_watermark int64, v4+ last_stable_offset int64, v5+ log_start_offset int64,
 *               v4+ aborted_transactions nullable [producer_id int64, first_offset int64],
 *               v11+ preferred_read_replica int32, records nullable_bytes]]
 */
import { array, f, type MessageSpec } from '../schema.js';

export const fetch: MessageSpec = {
  apiKey: 1, name: 'Fetch', minVersion: 0, maxVersion: 11, flexibleFrom: Infinity,
  request: [
    f('replica_id', 'int32'),
    f('max_wait_ms', 'int32'),
    f('min_bytes', 'int32'),
    f('max_bytes', 'int32', 3),
    f('isolation_level', 'int8', 4),
    f('session_id', 'int32', 7),
    f('session_epoch', 'int32', 7),
    f('topics', array([
      f('topic', 'string'),
      f('partitions', array([
        f('partition', 'int32'),
        f('current_leader_epoch', 'int32', 9),
        f('fetch_offset', 'int64'),
        f('log_start_offset', 'int64', 5),
        f('partition_max_bytes', 'int32'),
      ])),
    ])),
    f('forgotten_topics_data', array([f('topic', 'string'), f('partitions', array('int32'))]), 7),
    f('rack_id', 'string', 11),
  ],
  response: [
    f('throttle_time_ms', 'int32', 1),
    f('error_code', 'int16', 7),
    f('session_id', 'int32', 7),
    f('responses', array([
      f('topic', 'string'),
      f('partitions', array([
        f('partition_index', 'int32'),
        f('error_code', 'int16'),
        f('high_watermark', 'int64'),
        f('last_stable_offset', 'int64', 4),
        f('log_start_offset', 'int64', 5),
        f('aborted_transactions', array([
          f('producer_id', 'int64'), f('first_offset', 'int64'),
        ], 4), 4),
        f('preferred_read_replica', 'int32', 11),
        f('records', 'nullable_bytes'),
      ])),
    ])),
  ],
};
