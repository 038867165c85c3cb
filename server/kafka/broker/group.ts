/**
 * The state of one consumer group of the classic protocol (docs/kafka-protocol.md §3): members,
 * generation, leader, chosen protocol, and the parked JoinGroup/SyncGroup responses. It holds data
 * and pure helpers; the transitions live in group-coordinator.ts.
 */
import type { Struct } from '../protocol/schema.js';

export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable';

export interface MemberProtocol {
  readonly name: string;
  readonly metadata: Buffer;
}

export interface Member {
  readonly id: string;
  groupInstanceId: string | null;
  clientId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: readonly MemberProtocol[];
  assignment: Buffer;
  /** Parked JoinGroup / SyncGroup answer, if any. */
  pendingJoin: ((response: Struct) => void) | null;
  pendingSync: ((response: Struct) => void) | null;
  sessionTimer: NodeJS.Timeout | null;
}

export class Group {
  state: GroupState = 'Empty';
  generation = 0;
  protocolType: string | null = null;
  protocolName: string | null = null;
  leaderId: string | null = null;
  readonly members = new Map<string, Member>();
  /** Member ids handed out with MEMBER_ID_REQUIRED, not yet joined, with their expiry timers. */
  readonly pendingIds = new Map<string, NodeJS.Timeout>();
  joinTimer: NodeJS.Timeout | null = null;
  /** True while the initial delay of a group that was Empty runs. */
  initialDelay = false;

  constructor(readonly projectId: string, readonly groupId: string) {}

  /** Protocol names every member supports. */
  commonProtocols(): string[] {
    let common: string[] | null = null;
    for (const member of this.members.values()) {
      const names = member.protocols.map((p) => p.name);
      common = common === null ? names : common.filter((n) => names.includes(n));
    }
    return common ?? [];
  }

  /** Kafka's selectProtocol: each member votes for its first common protocol; most votes wins. */
  selectProtocol(): string | null {
    const common = this.commonProtocols();
    if (common.length === 0) return null;
    const votes = new Map<string, number>();
    for (const member of this.members.values()) {
      const vote = member.protocols.find((p) => common.includes(p.name))!.name;
      votes.set(vote, (votes.get(vote) ?? 0) + 1);
    }
    let best = common[0]!;
    for (const name of common) if ((votes.get(name) ?? 0) > (votes.get(best) ?? 0)) best = name;
    return best;
  }

  /** Whether a joining member's protocols fit the group (type and at least one common name). */
  accepts(protocolType: string, protocols: readonly MemberProtocol[]): boolean {
    if (this.members.size === 0) return protocols.length > 0;
    if (this.protocolType !== null && this.protocolType !== protocolType) return false;
    const names = protocols.map((p) => p.name);
    return this.commonProtocols().some((n) => names.includes(n));
  }

  rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  allJoined(): boolean {
    for (const m of this.members.values()) if (m.pendingJoin === null) return false;
    return true;
  }
}
