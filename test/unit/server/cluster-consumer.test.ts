/**
 * How the cluster consumer (server/cluster/consumer.ts) turns fetched batches into engine appends,
 * with a stand-in engine and kafkajs batch: one append per run of one project's records, in
 * order, each tagged with its partition and last offset and marked stamped; undecodable records
 * and unknown projects skipped with the offset advanced past them; records the store has skipped.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ApiError, type AppendOptions, type EventToWrite } from '../../../engine/index.js';
import { LogConsumer, messageKey, parseMessageKey } from '../../../server/cluster/consumer.js';
import { ConsumedOffsets } from '../../../server/cluster/offsets.js';

interface Call { projectId: string; events: readonly EventToWrite[]; options: AppendOptions | undefined }

function setup() {
  const calls: Call[] = [];
  const engine = {
    events: {
      append: async (projectId: string, events: readonly EventToWrite[], _ctx: unknown, options?: AppendOptions) => {
        if (projectId === 'gone') throw new ApiError('ResourceNotFoundError', 'Project gone does not exist.');
        calls.push({ projectId, events, options });
        return events.map((_, i) => ({ ok: true as const, offset: i }));
      },
    },
  };
  const kafka = { consumer: () => ({}) };
  const offsets = new ConsumedOffsets(fs.mkdtempSync(path.join(os.tmpdir(), 'tally-consumer-')), { fsync: false });
  const logs: string[] = [];
  const consumer = new LogConsumer({
    kafka: kafka as never, engine: engine as never, topic: 'tally.events', partitions: [0, 1], offsets, nodeId: 1,
    log: (_level, msg) => logs.push(msg),
  });
  const resolved: string[] = [];
  const run = (partition: number, records: [number, string | null, unknown][]) => (consumer as unknown as {
    eachBatch(payload: unknown): Promise<void>;
  }).eachBatch({
    batch: {
      topic: 'tally.events', partition,
      lastOffset: () => String(records.at(-1)![0]),
      messages: records.map(([offset, key, value]) => ({
        offset: String(offset), key: key === null ? null : Buffer.from(key),
        value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
      })),
    },
    resolveOffset: (offset: string) => resolved.push(offset),
    heartbeat: async () => {},
    isRunning: () => true,
    isStale: () => false,
  });
  return { calls, offsets, logs, resolved, run, consumer };
}

t.test('message keys', async (t) => {
  t.equal(messageKey('p1', 'a/b'), 'p1/a/b');
  t.same(parseMessageKey('p1/a/b'), ['p1', 'a/b'], 'a collection name may hold "/"');
  t.equal(parseMessageKey('p1'), null);
  t.equal(parseMessageKey('/c'), null);
  t.equal(parseMessageKey('p1/'), null);
});

t.test('runs per project, in order, tagged, stamped; skipped records advance the offset', async (t) => {
  const { calls, offsets, logs, resolved, run, consumer } = setup();
  await run(0, [
    [0, 'A/clicks', { n: 0 }],
    [1, 'A/views', { n: 1 }],
    [2, 'B/clicks', { n: 2 }],
    [3, 'B/clicks', 'not json'],
    [4, null, { n: 4 }],
    [5, 'A/clicks', { n: 5 }],
  ]);
  t.same(calls.map((c) => [c.projectId, c.events.map((e) => [e.collection, (e.event as { n: number }).n]), c.options]), [
    ['A', [['clicks', 0], ['views', 1]], { stamped: true, tag: ConsumedOffsets.tag('tally.events', 0, 1) }],
    ['B', [['clicks', 2]], { stamped: true, tag: ConsumedOffsets.tag('tally.events', 0, 4) }],
    ['A', [['clicks', 5]], { stamped: true, tag: ConsumedOffsets.tag('tally.events', 0, 5) }],
  ]);
  t.same(resolved, ['1', '4', '5'], 'kafkajs moves on only past what is stored');
  t.equal(offsets.last('tally.events', 0), 5);
  t.equal(consumer.skipped, 2);
  t.equal(logs.filter((m) => /no Tally event/.test(m)).length, 2);

  // Fetched again (a seek raced a fetch): nothing appended twice, and kafkajs is moved past it.
  calls.length = 0;
  resolved.length = 0;
  await run(0, [[4, 'A/clicks', { n: 4 }], [5, 'A/clicks', { n: 5 }], [6, 'A/clicks', { n: 6 }]]);
  t.same(calls.map((c) => c.events.length), [1], 'only offset 6');
  t.same(resolved, ['5', '6']);

  // An unknown project: skipped, logged, offset advanced; another partition is its own.
  calls.length = 0;
  await run(1, [[0, 'gone/c', { n: 0 }], [1, 'A/c', { n: 1 }]]);
  t.same(calls.map((c) => c.options?.tag), [ConsumedOffsets.tag('tally.events', 1, 1)]);
  t.equal(offsets.last('tally.events', 1), 1);
  t.ok(logs.some((m) => /unknown project/.test(m)));
  // A partition this node does not own is left alone.
  calls.length = 0;
  await run(2, [[0, 'A/c', { n: 0 }]]);
  t.same(calls, []);
});
