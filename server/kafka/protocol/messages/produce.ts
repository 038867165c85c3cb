/**
 * Produce (0), advertised v0–8 (librdkafka needs v0 in range to enable compression), decoded for
 * every version but served for v3+ (RecordBatch v2). `records` stays opaque here: record-batch.ts
 * parses it. throttle_time_ms is the *last* field of the response.
 *
 *   request:  v3+ transactional_id nullable_string, acks int16, timeout_ms int32,
 *             topic_data [name string, partition_data [index int32, records nullable_bytes]]
 *   response: responses [name string,
 *               partition_responses [index int32, error_code int16, base_offset int64,
 *                 v2+ log_append_time_ms int64, v5+ log_start_offset int64,
 *                 v8+ record_errors [batch_index int32, batch_index_error_message nullable_string],
 *                 v8+ error_message nullable_string]],
 *             v1+ throttle_time_ms int32
 */
import { array, f, type MessageSpec } from '../schema.js';

export const produce: MessageSpec = {
  apiKey: 0, name: 'Produce', minVersion: 0, maxVersion: 8, flexibleFrom: Infinity,
  request: [
    f('transactional_id', 'nullable_string', 3),
    f('acks', 'int16'),
    f('timeout_ms', 'int32'),
    f('topic_data', array([
      f('name', 'string'),
      f('partition_data', array([f('index', 'int32'), f('records', 'nullable_bytes')])),
    ])),
  ],
  response: [
    f('responses', array([
      f('name', 'string'),
      f('partition_responses', array([
        f('index', 'int32'),
        f('error_code', 'int16'),
        f('base_offset', 'int64'),
        f('log_append_time_ms', 'int64', 2),
        f('log_start_offset', 'int64', 5),
        f('record_errors', array([
          f('batch_index', 'int32'), f('batch_index_error_message', 'nullable_string'),
        ]), 8),
        f('error_message', 'nullable_string', 8),
      ])),
    ])),
    f('throttle_time_ms', 'int32', 1),
  ],
};
