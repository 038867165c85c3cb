/**
 * Heartbeat (12), v0–3.
 *
 *   request:  group_id string, generation_id int32, member_id string,
 *             v3+ group_instance_id nullable_string
 *   response: v1+ throttle_time_ms int32, error_code int16
 */
import { f, type MessageSpec } from '../schema.js';

export const heartbeat: MessageSpec = {
  apiKey: 12, name: 'Heartbeat', minVersion: 0, maxVersion: 3, flexibleFrom: Infinity,
  request: [
    f('group_id', 'string'),
    f('generation_id', 'int32'),
    f('member_id', 'string'),
    f('group_instance_id', 'nullable_string', 3),
  ],
  response: [f('throttle_time_ms', 'int32', 1), f('error_code', 'int16')],
};
