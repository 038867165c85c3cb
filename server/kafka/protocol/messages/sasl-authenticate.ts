/**
 * SaslAuthenticate (36), v0–1.
 *
 *   request:  auth_bytes bytes
 *   response: error_code int16, error_message nullable_string, auth_bytes bytes,
 *             v1+ session_lifetime_ms int64 (0: never re-authenticate)
 */
import { f, type MessageSpec } from '../schema.js';

export const saslAuthenticate: MessageSpec = {
  apiKey: 36, name: 'SaslAuthenticate', minVersion: 0, maxVersion: 1, flexibleFrom: Infinity,
  request: [f('auth_bytes', 'bytes')],
  response: [
    f('error_code', 'int16'),
    f('error_message', 'nullable_string'),
    f('auth_bytes', 'bytes'),
    f('session_lifetime_ms', 'int64', 1),
  ],
};
