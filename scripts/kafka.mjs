#!/usr/bin/env node
/**
 * A real Apache Kafka (KRaft, combined broker+controller nodes) for development and tests, run from
 * Maven Central jars with the machine's Java 17 and Maven: no tarball, no Docker.
 *
 *   node scripts/kafka.mjs fetch                      jars into the cache (once; then does nothing)
 *   node scripts/kafka.mjs start --nodes 1|3 --dir DIR   format + start; prints the bootstrap servers
 *   node scripts/kafka.mjs stop --dir DIR              SIGTERM (then SIGKILL) the nodes it started
 *   node scripts/kafka.mjs stop-node --dir DIR --node N   stop one node (its data stays)
 *   node scripts/kafka.mjs start-node --dir DIR --node N  start it again on its data
 *
 * The cache is .cache/kafka/<version>/ in the repository (gitignored), or $TALLY_KAFKA_CACHE. Each
 * node of DIR gets DIR/nN/server.properties, its log dir DIR/nN/data and its output DIR/nN/kafka.log;
 * DIR/pids.json names the processes `stop` ends, DIR/bootstrap the servers. The same functions are
 * exported for tests (test/helpers/kafka-cluster.ts).
 */
import { freePort } from './ports.mjs';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync, mkdirSync, openSync, closeSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync,
} from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The pinned Kafka release, and the log4j2 release its kafka-server POM brings (log4j-core/api). */
export const KAFKA_VERSION = '4.1.2';
const LOG4J_VERSION = '2.25.3';
const DEPENDENCY_PLUGIN = 'org.apache.maven.plugins:maven-dependency-plugin:3.8.1';
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const INSTALL_HINT = 'A real Kafka needs Java 17+ and Maven; on Debian or Ubuntu: '
  + 'sudo apt-get install -y openjdk-17-jre-headless maven';

export function cacheDir() {
  return process.env.TALLY_KAFKA_CACHE
    ? resolve(process.env.TALLY_KAFKA_CACHE, KAFKA_VERSION)
    : join(REPO, '.cache', 'kafka', KAFKA_VERSION);
}

function has(command, args) {
  const result = spawnSync(command, args, { stdio: 'ignore' });
  return result.error === undefined && result.status === 0;
}

/** Which of java and mvn are missing (empty when both run). */
export function missingTools() {
  const missing = [];
  if (!has('java', ['-version'])) missing.push('java');
  if (!has('mvn', ['-v'])) missing.push('mvn');
  return missing;
}

const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.tally</groupId><artifactId>kafka-runtime</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <!-- The SLF4J 1.7 binding is "releaseOnly" in Kafka's build (tarball only), so not in its POM. -->
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>${LOG4J_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>${LOG4J_VERSION}</version></dependency>
  </dependencies>
</project>
`;

/** Warnings and errors to the node's output, plus the "Kafka Server started" line. */
const LOG4J2 = `status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = OUT
logger.srv.name = kafka.server.KafkaRaftServer
logger.srv.level = info
`;

/**
 * Kafka's jars (kafka_2.13, its runtime dependencies, the log4j2 binding) in cacheDir()/libs.
 * Does nothing when they are there; otherwise Maven copies them into a temporary dir renamed into
 * place, so a concurrent or interrupted fetch never leaves half a classpath.
 */
export function fetchKafka({ quiet = false } = {}) {
  const dir = cacheDir();
  const libs = join(dir, 'libs');
  if (existsSync(join(libs, '.complete'))) {
    if (!existsSync(join(dir, 'log4j2.properties'))) writeFileSync(join(dir, 'log4j2.properties'), LOG4J2);
    return libs;
  }
  const missing = missingTools();
  if (missing.length > 0) throw new Error(`${missing.join(' and ')} not found. ${INSTALL_HINT}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'pom.xml'), POM);
  const tmp = join(dir, `libs.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  if (!quiet) console.error(`kafka: fetching Kafka ${KAFKA_VERSION} jars with Maven into ${libs}`);
  const result = spawnSync('mvn', ['-B', '-q', '-f', join(dir, 'pom.xml'), `${DEPENDENCY_PLUGIN}:copy-dependencies`,
    `-DoutputDirectory=${tmp}`, '-DincludeScope=runtime'], { encoding: 'utf8' });
  if (result.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`mvn copy-dependencies failed (${result.status}):\n${result.stdout}${result.stderr}`);
  }
  const jars = readdirSync(tmp).filter((name) => name.endsWith('.jar')).sort();
  if (!jars.some((name) => name.startsWith(`kafka_2.13-${KAFKA_VERSION}`))) {
    throw new Error(`mvn copied no kafka_2.13 jar into ${tmp}`);
  }
  writeFileSync(join(tmp, '.complete'), jars.join('\n') + '\n');
  if (existsSync(join(libs, '.complete'))) {
    rmSync(tmp, { recursive: true, force: true }); // another fetch finished first
  } else {
    rmSync(libs, { recursive: true, force: true });
    renameSync(tmp, libs);
  }
  writeFileSync(join(dir, 'log4j2.properties'), LOG4J2);
  return libs;
}


/** A Kafka Uuid string (base64url of 16 random bytes), as `kafka-storage random-uuid` prints. */
function clusterId() {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function nodeProperties({ id, nodes, ports, dataDir }) {
  const n = nodes.length;
  const replication = Math.min(n, 3);
  const minIsr = n >= 3 ? 2 : 1;
  const me = ports[id - 1];
  return [
    'process.roles=broker,controller',
    `node.id=${id}`,
    // A static quorum: formatted without --standalone/--initial-controllers, same for 1 and 3 nodes.
    `controller.quorum.voters=${ports.map((p, i) => `${i + 1}@127.0.0.1:${p.controller}`).join(',')}`,
    `listeners=PLAINTEXT://127.0.0.1:${me.broker},CONTROLLER://127.0.0.1:${me.controller}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${me.broker}`,
    'inter.broker.listener.name=PLAINTEXT',
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${dataDir}`,
    'num.partitions=1',
    `default.replication.factor=${replication}`,
    `min.insync.replicas=${minIsr}`,
    'auto.create.topics.enable=true',
    'unclean.leader.election.enable=false',
    `offsets.topic.replication.factor=${replication}`,
    'offsets.topic.num.partitions=3',
    `transaction.state.log.replication.factor=${replication}`,
    `transaction.state.log.min.isr=${minIsr}`,
    'transaction.state.log.num.partitions=3',
    `share.coordinator.state.topic.replication.factor=${replication}`,
    `share.coordinator.state.topic.min.isr=${minIsr}`,
    'group.initial.rebalance.delay.ms=0',
    'num.network.threads=2',
    'num.io.threads=2',
    'num.replica.fetchers=1',
    'background.threads=2',
    'log.cleaner.threads=1',
    'log.cleaner.dedupe.buffer.size=4194304',
    '',
  ].join('\n');
}

const JVM_OPTS = ['-Xms64m', '-Xmx256m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Djava.awt.headless=true'];

function javaArgs(libs, mainClass, args) {
  return [...JVM_OPTS, `-Dlog4j2.configurationFile=${join(dirname(libs), 'log4j2.properties')}`,
    '-cp', join(libs, '*'), mainClass, ...args];
}

function runJava(libs, mainClass, args) {
  return new Promise((resolveRun, reject) => {
    const child = spawn('java', javaArgs(libs, mainClass, args), { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code === 0) resolveRun(output);
      else reject(new Error(`java ${mainClass} ${args.join(' ')} exited with ${code}:\n${output}`));
    });
  });
}

function tcpOpen(port) {
  return new Promise((resolveOpen) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => { socket.destroy(); resolveOpen(true); });
    socket.once('error', () => resolveOpen(false));
  });
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True while `pid` is still the process we started (its command line names `marker`), not a reused pid. */
function ours(pid, marker) {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
  } catch {
    return process.platform !== 'linux';
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tail(file, lines = 40) {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * Formats and starts `nodes` combined KRaft nodes under `dir` (made if missing; must not hold a
 * running cluster) and waits until every broker answers a kafkajs describeCluster. With
 * `exitWithParent` each node also gets a small watchdog that stops it once this process is gone
 * (for tests, so a killed test runner leaves no JVM behind).
 */
export async function startKafka({ nodes = 1, dir, exitWithParent = false, timeoutMs = 120_000, log = () => {} } = {}) {
  if (nodes !== 1 && nodes !== 3) throw new Error(`--nodes must be 1 or 3, not ${nodes}`);
  if (!dir) throw new Error('startKafka needs a dir');
  dir = resolve(dir);
  const missing = missingTools();
  if (missing.includes('java')) throw new Error(`java not found. ${INSTALL_HINT}`);
  const libs = fetchKafka();
  mkdirSync(dir, { recursive: true });
  const pidFile = join(dir, 'pids.json');
  if (existsSync(pidFile)) {
    const running = JSON.parse(readFileSync(pidFile, 'utf8')).filter((p) => ours(p.pid, p.marker));
    if (running.length > 0) throw new Error(`${dir} has a running Kafka (pids ${running.map((p) => p.pid)}); stop it first`);
  }
  const started = Date.now();
  const ports = [];
  for (let i = 0; i < nodes; i++) ports.push({ broker: await freePort(), controller: await freePort() });
  const cid = clusterId();
  const list = Array.from({ length: nodes }, (_, i) => {
    const id = i + 1;
    const home = join(dir, `n${id}`);
    rmSync(home, { recursive: true, force: true });
    mkdirSync(home, { recursive: true });
    const config = join(home, 'server.properties');
    writeFileSync(config, nodeProperties({ id, nodes: ports, ports, dataDir: join(home, 'data') }));
    return { id, home, config, port: ports[i].broker, log: join(home, 'kafka.log') };
  });
  await Promise.all(list.map((n) => runJava(libs, 'kafka.tools.StorageTool', ['format', '-t', cid, '-c', n.config])));
  log(`kafka: formatted ${nodes} node(s) in ${Date.now() - started} ms`);

  const pids = [];
  const children = list.map((n) => {
    const { child, entries } = spawnNode(libs, n, exitWithParent);
    pids.push(...entries);
    return { ...n, child };
  });
  writeFileSync(pidFile, JSON.stringify(pids, null, 2) + '\n');
  const bootstrap = list.map((n) => `127.0.0.1:${n.port}`);
  writeFileSync(join(dir, 'bootstrap'), bootstrap.join(',') + '\n');

  try {
    await waitUntilUp(children, bootstrap, started + timeoutMs);
  } catch (error) {
    await stopKafka({ dir });
    throw error;
  }
  log(`kafka: ${nodes} node(s) up in ${Date.now() - started} ms at ${bootstrap.join(',')}`);
  return { bootstrap, dir, stop: () => stopKafka({ dir }) };
}

/** Starts one formatted node (n: id, home, config, log); its pids.json entries (and its watchdog's). */
function spawnNode(libs, n, exitWithParent) {
  const out = openSync(n.log, 'a');
  const child = spawn('java', javaArgs(libs, 'kafka.Kafka', [n.config]), {
    detached: true, stdio: ['ignore', out, out], cwd: n.home,
  });
  closeSync(out);
  child.unref();
  const entries = [{ node: n.id, pid: child.pid, marker: n.config }];
  if (exitWithParent) {
    // Polls the parent; once it is gone, TERM then KILL the node (only if it still runs that config).
    const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${child.pid} 2>/dev/null; do sleep 1; done
kill -0 ${child.pid} 2>/dev/null || exit 0
kill -TERM ${child.pid}; i=0; while kill -0 ${child.pid} 2>/dev/null && [ $i -lt 10 ]; do sleep 1; i=$((i+1)); done
kill -KILL ${child.pid} 2>/dev/null; exit 0`;
    const dog = spawn('sh', ['-c', script, `tally-kafka-watchdog ${n.config}`], { detached: true, stdio: 'ignore' });
    dog.unref();
    entries.push({ node: n.id, pid: dog.pid, marker: `tally-kafka-watchdog ${n.config}`, watchdog: true });
  }
  return { child, entries };
}

function readPids(dir) {
  const pidFile = join(resolve(dir), 'pids.json');
  return existsSync(pidFile) ? JSON.parse(readFileSync(pidFile, 'utf8')) : [];
}

function nodeOf(dir, node) {
  const home = join(resolve(dir), `n${node}`);
  const config = join(home, 'server.properties');
  if (!existsSync(config)) throw new Error(`${dir} has no node ${node}`);
  const port = Number(/^listeners=PLAINTEXT:\/\/[^:]+:(\d+)/m.exec(readFileSync(config, 'utf8'))?.[1]);
  return { id: node, home, config, port, log: join(home, 'kafka.log') };
}

/**
 * Stops one node of a cluster startKafka made in `dir` (SIGTERM: a controlled shutdown, so its
 * partitions' leadership moves and it leaves the in-sync replicas at once; SIGKILL after
 * `graceMs`; with `kill`, SIGKILL at once: a crash, no controlled shutdown, its partitions led
 * elsewhere only once the controller notices). Its data stays for startKafkaNode.
 */
export async function stopKafkaNode({ dir, node, graceMs = 15_000, kill = false } = {}) {
  if (!dir || !node) throw new Error('stopKafkaNode needs a dir and a node');
  const entries = readPids(dir);
  const mine = entries.filter((p) => p.node === node);
  for (const e of mine.filter((p) => p.watchdog && ours(p.pid, p.marker))) signal(e.pid, 'SIGKILL');
  const procs = mine.filter((p) => !p.watchdog && ours(p.pid, p.marker));
  for (const e of procs) signal(e.pid, kill ? 'SIGKILL' : 'SIGTERM');
  const deadline = Date.now() + (kill ? 0 : graceMs);
  while (procs.some((e) => alive(e.pid)) && Date.now() < deadline) await sleep(100);
  for (const e of procs) if (ours(e.pid, e.marker)) signal(e.pid, 'SIGKILL');
  while (procs.some((e) => alive(e.pid))) await sleep(50);
  writeFileSync(join(resolve(dir), 'pids.json'), JSON.stringify(entries.filter((p) => p.node !== node), null, 2) + '\n');
}

/** Starts a node stopKafkaNode stopped, on its data; resolves once the cluster lists it again. */
export async function startKafkaNode({ dir, node, exitWithParent = false, timeoutMs = 90_000 } = {}) {
  if (!dir || !node) throw new Error('startKafkaNode needs a dir and a node');
  const entries = readPids(dir);
  if (entries.some((p) => p.node === node && !p.watchdog && ours(p.pid, p.marker))) throw new Error(`node ${node} runs already`);
  const n = nodeOf(dir, node);
  const { child, entries: added } = spawnNode(fetchKafka(), n, exitWithParent);
  writeFileSync(join(resolve(dir), 'pids.json'), JSON.stringify([...entries, ...added], null, 2) + '\n');
  const bootstrap = readFileSync(join(resolve(dir), 'bootstrap'), 'utf8').trim().split(',');
  await waitUntilUp([{ ...n, child }], bootstrap, Date.now() + timeoutMs, node);
}

async function waitUntilUp(children, bootstrap, deadline, listed) {
  const failIfDead = () => {
    for (const n of children) {
      if (n.child.exitCode !== null || n.child.signalCode !== null) {
        throw new Error(`kafka node ${n.id} exited (${n.child.exitCode ?? n.child.signalCode}) while starting:\n${tail(n.log)}`);
      }
    }
  };
  const timedOut = (what) => new Error(`kafka: ${what} not in time:\n`
    + children.map((n) => `--- node ${n.id} (${n.log})\n${tail(n.log, 15)}`).join('\n'));
  for (const n of children) {
    while (!(await tcpOpen(n.port))) {
      failIfDead();
      if (Date.now() > deadline) throw timedOut(`node ${n.id} listening on ${n.port}`);
      await sleep(200);
    }
  }
  // A new cluster: every broker asked on its own (a client's metadata comes from one broker, and
  // one that has not caught up lists fewer) lists them all. A restarted node: some broker lists it
  // (others of the cluster may be stopped).
  const { Kafka, logLevel } = (await import('kafkajs')).default;
  const client = (brokers) => new Kafka({ clientId: 'tally-kafka-start', brokers, logLevel: logLevel.NOTHING }).admin();
  const admins = listed !== undefined ? [client(bootstrap)] : bootstrap.map((b) => client([b]));
  const sees = async (admin) => {
    try {
      await admin.connect();
      const { brokers } = await admin.describeCluster();
      return listed !== undefined ? brokers.some((b) => b.nodeId === listed) : brokers.length === children.length;
    } catch {
      return false; // not up yet
    }
  };
  try {
    for (;;) {
      failIfDead();
      if ((await Promise.all(admins.map(sees))).every(Boolean)) return;
      if (Date.now() > deadline) throw timedOut(`${children.length} broker(s) answering describeCluster`);
      await sleep(300);
    }
  } finally {
    await Promise.all(admins.map((admin) => admin.disconnect().catch(() => {})));
  }
}

/**
 * Stops exactly the processes `startKafka` recorded in dir/pids.json: SIGTERM, then SIGKILL after
 * `graceMs`. A pid no longer running its node's command line is left alone. Removes pids.json only.
 */
export async function stopKafka({ dir, graceMs = 15_000 } = {}) {
  if (!dir) throw new Error('stopKafka needs a dir');
  const pidFile = join(resolve(dir), 'pids.json');
  if (!existsSync(pidFile)) return [];
  const entries = JSON.parse(readFileSync(pidFile, 'utf8'));
  // Watchdogs first (they would otherwise race us), then the nodes, all at once.
  for (const e of entries.filter((p) => p.watchdog && ours(p.pid, p.marker))) signal(e.pid, 'SIGKILL');
  const nodes = entries.filter((p) => !p.watchdog && ours(p.pid, p.marker));
  for (const e of nodes) signal(e.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (nodes.some((e) => alive(e.pid)) && Date.now() < deadline) await sleep(100);
  const killed = [];
  for (const e of nodes) {
    if (ours(e.pid, e.marker)) {
      signal(e.pid, 'SIGKILL');
      killed.push(e.pid);
    }
  }
  while (nodes.some((e) => alive(e.pid))) await sleep(50);
  rmSync(pidFile, { force: true });
  return killed;
}

function signal(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--nodes') opts.nodes = Number(argv[++i]);
    else if (arg === '--dir') opts.dir = argv[++i];
    else if (arg === '--node') opts.node = Number(argv[++i]);
    else throw new Error(`unknown argument ${arg}`);
  }
  return opts;
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  const opts = parseArgs(rest);
  const log = (msg) => console.error(msg);
  if (command === 'fetch') {
    const started = Date.now();
    const libs = fetchKafka();
    console.error(`kafka: Kafka ${KAFKA_VERSION} jars in ${libs} (${Date.now() - started} ms)`);
  } else if (command === 'start') {
    if (!opts.dir) throw new Error('start needs --dir DIR');
    const { bootstrap } = await startKafka({ nodes: opts.nodes ?? 1, dir: opts.dir, log });
    console.log(bootstrap.join(','));
  } else if (command === 'stop') {
    if (!opts.dir) throw new Error('stop needs --dir DIR');
    const killed = await stopKafka({ dir: opts.dir });
    if (killed.length > 0) console.error(`kafka: SIGKILLed ${killed.join(', ')} after the grace period`);
  } else if (command === 'stop-node' || command === 'start-node') {
    if (!opts.dir || !opts.node) throw new Error(`${command} needs --dir DIR --node N`);
    await (command === 'stop-node' ? stopKafkaNode : startKafkaNode)({ dir: opts.dir, node: opts.node });
  } else {
    console.error('usage: node scripts/kafka.mjs fetch | start --nodes 1|3 --dir DIR | stop --dir DIR'
      + ' | stop-node --dir DIR --node N | start-node --dir DIR --node N');
    process.exit(2);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(`kafka: ${error.message}`);
    process.exit(1);
  });
}
