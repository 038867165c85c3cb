/**
 * JoinGroup (11), v0–5. Only the leader's response lists the members with their metadata.
 *
 *   request:  group_id string, session_timeout_ms int32, v1+ rebalance_timeout_ms int32,
 *             member_id string, v5+ group_instance_id nullable_string, protocol_type string,
 *             protocols [name string, metadata bytes]
 *   response: v2+ throttle_time_ms int32, error_code int16, generation_id int32,
 *             protocol_name string, leader string, member_id string,
 *             members [member_id string, v5+ group_instance_id nullable_string, metadata bytes]
 */
import { array, f, type MessageSpec } from '../schema.js';

export const joinGroup: MessageSpec = {
  apiKey: 11, name: 'JoinGroup', minVersion: 0, maxVersion: 5, flexibleFrom: Infinity,
  request: [
    f('group_id', 'string'),
    f('session_timeout_ms', 'int32'),
    f('rebalance_timeout_ms', 'int32', 1),
    f('member_id', 'string'),
    f('group_instance_id', 'nullable_string', 5),
    f('protocol_type', 'string'),
    f('protocols', array([f('name', 'string'), f('metadata', 'bytes')])),
  ],
  response: [
    f('throttle_time_ms', 'int32', 2),
    f('error_code', 'int16'),
    f('generation_id', 'int32'),
    f('protocol_name', 'string'),
    f('leader', 'string'),
    f('member_id', 'string'),
    f('members', array([
      f('member_id', 'string'),
      f('group_instance_id', 'nullable_string', 5),
      f('metadata', 'bytes'),
    ])),
  ],
};
