/** The group coordinator alone: KIP-394 ids, leader/follower sync, session expiry, commits. */
import t from 'tap';
import { KafkaError } from '../../../../../server/kafka/protocol/errors.js';
import { GroupCoordinator, type JoinRequest } from '../../../../../server/kafka/broker/group-coordinator.js';

const base: JoinRequest = {
  projectId: 'p', groupId: 'g', memberId: '', groupInstanceId: null, clientId: 'c',
  sessionTimeoutMs: 6000, rebalanceTimeoutMs: 10_000, protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: Buffer.from('m') }], requireKnownMemberId: true,
};

async function joinNew(groups: GroupCoordinator, req: Partial<JoinRequest> = {}) {
  const first = await groups.join({ ...base, ...req });
  if (first.error_code !== KafkaError.MEMBER_ID_REQUIRED) throw new Error(`expected 79, got ${first.error_code}`);
  return first.member_id as string;
}

t.test('two members: one generation, leader syncs, follower parks until then', async (t) => {
  const groups = new GroupCoordinator({ initialDelayMs: 50 });
  t.teardown(() => groups.close());
  const m1 = await joinNew(groups);
  const m2 = await joinNew(groups);
  const [j1, j2] = await Promise.all([groups.join({ ...base, memberId: m1 }), groups.join({ ...base, memberId: m2 })]);
  t.equal(j1.generation_id, 1);
  t.equal(j2.generation_id, 1);
  t.equal(j1.leader, m1);
  t.equal(j1.members.length, 2, 'the leader sees every member');
  t.equal(j2.members.length, 0, 'a follower sees none');
  const follower = groups.sync('p', 'g', 1, m2, []);
  t.equal(groups.heartbeat('p', 'g', 1, m2), KafkaError.NONE, 'heartbeats in CompletingRebalance are fine');
  t.equal(groups.validateCommit('p', 'g', 1, m1), KafkaError.REBALANCE_IN_PROGRESS);
  const leader = await groups.sync('p', 'g', 1, m1, [
    { member_id: m1, assignment: Buffer.from('a1') }, { member_id: m2, assignment: Buffer.from('a2') },
  ]);
  t.equal(leader.assignment.toString(), 'a1');
  t.equal((await follower).assignment.toString(), 'a2');
  t.equal(groups.validateCommit('p', 'g', 1, m2), KafkaError.NONE);
  t.equal(groups.validateCommit('p', 'g', 0, m2), KafkaError.ILLEGAL_GENERATION);
  t.equal(groups.heartbeat('p', 'g', 1, 'nobody'), KafkaError.UNKNOWN_MEMBER_ID);
  t.equal(groups.heartbeat('p2', 'g', 1, m1), KafkaError.UNKNOWN_MEMBER_ID, 'groups are per project');
});

t.test('a member that stops heartbeating expires and the group rebalances', async (t) => {
  const groups = new GroupCoordinator({ initialDelayMs: 10 });
  t.teardown(() => groups.close());
  const m1 = await joinNew(groups);
  const m2 = await joinNew(groups);
  await Promise.all([groups.join({ ...base, memberId: m1 }), groups.join({ ...base, memberId: m2 })]);
  await groups.sync('p', 'g', 1, m1, []);
  const started = Date.now();
  let code: number = KafkaError.NONE;
  // m1 keeps heartbeating; m2 is silent and expires after its 6 s session.
  while (code === KafkaError.NONE && Date.now() - started < 9000) {
    await new Promise((r) => setTimeout(r, 500));
    code = groups.heartbeat('p', 'g', 1, m1);
  }
  t.equal(code, KafkaError.REBALANCE_IN_PROGRESS, `rebalance after ${Date.now() - started} ms`);
  const rejoin = await groups.join({ ...base, memberId: m1 });
  t.equal(rejoin.generation_id, 2);
  t.same(rejoin.members.map((m: { member_id: string }) => m.member_id), [m1], 'only the live member remains');
});

t.test('join rejections: unknown id, bad session timeout, no common protocol', async (t) => {
  const groups = new GroupCoordinator({ initialDelayMs: 10 });
  t.teardown(() => groups.close());
  t.equal((await groups.join({ ...base, memberId: 'forged' })).error_code, KafkaError.UNKNOWN_MEMBER_ID);
  t.equal((await groups.join({ ...base, sessionTimeoutMs: 1000 })).error_code, KafkaError.INVALID_SESSION_TIMEOUT);
  const m1 = await joinNew(groups);
  await groups.join({ ...base, memberId: m1 });
  const other = await groups.join({ ...base, protocols: [{ name: 'RoundRobinAssigner', metadata: Buffer.alloc(0) }] });
  t.equal(other.error_code, KafkaError.INCONSISTENT_GROUP_PROTOCOL);
  const v2 = await groups.join({ ...base, groupId: 'old', requireKnownMemberId: false });
  t.equal(v2.error_code, KafkaError.NONE, 'JoinGroup v0–3 gets an id without the round trip');
  t.equal(groups.leave('p', 'g', m1), KafkaError.NONE);
  t.equal(groups.validateCommit('p', 'g', -1, ''), KafkaError.NONE, 'standalone commits on an empty group');
});
