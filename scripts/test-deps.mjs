#!/usr/bin/env node
/**
 * What `npm test` needs beyond node_modules, checked before the suite runs (the `pretest` script):
 * Chromium for the explorer's browser tests, kcat and Python's confluent-kafka for the Kafka client
 * tests, openssl for the TLS test's certificate, Java and Maven for the real-Kafka test (whose jars
 * it then fetches from Maven Central once: scripts/kafka.mjs fetch). On Debian run as root (a fresh
 * CI machine, a container) the missing packages are installed with apt-get; anywhere else this
 * prints the one command to run and fails, rather than letting tests fail one by one later.
 */
import { execFileSync, spawnSync } from 'node:child_process';

/** Each need: how to tell it is there, and the Debian package that brings it. */
const NEEDS = [
  { what: 'Chromium (explorer tests)', pkg: 'chromium', present: () => has('chromium', ['--version']) },
  { what: 'kcat (Kafka tests)', pkg: 'kcat', present: () => has('kcat', ['-V']) },
  {
    what: "Python's confluent-kafka (Kafka tests)",
    pkg: 'python3-confluent-kafka',
    present: () => has('/usr/bin/python3', ['-c', 'import confluent_kafka']),
  },
  { what: 'openssl (TLS test)', pkg: 'openssl', present: () => has('openssl', ['version']) },
  { what: 'Java 17 (real Kafka test)', pkg: 'openjdk-17-jre-headless', present: () => has('java', ['-version']) },
  { what: 'Maven (fetches the real Kafka)', pkg: 'maven', present: () => has('mvn', ['-v']) },
];

function has(command, args) {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

/** Kafka's jars for test/cluster (does nothing once they are in .cache/kafka/). */
function fetchKafka() {
  const script = new URL('./kafka.mjs', import.meta.url).pathname;
  const result = spawnSync(process.execPath, [script, 'fetch'], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (result.status !== 0) {
    process.stderr.write(result.stderr);
    process.exit(1);
  }
}

const missing = NEEDS.filter((need) => !need.present());
if (missing.length === 0) {
  fetchKafka();
  process.exit(0);
}

const packages = missing.map((need) => need.pkg);
const canInstall = process.platform === 'linux' && process.getuid?.() === 0 && has('apt-get', ['--version']);
if (!canInstall) {
  console.error(`npm test needs ${missing.map((need) => need.what).join(', ')}.`);
  console.error(`On Debian or Ubuntu: sudo apt-get install -y ${packages.join(' ')}`);
  process.exit(1);
}
console.error(`npm test: installing ${packages.join(' ')} (apt-get) for ${missing.map((need) => need.what).join(', ')}`);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
execFileSync('apt-get', ['install', '-y', '-qq', ...packages], { stdio: ['ignore', 'ignore', 'inherit'], env });
const still = missing.filter((need) => !need.present());
if (still.length > 0) {
  console.error(`still missing after apt-get: ${still.map((need) => need.what).join(', ')}`);
  process.exit(1);
}
fetchKafka();
