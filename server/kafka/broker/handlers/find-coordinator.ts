/** FindCoordinator: we coordinate every group, at the same host and port as in Metadata. */
import { KafkaError } from '../../protocol/errors.js';
import type { Handler } from './handler.js';

export const handleFindCoordinator: Handler = async (ctx, session, request) => {
  const isGroup = (request.body.key_type ?? 0) === 0;
  return {
    throttle_time_ms: 0,
    error_code: isGroup ? KafkaError.NONE : KafkaError.COORDINATOR_NOT_AVAILABLE,
    error_message: isGroup ? null : 'Transactions are not supported.',
    node_id: isGroup ? ctx.nodeId : -1,
    host: isGroup ? ctx.advertisedHost : '',
    port: isGroup ? ctx.advertisedPort : -1,
  };
};
