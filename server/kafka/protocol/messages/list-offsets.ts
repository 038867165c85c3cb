/**
 * ListOffsets (2), v0–5. Timestamp -1 = latest, -2 = earliest. v0 answers with an array of
 * offsets instead of one (timestamp, offset) pair.
 *
 *   request:  replica_id int32, v2+ isolation_level int8,
 *             topics [name string, partitions [partition_index int32,
 *                     v4+ current_leader_epoch int32,
 *                     timestamp int64, v0 max_num_offsets int32]]
 *   response: v2+ throttle_time_ms int32,
 *             topics [name string, partitions [partition_index int32, error_code int16,
 *                     v0 old_style_offsets [int64], v1+ timestamp int64, v1+ offset int64,
 *                     v4+ leader_epoch int32]]
 */
import { array, f, type MessageSpec } from '../schema.js';

export const listOffsets: MessageSpec = {
  apiKey: 2, name: 'ListOffsets', minVersion: 0, maxVersion: 5, flexibleFrom: Infinity,
  request: [
    f('replica_id', 'int32'),
    f('isolation_level', 'int8', 2),
    f('topics', array([
      f('name', 'string'),
      f('partitions', array([
        f('partition_index', 'int32'),
        f('current_leader_epoch', 'int32', 4),
        f('timestamp', 'int64'),
        f('max_num_offsets', 'int32', 0, 0),
      ])),
    ])),
  ],
  response: [
    f('throttle_time_ms', 'int32', 2),
    f('topics', array([
      f('name', 'string'),
      f('partitions', array([
        f('partition_index', 'int32'),
        f('error_code', 'int16'),
        f('old_style_offsets', array('int64'), 0, 0),
        f('timestamp', 'int64', 1),
        f('offset', 'int64', 1),
        f('leader_epoch', 'int32', 4),
      ])),
    ])),
  ],
};
