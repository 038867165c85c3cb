/**
 * FindCoordinator (10), v0–2. We are always the coordinator; host and port equal Metadata's.
 *
 *   request:  key string, v1+ key_type int8
 *   response: v1+ throttle_time_ms int32, error_code int16, v1+ error_message nullable_string,
 *             node_id int32, host string, port int32
 */
import { f, type MessageSpec } from '../schema.js';

export const findCoordinator: MessageSpec = {
  apiKey: 10, name: 'FindCoordinator', minVersion: 0, maxVersion: 2, flexibleFrom: Infinity,
  request: [f('key', 'string'), f('key_type', 'int8', 1)],
  response: [
    f('throttle_time_ms', 'int32', 1),
    f('error_code', 'int16'),
    f('error_message', 'nullable_string', 1),
    f('node_id', 'int32'),
    f('host', 'string'),
    f('port', 'int32'),
  ],
};
