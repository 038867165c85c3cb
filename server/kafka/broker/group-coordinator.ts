/**
 * The consumer-group coordinator of one listener: Kafka's classic protocol (JoinGroup, SyncGroup,
 * Heartbeat, LeaveGroup) with KIP-394 member ids, an initial rebalance delay, session expiry and
 * rebalance timeouts. Groups are namespaced per project. Offsets are not kept here: the handlers
 * persist them through the engine; this class only validates commits against the group state.
 */
import { randomUUID } from 'node:crypto';
import { KafkaError } from '../protocol/errors.js';
import type { Struct } from '../protocol/schema.js';
import { Group, type Member, type MemberProtocol } from './group.js';
import { GROUP_INITIAL_REBALANCE_DELAY_MS, GROUP_MEMBERS_MAX, GROUP_SESSION_TIMEOUT_MS_MAX, GROUP_SESSION_TIMEOUT_MS_MIN } from '../../common/limits.js';

export interface JoinRequest {
  readonly projectId: string;
  readonly groupId: string;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly clientId: string;
  readonly sessionTimeoutMs: number;
  /** -1 for JoinGroup v0, which has none: the session timeout is used instead. */
  readonly rebalanceTimeoutMs: number;
  readonly protocolType: string;
  readonly protocols: readonly MemberProtocol[];
  /** v4+ requires a member id round trip (79 MEMBER_ID_REQUIRED). */
  readonly requireKnownMemberId: boolean;
}

export interface GroupCoordinatorOptions {
  readonly initialDelayMs?: number;
  readonly log?: (msg: string) => void;
}

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();
  private readonly initialDelayMs: number;
  private readonly log: (msg: string) => void;

  constructor(options: GroupCoordinatorOptions = {}) {
    this.initialDelayMs = options.initialDelayMs ?? GROUP_INITIAL_REBALANCE_DELAY_MS;
    this.log = options.log ?? (() => {});
  }

  private group(projectId: string, groupId: string, create: boolean): Group | undefined {
    const key = `${projectId}\u0000${groupId}`;
    let group = this.groups.get(key);
    if (!group && create) this.groups.set(key, (group = new Group(projectId, groupId)));
    return group;
  }

  join(req: JoinRequest): Promise<Struct> {
    const fail = (code: number, memberId = req.memberId): Promise<Struct> =>
      Promise.resolve(joinError(code, memberId));
    if (req.groupId === '') return fail(KafkaError.INVALID_GROUP_ID);
    if (req.sessionTimeoutMs < GROUP_SESSION_TIMEOUT_MS_MIN ||
        req.sessionTimeoutMs > GROUP_SESSION_TIMEOUT_MS_MAX) {
      return fail(KafkaError.INVALID_SESSION_TIMEOUT);
    }
    const group = this.group(req.projectId, req.groupId, true)!;
    const known = group.members.get(req.memberId);
    if (!known && !group.accepts(req.protocolType, req.protocols)) {
      return fail(KafkaError.INCONSISTENT_GROUP_PROTOCOL);
    }
    if (req.memberId === '') {
      if (group.members.size >= GROUP_MEMBERS_MAX) return fail(KafkaError.UNKNOWN_MEMBER_ID);
      const memberId = `${req.clientId}-${randomUUID()}`;
      if (req.requireKnownMemberId) {
        const timer = setTimeout(() => group.pendingIds.delete(memberId), req.sessionTimeoutMs);
        group.pendingIds.set(memberId, timer);
        return fail(KafkaError.MEMBER_ID_REQUIRED, memberId);
      }
      return this.addMemberAndRebalance(group, memberId, req);
    }
    if (!known) {
      const pending = group.pendingIds.get(req.memberId);
      if (pending === undefined) return fail(KafkaError.UNKNOWN_MEMBER_ID);
      clearTimeout(pending);
      group.pendingIds.delete(req.memberId);
    }
    return this.addMemberAndRebalance(group, req.memberId, req);
  }

  private addMemberAndRebalance(group: Group, memberId: string, req: JoinRequest): Promise<Struct> {
    return new Promise((resolve) => {
      let member = group.members.get(memberId);
      if (!member) {
        member = {
          id: memberId, groupInstanceId: null, clientId: '', sessionTimeoutMs: 0,
          rebalanceTimeoutMs: 0, protocolType: '', protocols: [], assignment: Buffer.alloc(0),
          pendingJoin: null, pendingSync: null, sessionTimer: null,
        };
        group.members.set(memberId, member);
      }
      member.groupInstanceId = req.groupInstanceId;
      member.clientId = req.clientId;
      member.sessionTimeoutMs = req.sessionTimeoutMs;
      member.rebalanceTimeoutMs = req.rebalanceTimeoutMs < 0
        ? req.sessionTimeoutMs : req.rebalanceTimeoutMs;
      member.protocolType = req.protocolType;
      member.protocols = req.protocols;
      // A second join from the same member replaces the first; the old one is told to retry.
      member.pendingJoin?.(joinError(KafkaError.REBALANCE_IN_PROGRESS, memberId));
      member.pendingJoin = resolve;
      this.touch(group, member);
      if (group.state !== 'PreparingRebalance') this.prepareRebalance(group);
      else this.tryCompleteJoin(group);
    });
  }

  private prepareRebalance(group: Group): void {
    const wasEmpty = group.state === 'Empty';
    for (const member of group.members.values()) {
      member.pendingSync?.(syncError(KafkaError.REBALANCE_IN_PROGRESS));
      member.pendingSync = null;
    }
    group.state = 'PreparingRebalance';
    if (group.joinTimer) clearTimeout(group.joinTimer);
    group.joinTimer = setTimeout(() => this.onJoinDeadline(group), group.rebalanceTimeoutMs());
    if (wasEmpty) {
      group.initialDelay = true;
      setTimeout(() => {
        group.initialDelay = false;
        this.tryCompleteJoin(group);
      }, Math.min(this.initialDelayMs, group.rebalanceTimeoutMs()));
    }
    this.log(`group ${group.groupId}: preparing rebalance (generation ${group.generation})`);
  }

  private tryCompleteJoin(group: Group): void {
    if (group.state !== 'PreparingRebalance' || group.initialDelay) return;
    if (group.members.size > 0 && group.allJoined()) this.completeJoin(group);
  }

  /** Rebalance timeout: members that did not rejoin are dropped and the join completes. */
  private onJoinDeadline(group: Group): void {
    group.joinTimer = null;
    if (group.state !== 'PreparingRebalance') return;
    for (const member of [...group.members.values()]) {
      if (member.pendingJoin === null) this.dropMember(group, member);
    }
    group.initialDelay = false;
    if (group.members.size === 0) this.becomeEmpty(group);
    else this.completeJoin(group);
  }

  private completeJoin(group: Group): void {
    if (group.joinTimer) clearTimeout(group.joinTimer);
    group.joinTimer = null;
    const first = group.members.values().next().value as Member;
    group.generation += 1;
    group.protocolType = first.protocolType;
    group.protocolName = group.selectProtocol();
    if (group.leaderId === null || !group.members.has(group.leaderId)) group.leaderId = first.id;
    group.state = 'CompletingRebalance';
    const members = [...group.members.values()].map((m) => ({
      member_id: m.id,
      group_instance_id: m.groupInstanceId,
      metadata: m.protocols.find((p) => p.name === group.protocolName)?.metadata ?? Buffer.alloc(0),
    }));
    this.log(`group ${group.groupId}: generation ${group.generation}, ${members.length} members`);
    for (const member of group.members.values()) {
      const answer = member.pendingJoin!;
      member.pendingJoin = null;
      member.assignment = Buffer.alloc(0);
      this.touch(group, member);
      answer({
        error_code: KafkaError.NONE,
        generation_id: group.generation,
        protocol_name: group.protocolName ?? '',
        leader: group.leaderId,
        member_id: member.id,
        members: member.id === group.leaderId ? members : [],
      });
    }
  }

  sync(projectId: string, groupId: string, generation: number, memberId: string,
    assignments: readonly { member_id: string; assignment: Buffer }[]): Promise<Struct> {
    const group = this.group(projectId, groupId, false);
    const member = group?.members.get(memberId);
    if (!group || !member) return Promise.resolve(syncError(KafkaError.UNKNOWN_MEMBER_ID));
    if (generation !== group.generation) {
      return Promise.resolve(syncError(KafkaError.ILLEGAL_GENERATION));
    }
    this.touch(group, member);
    if (group.state === 'PreparingRebalance') {
      return Promise.resolve(syncError(KafkaError.REBALANCE_IN_PROGRESS));
    }
    if (group.state === 'Stable') return Promise.resolve(syncOk(member.assignment));
    return new Promise((resolve) => {
      member.pendingSync = resolve;
      if (memberId !== group.leaderId) return;
      const byMember = new Map(assignments.map((a) => [a.member_id, a.assignment]));
      group.state = 'Stable';
      for (const m of group.members.values()) {
        m.assignment = byMember.get(m.id) ?? Buffer.alloc(0);
        m.pendingSync?.(syncOk(m.assignment));
        m.pendingSync = null;
      }
    });
  }

  heartbeat(projectId: string, groupId: string, generation: number, memberId: string): number {
    const group = this.group(projectId, groupId, false);
    const member = group?.members.get(memberId);
    if (!group || !member) return KafkaError.UNKNOWN_MEMBER_ID;
    if (generation !== group.generation) return KafkaError.ILLEGAL_GENERATION;
    this.touch(group, member);
    if (group.state === 'PreparingRebalance') return KafkaError.REBALANCE_IN_PROGRESS;
    return KafkaError.NONE;
  }

  /** Removes one member; returns 25 when it is unknown. */
  leave(projectId: string, groupId: string, memberId: string): number {
    const group = this.group(projectId, groupId, false);
    const member = group?.members.get(memberId);
    if (!group || !member) return KafkaError.UNKNOWN_MEMBER_ID;
    this.log(`group ${groupId}: member ${memberId} left`);
    this.removeAndRebalance(group, member);
    return KafkaError.NONE;
  }

  /** Kafka's validateOffsetCommit (spec §3): 0, 25, 22 or 27. */
  validateCommit(projectId: string, groupId: string, generation: number, memberId: string): number {
    const group = this.group(projectId, groupId, false);
    if (!group || group.state === 'Empty') {
      return generation < 0 && memberId === '' ? KafkaError.NONE : KafkaError.UNKNOWN_MEMBER_ID;
    }
    if (generation < 0 && memberId === '') return KafkaError.UNKNOWN_MEMBER_ID;
    const member = group.members.get(memberId);
    if (!member) return KafkaError.UNKNOWN_MEMBER_ID;
    if (generation !== group.generation) return KafkaError.ILLEGAL_GENERATION;
    if (group.state === 'CompletingRebalance') return KafkaError.REBALANCE_IN_PROGRESS;
    this.touch(group, member);
    return KafkaError.NONE;
  }

  /** Restarts a member's session timer; expiry removes it, unless its JoinGroup is parked. */
  private touch(group: Group, member: Member): void {
    if (member.sessionTimer) clearTimeout(member.sessionTimer);
    member.sessionTimer = setTimeout(() => {
      member.sessionTimer = null;
      if (group.members.get(member.id) !== member) return;
      if (member.pendingJoin !== null) return this.touch(group, member);
      this.log(`group ${group.groupId}: member ${member.id} session expired`);
      this.removeAndRebalance(group, member);
    }, member.sessionTimeoutMs);
  }

  private removeAndRebalance(group: Group, member: Member): void {
    this.dropMember(group, member);
    if (group.members.size === 0) {
      this.becomeEmpty(group);
    } else if (group.state === 'PreparingRebalance') {
      this.tryCompleteJoin(group);
    } else {
      this.prepareRebalance(group);
    }
  }

  private dropMember(group: Group, member: Member): void {
    if (member.sessionTimer) clearTimeout(member.sessionTimer);
    member.pendingJoin?.(joinError(KafkaError.UNKNOWN_MEMBER_ID, member.id));
    member.pendingSync?.(syncError(KafkaError.UNKNOWN_MEMBER_ID));
    group.members.delete(member.id);
    if (group.leaderId === member.id) group.leaderId = null;
  }

  private becomeEmpty(group: Group): void {
    if (group.joinTimer) clearTimeout(group.joinTimer);
    group.joinTimer = null;
    group.state = 'Empty';
    group.generation += 1;
    group.leaderId = null;
    group.protocolName = null;
    group.protocolType = null;
  }

  /** Stops every timer and answers parked requests (listener shutdown). */
  close(): void {
    for (const group of this.groups.values()) {
      for (const member of [...group.members.values()]) this.dropMember(group, member);
      for (const timer of group.pendingIds.values()) clearTimeout(timer);
      if (group.joinTimer) clearTimeout(group.joinTimer);
    }
    this.groups.clear();
  }
}

function joinError(code: number, memberId: string): Struct {
  return {
    error_code: code, generation_id: -1, protocol_name: '', leader: '', member_id: memberId,
    members: [],
  };
}

function syncError(code: number): Struct {
  return { error_code: code, assignment: Buffer.alloc(0) };
}

function syncOk(assignment: Buffer): Struct {
  return { error_code: KafkaError.NONE, assignment };
}
