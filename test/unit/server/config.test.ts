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
