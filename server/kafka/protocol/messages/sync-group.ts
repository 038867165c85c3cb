/**
 * SyncGroup (14), v0–3. The leader sends every member's assignment; followers send none.
 *
 *   request:  group_id string, generation_id int32, member_id string,
 *             v3+ group_instance_id nullable_string,
 *             assignments [member_id string, assignment bytes]
 *   response: v1+ throttle_time_ms int32, error_code int16, assignment bytes
 */
import { array, f, type MessageSpec } from '../schema.js';

export const syncGroup: MessageSpec = {
  apiKey: 14, name: 'SyncGroup', minVersion: 0, maxVersion: 3, flexibleFrom: Infinity,
  request: [
    f('group_id', 'string'),
    f('generation_id', 'int32'),
    f('member_id', 'string'),
    f('group_instance_id', 'nullable_string', 3),
    f('assignments', array([f('member_id', 'string'), f('assignment', 'bytes')])),
  ],
  response: [f('throttle_time_ms', 'int32', 1), f('error_code', 'int16'), f('assignment', 'bytes')],
};
