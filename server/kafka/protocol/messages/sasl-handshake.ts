/**
 * SaslHandshake (17), v0–1. After v0 the client sends the SASL token as a bare frame (no header);
 * after v1 it sends SaslAuthenticate requests.
 *
 *   request:  mechanism string
 *   response: error_code int16, mechanisms [string]
 */
import { array, f, type MessageSpec } from '../schema.js';

export const saslHandshake: MessageSpec = {
  apiKey: 17, name: 'SaslHandshake', minVersion: 0, maxVersion: 1, flexibleFrom: Infinity,
  request: [f('mechanism', 'string')],
  response: [f('error_code', 'int16'), f('mechanisms', array('string'))],
};
