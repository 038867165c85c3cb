#!/usr/bin/env node
/**
 * The server's entry point: reads the config, checks the data directory (owner-only; the engine
 * locks it), opens the engine, starts HTTP(S) and, when built and enabled, the Kafka listeners and
 * bridge; prints the first-start banner and the ready line; on SIGTERM/SIGINT (or, under
 * `npm start`, when npm is gone) stops accepting, finishes in-flight writes, closes the engine
 * (releasing the lock) and exits 0. What stops a start is one line on stderr and exit code 1.
 */
import { readFileSync } from 'node:fs';
import { DataDirError, jsonLogger, openEngine, type Logger, type TallyEngine } from '../engine/index.js';
import { ConfigError, readConfig, usage, type Config } from './config.js';
import { startHttp, type HttpListener } from './http/listen.js';
import { PARENT_POLL_MS, SHUTDOWN_DRAIN_MS } from './common/limits.js';
import { Metrics } from './common/metrics.js';
import { bannerText, keysNotShown, keysText, markKeysNotShown, markKeysShown, readKeys } from './keys.js';
import { StartupError, checkDataDir, listenError } from './startup.js';
import { ClusterStartError, startCluster, type ClusterNode } from './cluster/index.js';
import { outboundView } from './cluster/outbound.js';
import { SavedQueryRunner } from './cluster/saved-runner.js';

/** The package's version (package.json two folders up from dist/server/main.js). */
function packageVersion(): string {
  const file = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

interface Closable {
  close(): Promise<void> | void;
}

/** JSON lines on stderr (engine/base/logger.ts); the level comes from --log-level once the flags are read. */
let logger: Logger = jsonLogger('info');

function log(line: string): void {
  logger.write('info', line);
}

/** Imports a sibling module that may not be built yet; null when it is absent. */
async function importOptional(relativePath: string): Promise<Record<string, unknown> | null> {
  const url = new URL(relativePath, import.meta.url);
  try {
    return (await import(url.href)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: string }).code;
    const message = String((error as Error).message);
    if (code === 'ERR_MODULE_NOT_FOUND' && message.includes(url.pathname)) return null;
    logger.write('error', `cannot load ${relativePath}`, { error: (error as Error).message });
    return null;
  }
}

type KafkaStart = (options: Record<string, unknown>) => Promise<{ port: number } & Closable>;
type BridgeStart = (options: Record<string, unknown>) => Promise<Closable>;

async function startKafka(
  config: Config, engine: TallyEngine, role: 'in' | 'out', port: number, extra: Record<string, unknown> = {},
): Promise<{ address: string; listener: Closable | null }> {
  if (port === 0) return { address: 'off', listener: null };
  const broker = await importOptional('./kafka/broker/index.js');
  const start = broker?.['startKafkaListener'] as KafkaStart | undefined;
  if (typeof start !== 'function') {
    log(`kafka_${role} is off: the Kafka broker module is not available`);
    return { address: 'off', listener: null };
  }
  const tls = config.kafkaTlsCert && config.kafkaTlsKey
    ? { cert: readFileSync(config.kafkaTlsCert), key: readFileSync(config.kafkaTlsKey) }
    : undefined;
  const listener = await start({
    engine, host: config.host, port, role, log, stateDir: config.dataDir, ...extra,
    ...(config.kafkaAdvertisedHost !== undefined && { advertisedHost: config.kafkaAdvertisedHost }),
    ...(tls !== undefined && { tls }),
  }).catch((error: unknown) => {
    throw listenError(error, `kafka-${role}-port`, config.host, port) ?? error;
  });
  const host = config.kafkaAdvertisedHost ?? config.host;
  return { address: `${host}:${listener.port}`, listener };
}

async function startBridge(config: Config, engine: TallyEngine): Promise<Closable | null> {
  if (config.kafkaBridge === undefined) return null;
  const bridge = await importOptional('./kafka/bridge/index.js');
  const start = bridge?.['startKafkaBridge'] as BridgeStart | undefined;
  if (typeof start !== 'function') {
    log('--kafka-bridge ignored: the Kafka bridge module is not available');
    return null;
  }
  // The bridge feeds the default project: the first one, created on the first start.
  const project = engine.projects.list()[0];
  if (project === undefined) throw new Error('--kafka-bridge needs a project to write to');
  const brokers = config.kafkaBridge.split(',').map((b) => b.trim()).filter((b) => b !== '');
  return start({ engine, projectId: project.id, brokers, log });
}

function openOptions(config: Config, savedRunner: SavedQueryRunner | null): Parameters<typeof openEngine>[0] {
  return {
    dataDir: config.dataDir,
    orgId: config.orgId,
    ...(config.orgKey !== undefined && { orgKey: config.orgKey }),
    ...(config.geoipDb !== undefined && { geoipDbPath: config.geoipDb }),
    ...(config.queryWorkers !== undefined && { queryWorkers: config.queryWorkers }),
    ...(config.ingestWorkers !== undefined && { ingestWorkers: config.ingestWorkers }),
    ...(config.memoryBudgetBytes !== undefined && { memoryBudgetBytes: config.memoryBudgetBytes }),
    ...(config.flushIntervalMs !== undefined && { flushIntervalMs: config.flushIntervalMs }),
    fsync: config.fsync,
    cacheWarming: config.cacheWarming,
    // Rule data at start: the first event that asks for an add-on must not wait ~0.6 s for it.
    addonData: 'at-open',
    logger,
    // With --cluster-nodes: saved and cached queries read their events where they are stored, and
    // a job's id names the node that runs it (server/cluster/queries.ts).
    ...(savedRunner !== null && { savedQueryRunner: savedRunner.run, extractionJobPrefix: `n${config.cluster!.nodeId}-` }),
  };
}

/** This process's parent as it started, before the engine opened and the ready line was written. */
const STARTED_UNDER = process.ppid;

/**
 * `npm start` runs the server as npm's own child (package.json: `exec sh bin/tally`), so npm's
 * SIGTERM/SIGINT reach it, with TALLY_EXIT_WITH_PARENT set to npm's pid (the script shell's
 * $PPID). Should npm die without passing a signal on (SIGKILL), the server is handed to another
 * parent; it notices and stops as on SIGTERM rather than serve on with no one to stop it. The
 * parent is named, not read when the watch starts: npm killed while the server was starting (or
 * between the ready line and the watch) had left a server whose parent already was the new one,
 * serving forever. `1` (as before) watches the parent this process started under; any other
 * value, no parent.
 */
function watchParent(stop: (reason: string) => void): void {
  const wanted = process.env['TALLY_EXIT_WITH_PARENT'];
  const named = Number(wanted);
  // "1": the parent this process started under; a pid: that process; anything else: no watch.
  if (wanted !== '1' && !(/^\d+$/.test(wanted ?? '') && Number.isSafeInteger(named) && named > 1)) return;
  delete process.env['TALLY_EXIT_WITH_PARENT'];
  const parent = wanted === '1' ? STARTED_UNDER : named;
  const gone = (): boolean => {
    if (process.ppid === parent) return false;
    stop(`parent process ${parent} exited`);
    return true;
  };
  if (gone()) return;
  const timer = setInterval(() => {
    if (gone()) clearInterval(timer);
  }, PARENT_POLL_MS);
  timer.unref();
}

/**
 * The engine and, in cluster mode (server/cluster/, docs/cluster.md: Kafka is the write-ahead
 * log), the cluster node, started at once after the engine opened: it takes the offsets the
 * engine's WAL replay recovered. With --cluster-nodes, saved and cached queries run through the
 * cluster's router once it is up and caught up.
 */
async function openNode(config: Config): Promise<{ engine: TallyEngine; cluster: ClusterNode | null }> {
  const savedRunner = (config.cluster?.nodes.length ?? 0) > 0 ? new SavedQueryRunner() : null;
  const engine = await openEngine(openOptions(config, savedRunner));
  // Until the banner is shown, the next start shows it (this one may fail before it serves).
  if (engine.created) markKeysNotShown(config.dataDir);
  const cluster = await startClusterMode(config, engine);
  if (cluster?.queries !== undefined) savedRunner?.bind(cluster.queries, () => cluster.caughtUp);
  return { engine, cluster };
}

/** The cluster node when --cluster-brokers is given (null otherwise); a failed start closes the engine. */
async function startClusterMode(config: Config, engine: TallyEngine): Promise<ClusterNode | null> {
  if (config.cluster === undefined) return null;
  return startCluster({
    engine, logger, dataDir: config.dataDir, fsync: config.fsync, ...config.cluster,
  }).catch(async (error: unknown) => {
    await engine.close().catch(() => {});
    throw error instanceof ClusterStartError ? new StartupError(error.message) : error;
  });
}

/** Prometheus metrics; in cluster mode with the partitions' lag and the nodes' membership. */
function metricsOf(engine: TallyEngine, cluster: ClusterNode | null): Metrics {
  const metrics = new Metrics(engine);
  if (cluster !== null) metrics.addCluster(cluster.status);
  return metrics;
}

/** With --cluster-nodes, the outbound listener's view of the cluster: every node a broker (cluster/outbound.ts). */
function outboundOptions(config: Config, cluster: ClusterNode | null): Record<string, unknown> {
  if (cluster === null || config.cluster === undefined || config.cluster.nodes.length === 0) return {};
  const { nodes, nodeId: self, replicas } = config.cluster;
  return { cluster: outboundView({ nodes, self, replicas, topic: cluster.topic, partitions: cluster.partitions }) };
}

async function main(): Promise<void> {
  // Files and directories the server creates are the owner's only (the keys are in projects.json).
  process.umask(0o077);
  const config = readConfig();
  if (config.help) {
    process.stdout.write(usage() + '\n');
    return;
  }
  if (config.version) {
    process.stdout.write(`tally ${packageVersion()}\n`);
    return;
  }
  if (config.command === 'keys') {
    process.stdout.write(`${keysText(readKeys(config.dataDir), null)}\n`);
    return;
  }
  logger = jsonLogger(config.logLevel);
  checkDataDir(config.dataDir);
  const { engine, cluster } = await openNode(config);
  const http = await startHttp({
    engine, host: config.host, port: config.httpPort, trustProxy: config.trustProxy, logger, metrics: metricsOf(engine, cluster),
    ...(cluster !== null && { cluster }),
    ...(config.tlsCert && config.tlsKey
      && { tls: { certFile: config.tlsCert, keyFile: config.tlsKey } }),
  }).catch((error: unknown) => {
    throw listenError(error, 'http-port', config.host, config.httpPort) ?? error;
  });
  // In cluster mode a produce goes through the events topic as HTTP writes do (docs/cluster.md).
  const kafkaIn = await startKafka(config, engine, 'in', config.kafkaInPort,
    cluster === null ? {} : { clusterWrite: { nodeId: config.cluster!.nodeId, write: cluster.write } });
  const kafkaOut = await startKafka(config, engine, 'out', config.kafkaOutPort, outboundOptions(config, cluster));
  const bridge = await startBridge(config, engine);
  if (keysNotShown(config.dataDir)) {
    const view = { orgId: engine.organization.id, orgKey: engine.organization.key, projects: engine.projects.list() };
    process.stdout.write(`${bannerText(view, http.url, config.dataDir)}\n`);
    markKeysShown(config.dataDir);
  }
  if (cluster !== null) {
    process.stdout.write(`tally cluster node=${config.cluster!.nodeId} topic=${cluster.topic} `
      + `partitions=${cluster.partitions} replication=${cluster.replicationFactor} brokers=${config.cluster!.brokers.join(',')}`
      + (cluster.queries === undefined ? '\n' : ` nodes=${config.cluster!.nodes.length} replicas=${config.cluster!.replicas} owned=${cluster.owned.join(',')}\n`));
  }
  const ready = `http=${http.url} kafka_in=${kafkaIn.address} kafka_out=${kafkaOut.address}`;
  process.stdout.write(`tally ready ${ready}\n`);
  process.stdout.write(`tally explorer ${http.url}/explorer (open it in a browser)\n`);

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping; finishing in-flight requests`);
    await bridge?.close();
    await Promise.all([
      kafkaIn.listener?.close(), kafkaOut.listener?.close(), http.close(SHUTDOWN_DRAIN_MS),
    ]);
    // After the HTTP writes waiting for Kafka were answered; before the engine's last flush.
    await cluster?.close();
    await engine.close();
    log('stopped');
    process.exit(0);
  };
  const onSignal = (signal: string) => {
    stop(signal).catch((error: unknown) => {
      logger.write('error', 'shutdown failed', { error });
      process.exit(1);
    });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  watchParent(onSignal);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`tally: ${error.message}\n\n${usage()}\n`);
    process.exit(2);
  }
  if (error instanceof StartupError || error instanceof DataDirError) {
    // The engine's lock (if it was taken) is removed by its exit hook.
    process.stderr.write(`tally: ${error.message}\n`);
    process.exit(1);
  }
  logger.write('error', 'tally failed to start', { error });
  process.exit(1);
});
