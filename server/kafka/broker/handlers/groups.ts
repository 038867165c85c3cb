/**
 * JoinGroup, SyncGroup, Heartbeat and LeaveGroup: role check (outbound only, else 30), then one
 * call into the group coordinator. The coordinator owns all group semantics.
 */
import { KafkaError } from '../../protocol/errors.js';
import type { Struct } from '../../protocol/schema.js';
import type { BrokerContext } from '../context.js';
import type { Handler } from './handler.js';

function denied(ctx: BrokerContext): boolean {
  return ctx.role !== 'out';
}

export const handleJoinGroup: Handler = async (ctx, session, request) => {
  const b = request.body;
  if (denied(ctx)) {
    const error_code = KafkaError.GROUP_AUTHORIZATION_FAILED;
    return { error_code, generation_id: -1, member_id: b.member_id };
  }
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
  if (denied(ctx)) return { error_code: KafkaError.GROUP_AUTHORIZATION_FAILED };
  const response = await ctx.groups.sync(
    session.projectId!, b.group_id, b.generation_id, b.member_id, b.assignments);
  return { throttle_time_ms: 0, ...response };
};

export const handleHeartbeat: Handler = async (ctx, session, request) => {
  const b = request.body;
  if (denied(ctx)) return { error_code: KafkaError.GROUP_AUTHORIZATION_FAILED };
  const code = ctx.groups.heartbeat(session.projectId!, b.group_id, b.generation_id, b.member_id);
  return { throttle_time_ms: 0, error_code: code };
};

export const handleLeaveGroup: Handler = async (ctx, session, request) => {
  const b = request.body;
  if (denied(ctx)) return { error_code: KafkaError.GROUP_AUTHORIZATION_FAILED, members: [] };
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
