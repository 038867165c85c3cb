/**
 * InitProducerId for idempotent producers: a fresh id per call. Transactions are not supported.
 * Sequence numbers are accepted as they come (no duplicate detection yet).
 */
import { KafkaError } from '../../protocol/errors.js';
import type { Handler } from './handler.js';

export const handleInitProducerId: Handler = async (ctx, session, request) => {
  if (request.body.transactional_id !== null) {
    return {
      throttle_time_ms: 0, error_code: KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
      producer_id: -1, producer_epoch: -1,
    };
  }
  const producer_id = ctx.nextProducerId++;
  return { throttle_time_ms: 0, error_code: KafkaError.NONE, producer_id, producer_epoch: 0 };
};
