/**
 * OffsetCommit (8), v0–7.
 *
 *   request:  group_id string, v1+ generation_id int32, v1+ member_id string,
 *             v7+ group_instance_id nullable_string, v2–4 retention_time_ms int64,
 *             topics [name string, partitions [partition_index int32, committed_offset int64,
 *                     v6+ committed_leader_epoch int32, v1 commit_timestamp int64,
 *                     committed_metadata nullable_string]]
 *   response: v3+ throttle_time_ms int32,
 *             topics [name string, partitions [partition_index int32, error_code int16]]
 */
import { array, f, type MessageSpec } from '../schema.js';

export const offsetCommit: MessageSpec = {
  apiKey: 8, name: 'OffsetCommit', minVersion: 0, maxVersion: 7, flexibleFrom: Infinity,
  request: [
    f('group_id', 'string'),
    f('generation_id', 'int32', 1),
    f('member_id', 'string', 1),
    f('group_instance_id', 'nullable_string', 7),
    f('retention_time_ms', 'int64', 2, 4),
    f('topics', array([
      f('name', 'string'),
      f('partitions', array([
        f('partition_index', 'int32'),
        f('committed_offset', 'int64'),
        f('committed_leader_epoch', 'int32', 6),
        f('commit_timestamp', 'int64', 1, 1),
        f('committed_metadata', 'nullable_string'),
      ])),
    ])),
  ],
  response: [
    f('throttle_time_ms', 'int32', 3),
    f('topics', array([
      f('name', 'string'),
      f('partitions', array([f('partition_index', 'int32'), f('error_code', 'int16')])),
    ])),
  ],
};
