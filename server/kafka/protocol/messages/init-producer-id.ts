/**
 * InitProducerId (22), v0–1 (do not advertise 2+: librdkafka would use flexible v4).
 *
 *   request:  transactional_id nullable_string, transaction_timeout_ms int32
 *   response: throttle_time_ms int32, error_code int16, producer_id int64, producer_epoch int16
 */
import { f, type MessageSpec } from '../schema.js';

export const initProducerId: MessageSpec = {
  apiKey: 22, name: 'InitProducerId', minVersion: 0, maxVersion: 1, flexibleFrom: Infinity,
  request: [f('transactional_id', 'nullable_string'), f('transaction_timeout_ms', 'int32')],
  response: [
    f('throttle_time_ms', 'int32'),
    f('error_code', 'int16'),
    f('producer_id', 'int64'),
    f('producer_epoch', 'int16'),
  ],
};
