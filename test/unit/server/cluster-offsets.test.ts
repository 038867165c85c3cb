/**
 * The offsets a cluster node has stored per partition (server/cluster/offsets.ts): tags round-trip
 * and other tags are ignored; the file and the WAL's replayed tags merge (the larger offset wins)
 * and what only the WAL had is written to the file at once; persist writes only when changed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CLUSTER_OFFSETS_FILE, ConsumedOffsets } from '../../../server/cluster/offsets.js';

const dir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'tally-offsets-'));
const read = (d: string) => JSON.parse(fs.readFileSync(path.join(d, CLUSTER_OFFSETS_FILE), 'utf8'));

t.test('tags', async (t) => {
  const tag = ConsumedOffsets.tag('tally.events', 3, 41);
  t.same(ConsumedOffsets.parseTag(tag), ['tally.events', 3, 41]);
  t.equal(ConsumedOffsets.parseTag(JSON.stringify(['kafka', 'clicks', 1, 0, 0, 1])), null, "the Kafka listener's tags are not ours");
  t.equal(ConsumedOffsets.parseTag('not json'), null);
  t.equal(ConsumedOffsets.parseTag(JSON.stringify(['cluster', 't', 1.5, 2])), null);
});

t.test('file and replayed tags merge; persist writes what changed', async (t) => {
  const d = dir();
  const fresh = new ConsumedOffsets(d);
  t.same(read(d), { version: 1, topics: {} }, 'a first start writes an empty file');
  t.equal(fresh.last('tally.events', 0), -1);
  fresh.advance('tally.events', 0, 10);
  fresh.recordTag(ConsumedOffsets.tag('tally.events', 1, 5));
  fresh.recordTag('other');
  fresh.advance('tally.events', 0, 7); // never backwards
  await fresh.persist();
  t.same(read(d).topics, { 'tally.events': { 0: 10, 1: 5 } });
  const mtime = fs.statSync(path.join(d, CLUSTER_OFFSETS_FILE)).mtimeMs;
  await new Promise((r) => setTimeout(r, 20));
  await fresh.persist();
  t.equal(fs.statSync(path.join(d, CLUSTER_OFFSETS_FILE)).mtimeMs, mtime, 'nothing changed: not written');

  // A crash: the WAL's tags are ahead of the file for partition 1 and behind it for partition 0.
  const replayed = [
    { projectId: 'p', tag: ConsumedOffsets.tag('tally.events', 0, 8), firstOffset: 0 },
    { projectId: 'p', tag: ConsumedOffsets.tag('tally.events', 1, 9), firstOffset: 0 },
    { projectId: 'p', tag: ConsumedOffsets.tag('tally.events', 2, 0), firstOffset: 0 },
    { projectId: 'p', tag: JSON.stringify(['kafka', 'clicks', 1, 0, 0, 1]), firstOffset: 3 },
  ];
  const again = new ConsumedOffsets(d, { replayed });
  t.same([0, 1, 2, 3].map((p) => again.last('tally.events', p)), [10, 9, 0, -1]);
  t.same(read(d).topics, { 'tally.events': { 0: 10, 1: 9, 2: 0 } }, 'written back at open, before any flush');
  t.same([...again.partitions('tally.events')].sort(), [[0, 10], [1, 9], [2, 0]]);

  fs.writeFileSync(path.join(d, CLUSTER_OFFSETS_FILE), '{"torn');
  t.throws(() => new ConsumedOffsets(d), { message: /is not valid JSON/ }, 'a damaged file stops the start');
});
