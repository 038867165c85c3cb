/**
 * FindCoordinator: outside a cluster we coordinate every group, at the same host and port as in
 * Metadata. In a cluster every node names the same coordinator for a group (ClusterView's
 * coordinatorOf: the first owner of the partition of `<project>/<group>`), which keeps the group's
 * members and committed offsets; the group APIs asked of another node answer NOT_COORDINATOR.
 */
import { KafkaError } from '../../protocol/errors.js';
import type { BrokerContext, Session } from '../context.js';
import { brokerAddress } from './metadata.js';
import type { Handler } from './handler.js';

export const handleFindCoordinator: Handler = async (ctx, session, request) => {
  const isGroup = (request.body.key_type ?? 0) === 0;
  const nodeId = ctx.cluster?.coordinatorOf(session.projectId!, request.body.key as string) ?? ctx.nodeId;
  const { host, port } = brokerAddress(ctx, nodeId);
  return {
    throttle_time_ms: 0,
    error_code: isGroup ? KafkaError.NONE : KafkaError.COORDINATOR_NOT_AVAILABLE,
    error_message: isGroup ? null : 'Transactions are not supported.',
    node_id: isGroup ? nodeId : -1,
    host: isGroup ? host : '',
    port: isGroup ? port : -1,
  };
};

/** In a cluster, true when another node coordinates the group. */
export function notCoordinator(ctx: BrokerContext, session: Session, groupId: string): boolean {
  return ctx.cluster !== undefined && ctx.cluster.coordinatorOf(session.projectId!, groupId) !== ctx.nodeId;
}
