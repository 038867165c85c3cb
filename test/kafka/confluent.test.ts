/** python3-confluent-kafka 1.7.0 (librdkafka 2.0.2): a producer and a group consumer. */
import t from 'tap';
import { startTestBroker } from '../helpers/kafka/broker.js';
import { pythonWithConfluent, run } from '../helpers/kafka/run.js';

const python = pythonWithConfluent();

const SCRIPT = `
import json, sys, time
from confluent_kafka import Producer, Consumer
cfg = json.loads(sys.argv[1])
base = {'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'PLAIN', 'sasl.username': cfg['project']}
p = Producer(dict(base, **{'bootstrap.servers': cfg['inbound'], 'sasl.password': cfg['write']}))
errors = []
for i in range(10):
    p.produce('py', json.dumps({'i': i, 'from': 'python'}).encode(), callback=lambda e, m: e and errors.append(str(e)))
p.flush(15)
c = Consumer(dict(base, **{'bootstrap.servers': cfg['outbound'], 'sasl.password': cfg['read'],
    'group.id': 'pyg', 'auto.offset.reset': 'earliest'}))
c.subscribe(['py'])
got = []
deadline = time.time() + 25
while len(got) < 10 and time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and m.error() is None:
        got.append(json.loads(m.value()))
c.close()
print(json.dumps({'errors': errors, 'got': got}))
`;

t.ok(python, "Python's confluent-kafka is installed (the pretest step of npm test installs it: scripts/test-deps.mjs)");

t.test('confluent-kafka produces and consumes in a group', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const keys = broker.te.project.api_keys;
  const cfg = {
    project: broker.te.project.id, write: keys.write, read: keys.read,
    inbound: `127.0.0.1:${broker.inbound.port}`, outbound: `127.0.0.1:${broker.outbound.port}`,
  };
  const out = await run(python!, ['-c', SCRIPT, JSON.stringify(cfg)], undefined, 60_000);
  t.equal(out.code, 0, out.stderr);
  const result = JSON.parse(out.stdout);
  t.same(result.errors, []);
  t.same(result.got.map((e: { i: number }) => e.i), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.ok(result.got.every((e: { svc?: object }) => e.svc), 'enriched with svc');
});
