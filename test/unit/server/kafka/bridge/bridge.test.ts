/**
 * The bridge against another Tally's built-in listeners as the "external cluster": it consumes
 * B's outbound topic into A's engine, and produces A's enriched events to B's inbound listener.
 */
import t from 'tap';
import { startTestBroker } from '../../../../helpers/kafka/broker.js';
import { openTestEngine } from '../../../../helpers/kafka/engine.js';
import { startKafkaBridge } from '../../../../../server/kafka/bridge/index.js';

t.test('bridge: external topic → engine → enriched topic', async (t) => {
  const b = await startTestBroker();
  t.teardown(() => b.stop());
  const a = await openTestEngine();
  t.teardown(() => a.close());
  const keys = b.te.project.api_keys;
  const sasl = (password: string) => ({ mechanism: 'plain' as const, username: b.te.project.id, password });
  const producer = b.kafka('in').producer();
  await producer.connect();
  await producer.send({ topic: 'clicks', messages: [1, 2, 3].map((n) => ({ value: JSON.stringify({ n }) })) });

  const logs: string[] = [];
  const bridge = await startKafkaBridge({
    engine: a.engine, projectId: a.project.id,
    brokers: [`127.0.0.1:${b.outbound.port}`], sasl: sasl(keys.read),
    output: { brokers: [`127.0.0.1:${b.inbound.port}`], sasl: sasl(keys.write) },
    topics: ['clicks'], log: (m) => logs.push(m),
  });
  t.teardown(() => bridge.close());
  await producer.send({ topic: 'clicks', messages: [4, 5].map((n) => ({ value: JSON.stringify({ n }) })) });
  await producer.disconnect();

  await waitFor(() => a.engine.log.bounds(a.project.id, 'clicks').end === 5, 20_000);
  const copied = a.engine.log.read(a.project.id, 'clicks', 0, 10, 1 << 20).map((r) => JSON.parse(r.json).n);
  t.same(copied.sort(), [1, 2, 3, 4, 5], 'the bridge appended every external record to the engine');

  await waitFor(() => b.te.engine.log.bounds(b.te.project.id, 'enriched.clicks').end === 5, 20_000)
    .catch(() => t.fail(`enriched events did not arrive: ${logs.join(' | ')}`));
  const out = b.te.engine.log.read(b.te.project.id, 'enriched.clicks', 0, 10, 1 << 20).map((r) => JSON.parse(r.json));
  t.same(out.map((e) => e.n).sort(), [1, 2, 3, 4, 5], 'enriched events reached the outbound topic');
});

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
