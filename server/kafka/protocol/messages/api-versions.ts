/**
 * ApiVersions (18), v0–3. v3 is flexible in its body, but its response header never carries a
 * tag section (frame.ts handles that exception). An unsupported version is answered with a v0 body.
 *
 *   request v3:  client_software_name compact_string, client_software_version compact_string, tags
 *   response:    error_code int16, api_keys [api_key int16, min_version int16, max_version int16],
 *                v1+ throttle_time_ms int32
 */
import { array, f, type MessageSpec } from '../schema.js';

export const apiVersions: MessageSpec = {
  apiKey: 18, name: 'ApiVersions', minVersion: 0, maxVersion: 3, flexibleFrom: 3,
  request: [
    f('client_software_name', 'string', 3),
    f('client_software_version', 'string', 3),
  ],
  response: [
    f('error_code', 'int16'),
    f('api_keys', array([
      f('api_key', 'int16'), f('min_version', 'int16'), f('max_version', 'int16'),
    ])),
    f('throttle_time_ms', 'int32', 1),
  ],
};
