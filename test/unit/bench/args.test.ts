/**
 * The benchmarks' flags (bench/args.ts, node:util parseArgs underneath): values, defaults,
 * positionals, and every kind of bad input as one sentence naming the flag.
 */
import t from 'tap';
import { parseBenchArgs, usageLine, type FlagSpec } from '../../../bench/args.js';

const FLAGS: Record<string, FlagSpec> = {
  events: { arg: 'N' }, seconds: { arg: 'S' }, workers: { arg: 'N' }, order: { arg: 'time|random' },
  only: { arg: 'NAME[,NAME]' }, keep: {},
};

class Refused extends Error {}
const fail = (message: string): never => {
  throw new Refused(message);
};
const parse = (argv: string[], positionals: string[] = []) => parseBenchArgs(argv, FLAGS, { fail, positionals });

t.test('values, inline and separate, booleans, defaults, positionals', async (t) => {
  const args = parse(['--events', '5000', '--seconds=0.5', '--keep', '--order', 'random', '--only', 'a,b'], ['rows']);
  t.equal(args.integer('events', 1), 5000);
  t.equal(args.positive('seconds', 10), 0.5);
  t.equal(args.flag('keep'), true);
  t.equal(args.choice('order', ['time', 'random'], 'time'), 'random');
  t.same(args.list('only', ['a', 'b', 'c']), ['a', 'b']);
  t.equal(args.integer('workers', 2, 0), 2, 'default when not given');
  t.equal(args.has('workers'), false);
  t.equal(parse(['--events', '1e6']).integer('events', 1), 1_000_000, 'Number() reads it, as before');
  t.equal(parse(['--workers=0']).integer('workers', 4, 0), 0);
  t.equal(parse(['300'], ['rows']).positionalInteger(0, 'rows', 1), 300);
  t.equal(parse([], ['rows']).positionalInteger(0, 'rows', 7), 7);
  t.equal(parse([]).list('only', ['a']), null);
});

t.test('bad input is one sentence naming the flag', async (t) => {
  const cases: [string[], (args: ReturnType<typeof parse>) => unknown, RegExp][] = [
    [['--bogus'], () => 0, /^unknown flag --bogus$/],
    [['-h'], () => 0, /^unknown flag -h$/],
    [['--events'], () => 0, /^--events needs a value \(N\); a value starting with "-" goes after "=" \(--events=VALUE\)$/],
    [['--seconds', '-1'], () => 0, /^--seconds needs a value \(S\)/],
    [['--keep=yes'], () => 0, /^--keep takes no value$/],
    [['stray'], () => 0, /^unexpected argument "stray"$/],
    [['--events', 'abc'], (a) => a.integer('events', 1), /^--events must be an integer of at least 1, got "abc"$/],
    [['--events', '1.5'], (a) => a.integer('events', 1), /^--events must be an integer of at least 1, got "1.5"$/],
    [['--events='], (a) => a.integer('events', 1), /^--events must be an integer of at least 1, got ""$/],
    [['--workers=-1'], (a) => a.integer('workers', 1, 0), /^--workers must be an integer of at least 0, got "-1"$/],
    [['--seconds=0'], (a) => a.positive('seconds', 1), /^--seconds must be a number above 0, got "0"$/],
    [['--order', 'up'], (a) => a.choice('order', ['time', 'random'], 'time'), /^--order must be time or random, got "up"$/],
    [['--only', 'a,x'], (a) => a.list('only', ['a', 'b']), /^--only takes a comma-separated list of a, b, got "x"$/],
  ];
  for (const [argv, read, message] of cases) {
    t.throws(() => read(parse(argv)), message, argv.join(' '));
  }
  t.throws(() => parse(['1', '2'], ['rows']), /^unexpected argument "2"$/);
  t.throws(() => parse(['12x'], ['events']).positionalInteger(0, 'events', 1), /^events must be an integer of at least 1, got "12x"$/);
});

t.test('the usage line lists the flags and positionals', async (t) => {
  t.equal(usageLine('dist/bench/x.js', { events: { arg: 'N' }, keep: {} }, ['rows']),
    'usage: node dist/bench/x.js [--events N] [--keep] [rows]');
});
