/**
 * LeaveGroup (13), v0–3. v0–2 name one member; v3 is batched.
 *
 *   request:  group_id string, v0–2 member_id string,
 *             v3+ members [member_id string, group_instance_id nullable_string]
 *   response: v1+ throttle_time_ms int32, error_code int16,
 *             v3+ members [member_id string, group_instance_id nullable_string, error_code int16]
 */
import { array, f, type MessageSpec } from '../schema.js';

export const leaveGroup: MessageSpec = {
  apiKey: 13, name: 'LeaveGroup', minVersion: 0, maxVersion: 3, flexibleFrom: Infinity,
  request: [
    f('group_id', 'string'),
    f('member_id', 'string', 0, 2),
    f('members', array([f('member_id', 'string'), f('group_instance_id', 'nullable_string')]), 3),
  ],
  response: [
    f('throttle_time_ms', 'int32', 1),
    f('error_code', 'int16'),
    f('members', array([
      f('member_id', 'string'), f('group_instance_id', 'nullable_string'), f('error_code', 'int16'),
    ]), 3),
  ],
};
