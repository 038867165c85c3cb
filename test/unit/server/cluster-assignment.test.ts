/**
 * The static assignment of the events topic's partitions (server/cluster/assignment.ts): partition
 * p on the nodes at positions (p + k) mod N, k < R; a key's partition is the producer's.
 */
import t from 'tap';
import { Partitioners } from 'kafkajs';
import { Assignment } from '../../../server/cluster/assignment.js';
import { outboundView } from '../../../server/cluster/outbound.js';

const nodes = [{ id: 2, url: 'http://a:1' }, { id: 5, url: 'http://b:1' }, { id: 9, url: 'http://c:1' }];

t.test('owners and owned partitions', async (t) => {
  const one = new Assignment(nodes, 1, 7, 'tally.events');
  t.same(one.ownersOf(0).map((m) => m.id), [2]);
  t.same(one.ownersOf(4).map((m) => m.id), [5]);
  t.same([2, 5, 9].map((id) => one.ownedBy(id)), [[0, 3, 6], [1, 4], [2, 5]], 'R = 1: each partition on one node');
  const two = new Assignment(nodes, 2, 7, 'tally.events');
  t.same(two.ownersOf(2).map((m) => m.id), [9, 2]);
  t.same(two.ownedBy(2), [0, 2, 3, 5, 6]);
  for (let p = 0; p < 7; p++) t.equal(two.ownersOf(p).length, 2, `partition ${p} on two nodes`);
});

t.test('a key goes to the partition the producer sends it to', async (t) => {
  const producer = Partitioners.DefaultPartitioner();
  const assignment = new Assignment(nodes, 1, 12, 'tally.events');
  const metadata = Array.from({ length: 12 }, (_, partitionId) => ({ partitionId, leader: 1 }));
  for (const key of ['p1/clicks', 'abc/views', 'x/y/z', 'project/ünïcode']) {
    t.equal(assignment.partitionOf(key), producer({ topic: 'tally.events', partitionMetadata: metadata as never, message: { key: Buffer.from(key), value: null } }), key);
  }
});

t.test('the outbound view: every node a broker, a collection led by its first owner, one coordinator per group', async (t) => {
  const members = [{ id: 2, url: 'http://a:1', kafka: 'ka:19093' }, { id: 5, url: 'http://[::1]:8080' }, { id: 9, url: 'https://c:443' }];
  const view = outboundView({ nodes: members, self: 9, replicas: 2, topic: 'tally.events', partitions: 7 });
  t.equal(view.self, 9);
  t.same(view.brokers, [{ nodeId: 2, host: 'ka', port: 19093 }, { nodeId: 5, host: '::1', port: 9093 }, { nodeId: 9, host: 'c' }],
    'the given address; else the URL\'s host and 9093, and this node\'s own listener port');
  const assignment = new Assignment(members, 2, 7, 'tally.events');
  for (const collection of ['clicks', 'views', 'a/b']) {
    t.same(view.ownersOf('p1', collection), assignment.ownersOf(assignment.partitionOf(`p1/${collection}`)).map((m) => m.id), collection);
    t.equal(view.ownersOf('p1', collection).length, 2);
  }
  t.equal(view.coordinatorOf('p1', 'g'), assignment.ownersOf(assignment.partitionOf('p1/g'))[0]!.id, 'the group\'s key decides');
});
