/**
 * The server's configuration: the only module that reads process.argv and process.env. It turns the
 * flags of docs/api.md §1 into a frozen Config; it does not open files or sockets (main.ts does).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { LOG_LEVELS, MEMORY_BUDGET_MIN_BYTES, parseBytes, type LogLevel } from '../engine/index.js';
import { CLUSTER_NODE_ID_MAX, CLUSTER_PARTITIONS_DEFAULT, CLUSTER_SECRET_LENGTH_MIN } from './common/limits.js';

export interface Config {
  readonly dataDir: string;
  readonly host: string;
  readonly httpPort: number;
  /** 0 = off. */
  readonly kafkaInPort: number;
  /** 0 = off. */
  readonly kafkaOutPort: number;
  readonly kafkaAdvertisedHost: string | undefined;
  readonly orgId: string;
  readonly orgKey: string | undefined;
  readonly tlsCert: string | undefined;
  readonly tlsKey: string | undefined;
  readonly kafkaTlsCert: string | undefined;
  readonly kafkaTlsKey: string | undefined;
  readonly kafkaBridge: string | undefined;
  /** Cluster mode (--cluster-brokers): Kafka is the write-ahead log; undefined = single node. */
  readonly cluster: ClusterConfig | undefined;
  /** Take the client IP from the first X-Forwarded-For entry. */
  readonly trustProxy: boolean;
  readonly geoipDb: string | undefined;
  /** undefined = the engine's default. */
  readonly queryWorkers: number | undefined;
  readonly ingestWorkers: number | undefined;
  /** Bytes for caches and buffers (--memory-budget); undefined = the engine's default. */
  readonly memoryBudgetBytes: number | undefined;
  /** How often buffered rows become segments, in ms (--flush-interval); undefined = the engine's default. */
  readonly flushIntervalMs: number | undefined;
  /** fsync before acknowledging; only benchmarks turn it off (`--no-fsync`). */
  readonly fsync: boolean;
  /** Fresh segments decoded into the query caches while idle; off with `--no-cache-warming`. */
  readonly cacheWarming: boolean;
  /** Lowest level of the JSON log lines on stderr (--log-level). */
  readonly logLevel: LogLevel;
  readonly help: boolean;
  readonly version: boolean;
  /** `tally keys`: print the data directory's organization and project keys, then exit. */
  readonly command: 'serve' | 'keys';
}

export interface ClusterConfig {
  /** host:port of each bootstrap broker. */
  readonly brokers: readonly string[];
  /** This node's id (--node-id), unique in the cluster. */
  readonly nodeId: number;
  /** The events topic (--cluster-topic, default tally.events). */
  readonly topic: string;
  /** The shared metadata topic (--cluster-meta-topic, default tally.meta): compacted, one partition. */
  readonly metaTopic: string;
  /** Partitions of the events topic when this node creates it (--cluster-partitions, default 12). */
  readonly partitions: number;
  /** The events topic's retention.ms when this node creates it (--cluster-retention-ms; -1, the default: forever). */
  readonly retentionMs: number;
  /** Every node of the cluster by id (--cluster-nodes), sorted by id; empty: this node alone, reading every partition. */
  readonly nodes: readonly ClusterMember[];
  /** Nodes that store each partition (--cluster-replicas; default min(2, nodes)). */
  readonly replicas: number;
  /** The shared secret of the nodes' internal query endpoint (--cluster-secret, needed with --cluster-nodes). */
  readonly secret: string;
  /** This node's assignment replaces the cluster's in the metadata topic (--cluster-reassign, with --cluster-nodes). */
  readonly reassign: boolean;
}

export interface ClusterMember {
  readonly id: number;
  /** Where the other nodes reach this one's HTTP API (http://host:port). */
  readonly url: string;
  /** HOST:PORT of its outbound Kafka listener (`ID=URL@HOST:PORT`); absent: the URL's host, port 9093. */
  readonly kafka?: string;
}

const CLUSTER_TOPIC_DEFAULT = 'tally.events';
const CLUSTER_META_TOPIC_DEFAULT = 'tally.meta';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

interface FlagSpec {
  readonly name: string;
  readonly arg?: string;
  readonly help: string;
}

const FLAGS: readonly FlagSpec[] = [
  { name: 'data', arg: 'DIR', help: 'data directory (default ./data)' },
  { name: 'host', arg: 'ADDR', help: 'address to listen on (default 127.0.0.1)' },
  { name: 'http-port', arg: 'N', help: 'HTTP(S) port (default 8080; 0 = any free port)' },
  { name: 'kafka-in-port', arg: 'N', help: 'inbound Kafka port (default 9092; 0 = off)' },
  { name: 'kafka-out-port', arg: 'N', help: 'outbound Kafka port (default 9093; 0 = off)' },
  { name: 'kafka-advertised-host', arg: 'HOST', help: 'host the Kafka listeners advertise' },
  { name: 'org-id', arg: 'ID', help: 'organization id (default "default")' },
  { name: 'org-key', arg: 'KEY', help: 'organization key (or env TALLY_ORG_KEY)' },
  { name: 'tls-cert', arg: 'FILE', help: 'HTTPS certificate (PEM); needs --tls-key' },
  { name: 'tls-key', arg: 'FILE', help: 'HTTPS private key (PEM); needs --tls-cert' },
  { name: 'kafka-tls-cert', arg: 'FILE', help: 'Kafka SASL_SSL certificate (PEM)' },
  { name: 'kafka-tls-key', arg: 'FILE', help: 'Kafka SASL_SSL private key (PEM)' },
  { name: 'kafka-bridge', arg: 'BROKERS', help: 'consume from an external Kafka (host:port,...)' },
  { name: 'cluster-brokers', arg: 'BROKERS', help: 'cluster mode: Kafka is the write-ahead log (host:port,...)' },
  { name: 'node-id', arg: 'N', help: `this node's id in the cluster, 0-${CLUSTER_NODE_ID_MAX} (needed with --cluster-brokers)` },
  { name: 'cluster-topic', arg: 'NAME', help: `the events topic (default ${CLUSTER_TOPIC_DEFAULT})` },
  { name: 'cluster-meta-topic', arg: 'NAME', help: `the shared metadata topic (default ${CLUSTER_META_TOPIC_DEFAULT})` },
  { name: 'cluster-partitions', arg: 'N', help: `its partitions when created (default ${CLUSTER_PARTITIONS_DEFAULT})` },
  { name: 'cluster-retention-ms', arg: 'MS', help: 'the events topic\'s retention.ms when created (default -1: keep every record; nodes are rebuilt from it)' },
  { name: 'cluster-nodes', arg: 'ID=URL,...', help: 'every node of the cluster and its internal URL; ID=URL@HOST:PORT adds its outbound Kafka address' },
  { name: 'cluster-replicas', arg: 'R', help: 'nodes that store each partition (default min(2, nodes))' },
  { name: 'cluster-secret', arg: 'SECRET', help: 'shared secret of the nodes\' internal queries (needed with --cluster-nodes)' },
  { name: 'cluster-reassign', help: 'this node\'s --cluster-nodes and --cluster-replicas replace the cluster\'s assignment in the metadata topic' },
  { name: 'trust-proxy', help: 'client IP from the first X-Forwarded-For entry' },
  { name: 'geoip-db', arg: 'FILE', help: 'MaxMind-format City database for svc:ip_to_geo' },
  { name: 'query-workers', arg: 'N', help: 'query worker threads (default one per core; 0 = inline)' },
  { name: 'ingest-workers', arg: 'N', help: 'threads that parse large batch bodies (default one per core but one; 0 = inline)' },
  { name: 'memory-budget', arg: 'BYTES', help: 'bytes for caches and write buffers, e.g. 1g (default: 1/32 of RAM, 256m-2g)' },
  { name: 'flush-interval', arg: 'MS', help: 'how often buffered events are written into segments (default 10000)' },
  { name: 'log-level', arg: 'LEVEL', help: 'debug (adds a line per request), info (default), warn or error' },
  { name: 'no-cache-warming', help: 'leave the query caches cold until a query reads (default: segments just written are decoded into them while idle)' },
  { name: 'no-fsync', help: 'acknowledge writes before fsync (benchmarks only; unsafe)' },
  { name: 'help', help: 'print this help and exit (also -h)' },
  { name: 'version', help: 'print the version and exit' },
];

/** How the user ran the server, for the usage line: `npm start -- [flags]` or `tally [flags]`. */
function commandName(env: Readonly<Record<string, string | undefined>>): { run: string; flags: string } {
  return env['npm_lifecycle_event'] === 'start'
    ? { run: 'npm start --', flags: 'npm start -- ' }
    : { run: 'tally', flags: 'tally ' };
}

export function usage(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const lines = FLAGS.map((f) => {
    const left = `  --${f.name}${f.arg ? ' ' + f.arg : ''}`;
    return left.padEnd(32) + f.help;
  });
  const { run } = commandName(env);
  return [
    `Usage: ${run} [flags]          serve (HTTP, Kafka in and out)`,
    `       ${run} keys [--data DIR]  print the organization's and projects' keys of a data directory`,
    '', 'Flags:', ...lines,
  ].join('\n');
}

/**
 * Parses `--name value`, `--name=value`, boolean `--name` and `-h` with node:util's parseArgs;
 * its errors become ConfigErrors in our words (which flag, what it needs). A value that starts
 * with a dash goes after `=` (`--http-port=-1`), as parseArgs asks.
 */
function parseFlags(argv: readonly string[]): Map<string, string> {
  const options: ParseArgsConfig['options'] = {};
  for (const spec of FLAGS) {
    options[spec.name] = spec.arg ? { type: 'string' } : { type: 'boolean', ...(spec.name === 'help' && { short: 'h' }) };
  }
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (error) {
    throw flagError(error);
  }
  const flags = new Map<string, string>();
  for (const [name, value] of Object.entries(values)) {
    if (typeof value === 'string') flags.set(name, value);
    else if (value === true) flags.set(name, 'true');
  }
  return flags;
}

/** parseArgs' error as one of ours, naming the flag. */
function flagError(error: unknown): ConfigError {
  const code = (error as { code?: string }).code;
  const message = (error as Error).message;
  const named = /'(-{1,2}[\w-]+)/.exec(message)?.[1] ?? '';
  const spec = FLAGS.find((f) => `--${f.name}` === named);
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return new ConfigError(`unknown flag ${named} (see --help)`);
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new ConfigError(`unexpected argument "${/'([^']*)'/.exec(message)?.[1] ?? ''}"`);
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new ConfigError(spec?.arg
        ? `${named} needs a value (${spec.arg}); a value starting with "-" goes after "=" (${named}=VALUE)`
        : `${named} takes no value`);
    default:
      return new ConfigError(message);
  }
}

function parsePort(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`--${name} must be a port number 0-65535, got "${raw}"`);
  }
  return port;
}

function parseCount(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const count = Number(raw);
  if (!Number.isInteger(count) || count < 0 || count > 256) {
    throw new ConfigError(`--${name} must be an integer 0-256, got "${raw}"`);
  }
  return count;
}

function parseBudget(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const bytes = parseBytes(raw);
  if (!(bytes >= MEMORY_BUDGET_MIN_BYTES)) {
    throw new ConfigError(`--memory-budget must be a size of at least 64m (like 512m or 2g), got "${raw}"`);
  }
  return bytes;
}

function parseInterval(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 50 || ms > 3_600_000) {
    throw new ConfigError(`--flush-interval must be milliseconds 50-3600000, got "${raw}"`);
  }
  return ms;
}

/** `host:port` or `[v6]:port`, comma-separated; at least one. */
function parseBrokers(raw: string): string[] {
  const brokers = raw.split(',').map((b) => b.trim()).filter((b) => b !== '');
  const bad = brokers.find((b) => {
    const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(b);
    return match === null || Number(match[2]) < 1 || Number(match[2]) > 65535;
  });
  if (brokers.length === 0 || bad !== undefined) {
    throw new ConfigError(`--cluster-brokers must be HOST:PORT[,HOST:PORT...], got "${bad ?? raw}"`);
  }
  return brokers;
}

function parseCluster(flags: Map<string, string>): ClusterConfig | undefined {
  const raw = flags.get('cluster-brokers');
  if (raw === undefined) {
    const stray = ['node-id', 'cluster-topic', 'cluster-meta-topic', 'cluster-partitions', 'cluster-retention-ms', 'cluster-nodes', 'cluster-replicas', 'cluster-secret', 'cluster-reassign']
      .find((name) => flags.has(name));
    if (stray !== undefined) throw new ConfigError(`--${stray} is for cluster mode: it needs --cluster-brokers`);
    return undefined;
  }
  const brokers = parseBrokers(raw);
  const id = flags.get('node-id');
  if (id === undefined) throw new ConfigError('--cluster-brokers needs --node-id N (this node\'s id in the cluster)');
  const nodeId = Number(id);
  if (!/^\d+$/.test(id) || nodeId > CLUSTER_NODE_ID_MAX) {
    throw new ConfigError(`--node-id must be an integer 0-${CLUSTER_NODE_ID_MAX}, got "${id}"`);
  }
  const topic = topicFlag(flags, 'cluster-topic', CLUSTER_TOPIC_DEFAULT);
  const metaTopic = topicFlag(flags, 'cluster-meta-topic', CLUSTER_META_TOPIC_DEFAULT);
  if (metaTopic === topic) throw new ConfigError(`--cluster-meta-topic must differ from the events topic, got "${metaTopic}" for both`);
  const partitionsRaw = flags.get('cluster-partitions');
  const partitions = partitionsRaw === undefined ? CLUSTER_PARTITIONS_DEFAULT : Number(partitionsRaw);
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 1024) {
    throw new ConfigError(`--cluster-partitions must be an integer 1-1024, got "${partitionsRaw}"`);
  }
  const retentionRaw = flags.get('cluster-retention-ms') ?? '-1';
  const retentionMs = Number(retentionRaw);
  if (!/^(-1|[1-9]\d*)$/.test(retentionRaw) || !Number.isSafeInteger(retentionMs)) {
    throw new ConfigError(`--cluster-retention-ms must be -1 (keep every record) or a positive integer of milliseconds, got "${retentionRaw}"`);
  }
  if (flags.has('kafka-bridge')) throw new ConfigError('--kafka-bridge does not work in cluster mode (--cluster-brokers) yet');
  return Object.freeze({ brokers: Object.freeze(brokers), nodeId, topic, metaTopic, partitions, retentionMs, ...parseMembers(flags, nodeId) });
}

function topicFlag(flags: Map<string, string>, name: string, fallback: string): string {
  const topic = flags.get(name) ?? fallback;
  if (!/^[A-Za-z0-9._-]{1,249}$/.test(topic) || topic === '.' || topic === '..' || topic.startsWith('__')) {
    throw new ConfigError(`--${name} must be a Kafka topic name (letters, digits, ".", "_", "-"; not "__..."), got "${topic}"`);
  }
  return topic;
}

/**
 * `ID=URL[@HOST:PORT]` per node, comma-separated: ids 0-1023 once each, URLs http(s)://host:port
 * without a path, and optionally the node's outbound Kafka address.
 */
function parseNodes(raw: string): ClusterMember[] {
  const host = '(?:\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+)';
  const form = new RegExp(`^(\\d{1,4})=(https?://${host}:\\d{1,5})/?(?:@(${host}:(\\d{1,5})))?$`);
  const nodes: ClusterMember[] = [];
  for (const item of raw.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const match = form.exec(item);
    if (match === null || Number(match[1]) > CLUSTER_NODE_ID_MAX || (match[4] !== undefined && !(Number(match[4]) >= 1 && Number(match[4]) <= 65535))) {
      throw new ConfigError(`--cluster-nodes must be ID=http://HOST:PORT[@KAFKAHOST:PORT][,...] with ids 0-${CLUSTER_NODE_ID_MAX} and ports 1-65535, got "${item}"`);
    }
    const id = Number(match[1]);
    if (nodes.some((node) => node.id === id)) throw new ConfigError(`--cluster-nodes names node ${id} twice`);
    nodes.push(Object.freeze({ id, url: match[2]!, ...(match[3] !== undefined && { kafka: match[3] }) }));
  }
  if (nodes.length === 0) throw new ConfigError(`--cluster-nodes must be ID=http://HOST:PORT[@KAFKAHOST:PORT][,...], got "${raw}"`);
  return nodes.sort((a, b) => a.id - b.id);
}

function parseMembers(flags: Map<string, string>, nodeId: number): Pick<ClusterConfig, 'nodes' | 'replicas' | 'secret' | 'reassign'> {
  const raw = flags.get('cluster-nodes');
  if (raw === undefined) {
    const stray = ['cluster-replicas', 'cluster-secret', 'cluster-reassign'].find((name) => flags.has(name));
    if (stray !== undefined) throw new ConfigError(`--${stray} needs --cluster-nodes`);
    return { nodes: Object.freeze([]), replicas: 1, secret: '', reassign: false };
  }
  const nodes = parseNodes(raw);
  if (!nodes.some((node) => node.id === nodeId)) {
    throw new ConfigError(`--cluster-nodes must name this node (--node-id ${nodeId}), got "${raw}"`);
  }
  const replicasRaw = flags.get('cluster-replicas');
  const replicas = replicasRaw === undefined ? Math.min(2, nodes.length) : Number(replicasRaw);
  if (!/^\d+$/.test(replicasRaw ?? '1') || replicas < 1 || replicas > nodes.length) {
    throw new ConfigError(`--cluster-replicas must be an integer 1-${nodes.length} (the nodes), got "${replicasRaw}"`);
  }
  const secret = flags.get('cluster-secret') ?? '';
  if (secret.length < CLUSTER_SECRET_LENGTH_MIN) {
    throw new ConfigError(`--cluster-nodes needs --cluster-secret of ${CLUSTER_SECRET_LENGTH_MIN} characters or more (the same on every node)`);
  }
  return { nodes: Object.freeze(nodes), replicas, secret, reassign: flags.has('cluster-reassign') };
}

function parseLogLevel(raw: string | undefined): LogLevel {
  if (raw === undefined) return 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return raw as LogLevel;
}

export function readConfig(
  argv: readonly string[] = process.argv.slice(2),
  env: Readonly<Record<string, string | undefined>> = process.env,
): Config {
  const command = argv[0] === 'keys' ? 'keys' : 'serve';
  const flags = parseFlags(command === 'keys' ? argv.slice(1) : argv);
  const tlsCert = flags.get('tls-cert');
  const tlsKey = flags.get('tls-key');
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ConfigError('--tls-cert and --tls-key go together');
  }
  const kafkaTlsCert = flags.get('kafka-tls-cert');
  const kafkaTlsKey = flags.get('kafka-tls-key');
  if ((kafkaTlsCert === undefined) !== (kafkaTlsKey === undefined)) {
    throw new ConfigError('--kafka-tls-cert and --kafka-tls-key go together');
  }
  const orgKey = flags.get('org-key') ?? (env['TALLY_ORG_KEY'] || undefined);
  return Object.freeze({
    dataDir: flags.get('data') ?? './data',
    host: flags.get('host') ?? '127.0.0.1',
    httpPort: parsePort('http-port', flags.get('http-port'), 8080),
    kafkaInPort: parsePort('kafka-in-port', flags.get('kafka-in-port'), 9092),
    kafkaOutPort: parsePort('kafka-out-port', flags.get('kafka-out-port'), 9093),
    kafkaAdvertisedHost: flags.get('kafka-advertised-host'),
    orgId: flags.get('org-id') ?? 'default',
    orgKey,
    tlsCert,
    tlsKey,
    kafkaTlsCert,
    kafkaTlsKey,
    kafkaBridge: flags.get('kafka-bridge'),
    cluster: parseCluster(flags),
    trustProxy: flags.has('trust-proxy'),
    geoipDb: flags.get('geoip-db'),
    queryWorkers: parseCount('query-workers', flags.get('query-workers')),
    ingestWorkers: parseCount('ingest-workers', flags.get('ingest-workers')),
    memoryBudgetBytes: parseBudget(flags.get('memory-budget')),
    flushIntervalMs: parseInterval(flags.get('flush-interval')),
    fsync: !flags.has('no-fsync'),
    cacheWarming: !flags.has('no-cache-warming'),
    logLevel: parseLogLevel(flags.get('log-level')),
    help: flags.has('help'),
    version: flags.has('version'),
    command,
  });
}
