/**
 * InitProducerId for idempotent producers: a fresh id per call, never one handed out before, also
 * before a restart (producer-sequences.ts). Transactions are not supported.
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
  const producer_id = await ctx.sequences.newProducerId();
  return { throttle_time_ms: 0, error_code: KafkaError.NONE, producer_id, producer_epoch: 0 };
};
