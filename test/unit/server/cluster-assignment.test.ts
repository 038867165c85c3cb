/**
 * The static assignment of the events topic's partitions (server/cluster/assignment.ts): partition
 * p on the nodes at positions (p + k) mod N, k < R; a key's partition is the producer's.
 */
import t from 'tap';
import { Partitioners } from 'kafkajs';
import { Assignment } from '../../../server/cluster/assignment.js';

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
