/** kcat (librdkafka 2.0.2): -P with every codec, -C -G group consumption resuming from commits. */
import t from 'tap';
import { startTestBroker, type TestBroker } from '../helpers/kafka/broker.js';
import { available, run } from '../helpers/kafka/run.js';

const hasKcat = available('kcat', ['-V']);

function kcatArgs(broker: TestBroker, role: 'in' | 'out', password?: string): string[] {
  const keys = broker.te.project.api_keys;
  const port = role === 'in' ? broker.inbound.port : broker.outbound.port;
  return [
    '-b', `127.0.0.1:${port}`, '-X', 'security.protocol=SASL_PLAINTEXT', '-X', 'sasl.mechanisms=PLAIN',
    '-X', `sasl.username=${broker.te.project.id}`,
    '-X', `sasl.password=${password ?? (role === 'in' ? keys.write : keys.read)}`,
  ];
}

const lines = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ i, tag, pad: 'x'.repeat(40) })).join('\n') + '\n';

t.ok(hasKcat, 'kcat is installed (the pretest step of npm test installs it: scripts/test-deps.mjs)');

t.test('kcat -P with every codec, then kcat -C -G resumes from its commits', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd']) {
    const out = await run('kcat', ['-P', ...kcatArgs(broker, 'in'), '-t', 'kc', '-z', codec, '-X', 'linger.ms=50'], lines(20, codec));
    t.equal(out.code, 0, `kcat -P -z ${codec}: ${out.stderr}`);
  }
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'kc').end, 100, 'all 100 events stored');

  const consume = (count: number) => run('kcat', [
    '-C', ...kcatArgs(broker, 'out'), '-G', 'kg', 'kc', '-c', String(count), '-X', 'auto.offset.reset=earliest',
    '-f', '%o %s\n',
  ], undefined, 40_000);
  const first = await consume(100);
  t.equal(first.code, 0, first.stderr);
  const got = first.stdout.trim().split('\n').map((l) => JSON.parse(l.slice(l.indexOf(' ') + 1)));
  t.equal(got.length, 100);
  t.same(got.slice(0, 20).map((e) => e.tag), Array(20).fill('none'));
  t.ok(got.every((e) => typeof e.svc?.id === 'string'), 'enriched with svc');

  await run('kcat', ['-P', ...kcatArgs(broker, 'in'), '-t', 'kc'], lines(3, 'later'));
  const second = await consume(3);
  const tags = second.stdout.trim().split('\n').map((l) => JSON.parse(l.slice(l.indexOf(' ') + 1)).tag);
  t.same(tags, ['later', 'later', 'later'], 'the group resumes after its committed offset');
});

t.test('kcat: a read key cannot produce, a wrong password fails', async (t) => {
  const broker = await startTestBroker();
  t.teardown(() => broker.stop());
  const read = broker.te.project.api_keys.read;
  const out = await run('kcat', ['-P', ...kcatArgs(broker, 'in', read), '-t', 'nope', '-X', 'message.timeout.ms=3000'], lines(1, 'r'), 20_000);
  t.not(out.code, 0, 'kcat fails');
  t.match(out.stderr, /Write Key|Authentication|SASL/i);
  const consume = await run('kcat', ['-C', ...kcatArgs(broker, 'out', 'wrong'), '-t', 'nope', '-e'], undefined, 20_000);
  t.match(consume.stderr, /SASL|Authentication/i);
  t.equal(broker.te.engine.collections.list(broker.te.project.id).length, 0, 'nothing stored');
});
