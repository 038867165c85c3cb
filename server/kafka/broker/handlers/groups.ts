/**
 * JoinGroup, SyncGroup, Heartbeat and LeaveGroup: role check (outbound only, else 30), in a
 * cluster the coordinator check (16 when another node coordinates the group), then one call into
 * the group coordinator. The coordinator owns all group semantics.
 */
import { KafkaError } from '../../protocol/errors.js';
import type { Struct } from '../../protocol/schema.js';
import type { BrokerContext, Session } from '../context.js';
import { notCoordinator } from './find-coordinator.js';
import type { Handler } from './handler.js';

/** Why this listener does not serve the group's request, or NONE. */
function refusal(ctx: BrokerContext, session: Session, groupId: string): number {
  if (ctx.role !== 'out') return KafkaError.GROUP_AUTHORIZATION_FAILED;
  return notCoordinator(ctx, session, groupId) ? KafkaError.NOT_COORDINATOR : KafkaError.NONE;
}

export const handleJoinGroup: Handler = async (ctx, session, request) => {
  const b = request.body;
  const error_code = refusal(ctx, session, b.group_id);
  if (error_code !== KafkaError.NONE) return { error_code, generation_id: -1, member_id: b.member_id };
  const response = await ctx.groups.join({
    projectId: session.projectId!,
    groupId: b.group_id,
    memberId: b.member_id,
    groupInstanceId: b.group_instance_id ?? null,
    clientId: session.clientId ?? 'client',
    sessionTimeoutMs: b.session_timeout_ms,
    rebalanceTimeoutMs: b.rebalance_timeout_ms ?? -1,
    protocolType: b.protocol_type,
    protocols: b.protocols,
    requireKnownMemberId: request.header.api_version >= 4,
  });
  return { throttle_time_ms: 0, ...response };
};

export const handleSyncGroup: Handler = async (ctx, session, request) => {
  const b = request.body;
  const error_code = refusal(ctx, session, b.group_id);
  if (error_code !== KafkaError.NONE) return { error_code };
  const response = await ctx.groups.sync(
    session.projectId!, b.group_id, b.generation_id, b.member_id, b.assignments);
  return { throttle_time_ms: 0, ...response };
};

export const handleHeartbeat: Handler = async (ctx, session, request) => {
  const b = request.body;
  const error_code = refusal(ctx, session, b.group_id);
  if (error_code !== KafkaError.NONE) return { error_code };
  const code = ctx.groups.heartbeat(session.projectId!, b.group_id, b.generation_id, b.member_id);
  return { throttle_time_ms: 0, error_code: code };
};

export const handleLeaveGroup: Handler = async (ctx, session, request) => {
  const b = request.body;
  const refused = refusal(ctx, session, b.group_id);
  if (refused !== KafkaError.NONE) return { error_code: refused, members: [] };
  const leaving: { member_id: string; group_instance_id: string | null }[] =
    request.header.api_version >= 3
      ? b.members
      : [{ member_id: b.member_id, group_instance_id: null }];
  const members: Struct[] = leaving.map((m) => ({
    ...m, error_code: ctx.groups.leave(session.projectId!, b.group_id, m.member_id),
  }));
  const error_code = request.header.api_version < 3 ? members[0]!.error_code : KafkaError.NONE;
  return { throttle_time_ms: 0, error_code, members };
};
