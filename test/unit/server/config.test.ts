/**
 * The flags (server/config.ts, node:util parseArgs underneath): values, defaults, `-h`, the
 * `keys` command, and every kind of bad input as one ConfigError sentence naming the flag.
 */
import t from 'tap';
import { ConfigError, readConfig } from '../../../server/config.js';

t.test('flags, inline and separate values, booleans, -h, keys', async (t) => {
  const config = readConfig(['--data', '/tmp/d', '--http-port=0', '--trust-proxy', '--flush-interval', '250'], {});
  t.match(config, { dataDir: '/tmp/d', httpPort: 0, trustProxy: true, flushIntervalMs: 250, kafkaInPort: 9092, command: 'serve', help: false });
  t.equal(readConfig(['-h'], {}).help, true);
  t.equal(readConfig(['--version'], {}).version, true);
  t.match(readConfig(['keys', '--data', '/tmp/k'], {}), { command: 'keys', dataDir: '/tmp/k' });
  t.equal(readConfig([], { TALLY_ORG_KEY: 'k'.repeat(64) }).orgKey, 'k'.repeat(64));
});

t.test('bad input is one ConfigError naming the flag', async (t) => {
  const cases: [string[], RegExp][] = [
    [['--bogus'], /^unknown flag --bogus \(see --help\)$/],
    [['--data'], /^--data needs a value \(DIR\)/],
    [['--http-port', '-1'], /^--http-port needs a value \(N\); a value starting with "-" goes after "="/],
    [['--http-port=-1'], /^--http-port must be a port number 0-65535, got "-1"$/],
    [['--trust-proxy=yes'], /^--trust-proxy takes no value$/],
    [['serve'], /^unexpected argument "serve"$/],
    [['--flush-interval', '10'], /^--flush-interval must be milliseconds 50-3600000, got "10"$/],
    [['--tls-cert', 'a.pem'], /^--tls-cert and --tls-key go together$/],
  ];
  for (const [argv, message] of cases) {
    t.throws(() => readConfig(argv, {}), { name: 'ConfigError', message }, argv.join(' '));
  }
  t.ok(new ConfigError('x') instanceof Error);
});

const CLUSTER = ['--cluster-brokers', 'k1:9092', '--node-id', '1'];
const SECRET = ['--cluster-secret', '0123456789abcdef'];
const nodeCases: [string[], RegExp][] = [
  [[...CLUSTER, '--cluster-replicas', '1'], /^--cluster-replicas needs --cluster-nodes$/],
  [[...CLUSTER, '--cluster-secret', 'x'.repeat(20)], /^--cluster-secret needs --cluster-nodes$/],
  [[...CLUSTER, '--cluster-reassign'], /^--cluster-reassign needs --cluster-nodes$/],
  [['--cluster-reassign'], /^--cluster-reassign is for cluster mode: it needs --cluster-brokers$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '1=a:1'], /^--cluster-nodes must be ID=http:\/\/HOST:PORT\[@KAFKAHOST:PORT\]\[,\.\.\.\] with ids 0-1023 and ports 1-65535, got "1=a:1"$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://a:1@b'], /got "1=http:\/\/a:1@b"$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://a:1@b:0'], /ports 1-65535, got "1=http:\/\/a:1@b:0"$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://a:1@b:70000'], /got "1=http:\/\/a:1@b:70000"$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://a:1@http://b:2'], /got "1=http:\/\/a:1@http:\/\/b:2"$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://a:1/path'], /got "1=http:\/\/a:1\/path"$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://a:1,1=http://b:1'], /^--cluster-nodes names node 1 twice$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '0=http://a:1,2=http://b:1'], /^--cluster-nodes must name this node \(--node-id 1\)/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '0=http://a:1,1=http://b:1', '--cluster-replicas', '3'], /^--cluster-replicas must be an integer 1-2 \(the nodes\), got "3"$/],
  [[...CLUSTER, ...SECRET, '--cluster-nodes', '0=http://a:1,1=http://b:1', '--cluster-replicas', '1.5'], /got "1.5"$/],
  [[...CLUSTER, '--cluster-nodes', '0=http://a:1,1=http://b:1'], /^--cluster-nodes needs --cluster-secret of 16 characters or more/],
  [[...CLUSTER, '--cluster-nodes', '0=http://a:1,1=http://b:1', '--cluster-secret', 'short'], /^--cluster-nodes needs --cluster-secret/],
];

t.test('cluster nodes: --cluster-nodes sorted by id, replicas default min(2, nodes), the secret', async (t) => {
  t.same(readConfig([...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://b:8002, 0=https://[::1]:8001/'], {}).cluster,
    { brokers: ['k1:9092'], nodeId: 1, topic: 'tally.events', metaTopic: 'tally.meta', partitions: 12, retentionMs: -1,
      nodes: [{ id: 0, url: 'https://[::1]:8001' }, { id: 1, url: 'http://b:8002' }], replicas: 2, secret: '0123456789abcdef', reassign: false });
  t.equal(readConfig([...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://b:1', '--cluster-reassign'], {}).cluster?.reassign, true);
  t.equal(readConfig([...CLUSTER, ...SECRET, '--cluster-nodes', '1=http://b:1'], {}).cluster?.replicas, 1, 'one node: one replica');
  t.same(readConfig([...CLUSTER, ...SECRET, '--cluster-nodes', '0=http://a:1/@k0:19093,1=http://b:1@[::1]:29093'], {}).cluster?.nodes,
    [{ id: 0, url: 'http://a:1', kafka: 'k0:19093' }, { id: 1, url: 'http://b:1', kafka: '[::1]:29093' }], 'ID=URL@HOST:PORT: the outbound address');
  t.equal(readConfig([...CLUSTER, ...SECRET, '--cluster-nodes', '0=http://a:1,1=http://b:1,2=http://c:1', '--cluster-replicas', '3'], {}).cluster?.replicas, 3);
});

t.test('cluster mode: --cluster-brokers with --node-id; defaults; every bad value named', async (t) => {
  t.equal(readConfig([], {}).cluster, undefined, 'single node by default');
  t.same(readConfig(['--cluster-brokers', 'k1:9092, k2:9092,[::1]:9094', '--node-id', '3'], {}).cluster,
    { brokers: ['k1:9092', 'k2:9092', '[::1]:9094'], nodeId: 3, topic: 'tally.events', metaTopic: 'tally.meta', partitions: 12, retentionMs: -1, nodes: [], replicas: 1, secret: '', reassign: false });
  t.match(readConfig(['--cluster-brokers=127.0.0.1:1', '--node-id=0', '--cluster-topic', 'my_events.v2', '--cluster-partitions', '3',
    '--cluster-meta-topic', 'my_meta'], {}).cluster, { brokers: ['127.0.0.1:1'], nodeId: 0, topic: 'my_events.v2', metaTopic: 'my_meta', partitions: 3 });
  t.equal(readConfig(['--cluster-brokers', 'k1:9092', '--node-id', '3', '--cluster-retention-ms', '604800000'], {}).cluster?.retentionMs, 604_800_000);
  t.equal(readConfig(['--cluster-brokers', 'k1:9092', '--node-id', '3', '--cluster-retention-ms=-1'], {}).cluster?.retentionMs, -1);
  const cases: [string[], RegExp][] = [
    [['--cluster-brokers', 'k1:9092'], /^--cluster-brokers needs --node-id N/],
    [['--node-id', '1'], /^--node-id is for cluster mode: it needs --cluster-brokers$/],
    [['--cluster-topic', 't'], /^--cluster-topic is for cluster mode: it needs --cluster-brokers$/],
    [['--cluster-brokers', 'k1', '--node-id', '1'], /^--cluster-brokers must be HOST:PORT\[,HOST:PORT\.\.\.\], got "k1"$/],
    [['--cluster-brokers', 'k1:9092,k2:0', '--node-id', '1'], /got "k2:0"$/],
    [['--cluster-brokers', 'k1:99999', '--node-id', '1'], /got "k1:99999"$/],
    [['--cluster-brokers', ',', '--node-id', '1'], /^--cluster-brokers must be HOST:PORT/],
    [['--cluster-brokers', 'k1:9092', '--node-id', 'one'], /^--node-id must be an integer 0-1023, got "one"$/],
    [['--cluster-brokers', 'k1:9092', '--node-id=-1'], /^--node-id must be an integer 0-1023, got "-1"$/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1.5'], /got "1.5"$/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1024'], /got "1024"$/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--cluster-topic', 'a b'], /^--cluster-topic must be a Kafka topic name/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--cluster-topic', '__x'], /^--cluster-topic must be a Kafka topic name/],
    [['--cluster-meta-topic', 'm'], /^--cluster-meta-topic is for cluster mode: it needs --cluster-brokers$/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--cluster-meta-topic', 'a/b'], /^--cluster-meta-topic must be a Kafka topic name/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--cluster-meta-topic', 'tally.events'], /^--cluster-meta-topic must differ from the events topic/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--cluster-partitions', '0'], /^--cluster-partitions must be an integer 1-1024, got "0"$/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--cluster-retention-ms', '0'], /^--cluster-retention-ms must be -1 \(keep every record\) or a positive integer of milliseconds, got "0"$/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--cluster-retention-ms', '1e9'], /got "1e9"$/],
    [['--cluster-retention-ms=-1'], /^--cluster-retention-ms is for cluster mode: it needs --cluster-brokers$/],
    [['--cluster-brokers', 'k1:9092', '--node-id', '1', '--kafka-bridge', 'k1:9092'], /^--kafka-bridge does not work in cluster mode/],
    [['--cluster-nodes', '0=http://a:1'], /^--cluster-nodes is for cluster mode: it needs --cluster-brokers$/],
    ...nodeCases,
  ];
  for (const [argv, message] of cases) {
    t.throws(() => readConfig(argv, {}), { name: 'ConfigError', message }, argv.join(' '));
  }
});
