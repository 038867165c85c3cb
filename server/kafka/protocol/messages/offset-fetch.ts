/**
 * OffsetFetch (9), v0–5 (do not advertise 6+: librdkafka would switch to flexible v7).
 *
 *   request:  group_id string, topics [name string, partition_indexes [int32]] (nullable v2+)
 *   response: v3+ throttle_time_ms int32,
 *             topics [name string, partitions [partition_index int32, committed_offset int64,
 *                     v5+ committed_leader_epoch int32, metadata nullable_string,
 *                     error_code int16]],
 *             v2+ error_code int16
 */
import { array, f, type MessageSpec } from '../schema.js';

export const offsetFetch: MessageSpec = {
  apiKey: 9, name: 'OffsetFetch', minVersion: 0, maxVersion: 5, flexibleFrom: Infinity,
  request: [
    f('group_id', 'string'),
    f('topics', array([f('name', 'string'), f('partition_indexes', array('int32'))], 2)),
  ],
  response: [
    f('throttle_time_ms', 'int32', 3),
    f('topics', array([
      f('name', 'string'),
      f('partitions', array([
        f('partition_index', 'int32'),
        f('committed_offset', 'int64'),
        f('committed_leader_epoch', 'int32', 5),
        f('metadata', 'nullable_string'),
        f('error_code', 'int16'),
      ])),
    ])),
    f('error_code', 'int16', 2),
  ],
};
