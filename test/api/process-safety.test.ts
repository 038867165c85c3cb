/**
 * The server as one process among others on a machine: one Tally per data directory (a lock taken
 * before anything is written), one per port (no SO_REUSEPORT sharing), SIGTERM through `npm start`
 * reaching the server, and a data directory only its owner can read. Real child processes, real
 * sockets.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { openEngine } from '../../engine/index.js';
import { client } from '../helpers/http.js';
import { MAIN_JS, freePort, launcherDefaults, startServer, waitReady } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Outcome {
  /** Set when the process printed its ready line (it is then still running). */
  readonly url: string | null;
  /** The exit code when it exited before being ready. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly child: ChildProcess;
}

/** Starts `node dist/server/main.js` with `args` and waits until it is ready or has exited. */
async function attempt(args: readonly string[]): Promise<Outcome> {
  const child = spawn(process.execPath, [MAIN_JS, '--host', '127.0.0.1', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...launcherDefaults(), ...process.env, NODE_OPTIONS: '' } });
  const out = { stdout: '', stderr: '' };
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const url = await waitReady(child, out);
    return { url, code: null, ...out, child };
  } catch {
    const code = await exited;
    return { url: null, code, ...out, child };
  }
}

function stopIfRunning(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Every file and directory under `dir` with its size and modification time. */
function snapshot(dir: string): Record<string, string> {
  const entries: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of fs.readdirSync(at)) {
      const full = path.join(at, name);
      const stat = fs.statSync(full);
      entries[path.relative(dir, full)] = stat.isDirectory() ? 'dir' : `${stat.size} ${stat.mtimeMs}`;
      if (stat.isDirectory()) walk(full);
    }
  };
  walk(dir);
  return entries;
}

function orgKey(): string {
  return randomBytes(32).toString('hex');
}

function tempDir(t: Test, prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

/** Pids of the processes whose command line holds `needle`. */
function processesWith(needle: string): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(needle)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

t.test('a second Tally on a data directory in use exits at once and touches nothing in it', async (t) => {
  const first = await startServer();
  t.teardown(async () => { await stopIfRunning(first.child); first.cleanup(); });
  const before = snapshot(first.dataDir);
  const second = await attempt(['--data', first.dataDir, '--http-port', '0', '--kafka-in-port', '0',
    '--kafka-out-port', '0', '--org-key', first.orgKey]);
  t.teardown(() => stopIfRunning(second.child));
  t.equal(second.url, null, 'the second server never became ready');
  t.not(second.code, 0, 'it exited non-zero');
  t.ok(second.stderr.includes(first.dataDir), `the message names the directory: ${second.stderr.trim()}`);
  t.ok(second.stderr.includes(`pid ${first.child.pid}`), 'and the pid holding it');
  t.notMatch(second.stderr, /\n\s+at /, 'no stack trace');
  t.same(snapshot(first.dataDir), before, 'no file in the directory was created or changed');

  const api = client(first.url);
  const base = `/3.0/projects/${first.projectId}`;
  t.equal((await api.post(`${base}/events/clicks`, { key: first.keys.write, body: { n: 1 } })).status, 201,
    'the first server still takes writes');

  // The embedded engine takes the same lock.
  await t.rejects(openEngine({ dataDir: first.dataDir, queryWorkers: 0, ingestWorkers: 0 }),
    new RegExp(`in use by pid ${first.child.pid}`), 'openEngine on the same directory is refused');
  t.same(Object.keys(snapshot(first.dataDir)).filter((name) => name.startsWith('wal')).sort(),
    Object.keys(before).filter((name) => name.startsWith('wal')).sort(), 'and made no WAL file');

  // kill -9 leaves the lock behind; the next start sees its pid is gone and takes it over.
  await first.kill9();
  const again = await first.restart();
  t.teardown(() => stopIfRunning(again.child));
  const count = await client(again.url).get(`${base}/queries/count?event_collection=clicks&timeframe=this_1_days`,
    { key: again.keys.read });
  t.same(count.body, { result: 1 }, 'a restart after kill -9 starts and has the acknowledged event');
  t.equal(await again.stop(), 0);
  t.notOk(fs.readdirSync(first.dataDir).some((name) => /lock|pid/i.test(name)), 'a clean stop releases the lock');
  const embedded = await openEngine({ dataDir: first.dataDir, queryWorkers: 0, ingestWorkers: 0 });
  await embedded.close();
  t.pass('the engine opens once the server is gone');
});

t.test('an HTTP or Kafka port in use makes a second Tally exit with a one-line message', async (t) => {
  // Fixed ports, as in production (a port the kernel picked for port 0 is never shared anyway).
  const httpPort = await freePort();
  const kafkaPort = await freePort();
  const first = await startServer({ args: ['--http-port', String(httpPort), '--kafka-in-port', String(kafkaPort)] });
  t.teardown(async () => { await stopIfRunning(first.child); first.cleanup(); });

  const sameHttp = await attempt(['--data', tempDir(t, 'tally-port-'), '--http-port', String(httpPort),
    '--kafka-in-port', '0', '--kafka-out-port', '0', '--org-key', orgKey()]);
  t.teardown(() => stopIfRunning(sameHttp.child));
  t.equal(sameHttp.url, null, 'a second server on the same HTTP port never becomes ready');
  t.not(sameHttp.code, 0);
  t.match(sameHttp.stderr, new RegExp(`port ${httpPort} on 127\\.0\\.0\\.1 is in use.*--http-port`));
  t.equal(sameHttp.stderr.trim().split('\n').length, 1, `one line: ${sameHttp.stderr.trim()}`);

  const sameKafka = await attempt(['--data', tempDir(t, 'tally-port-'), '--http-port', '0',
    '--kafka-in-port', String(kafkaPort), '--kafka-out-port', '0', '--org-key', orgKey()]);
  t.teardown(() => stopIfRunning(sameKafka.child));
  t.equal(sameKafka.url, null);
  t.not(sameKafka.code, 0);
  t.match(sameKafka.stderr, new RegExp(`port ${kafkaPort} on 127\\.0\\.0\\.1 is in use.*--kafka-in-port`));
  t.notMatch(sameKafka.stderr, /\n\s+at |"stack"/, `no stack trace: ${sameKafka.stderr.trim()}`);

  // Every request still reaches the first server.
  const api = client(first.url);
  for (let i = 0; i < 20; i++) {
    t.equal((await api.get(`/3.0/organizations/default/projects`, { key: first.orgKey })).status, 200);
  }
});

t.test('SIGTERM to `npm start` stops the server, which drains and exits', { timeout: 120_000 }, async (t) => {
  const dataDir = tempDir(t, 'tally-npm-');
  const child = spawn('npm', ['start', '--silent', '--ignore-scripts', '--', '--data', dataDir, '--host', '127.0.0.1', '--http-port', '0',
    '--kafka-in-port', '0', '--kafka-out-port', '0', '--org-key', orgKey()],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  const npmExited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  const out = { stdout: '', stderr: '' };
  const url = await waitReady(child, out);
  const port = Number(new URL(url).port);
  const servers = processesWith(dataDir);
  t.teardown(() => {
    for (const pid of processesWith(dataDir)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  });
  t.ok(servers.length > 0, `the server runs (pids ${servers.join(', ')})`);
  t.ok(await accepting(port), 'it accepts connections');

  process.kill(child.pid!, 'SIGTERM');
  await npmExited;
  t.pass('npm exited');
  t.ok(await until(async () => !(await accepting(port)), 15_000), 'the port refuses connections');
  t.ok(await until(() => processesWith(dataDir).length === 0, 15_000),
    `no process of the server is left (${processesWith(dataDir).join(', ')})`);
  t.match(out.stderr, /"msg":"stopped"/, 'the server drained and stopped cleanly');
});

t.test('a server under `npm start` stops when npm is killed without passing a signal on', { timeout: 120_000 }, async (t) => {
  const dataDir = tempDir(t, 'tally-npm-');
  const child = spawn('npm', ['start', '--silent', '--ignore-scripts', '--', '--data', dataDir, '--host', '127.0.0.1', '--http-port', '0',
    '--kafka-in-port', '0', '--kafka-out-port', '0', '--org-key', orgKey()],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  const out = { stdout: '', stderr: '' };
  const url = await waitReady(child, out);
  const port = Number(new URL(url).port);
  t.teardown(() => {
    for (const pid of processesWith(dataDir)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  });
  child.kill('SIGKILL');
  t.ok(await until(async () => !(await accepting(port)), 15_000), 'the port refuses connections');
  t.ok(await until(() => processesWith(dataDir).length === 0, 15_000), 'no process of the server is left');
  t.match(out.stderr, /parent process \d+ exited: stopping/, 'it said why it stopped');
});

t.test('a server under `npm start` stops when npm is killed while the server is still starting', { timeout: 120_000 }, async (t) => {
  const dataDir = tempDir(t, 'tally-npm-');
  const port = await freePort();
  const child = spawn('npm', ['start', '--silent', '--ignore-scripts', '--', '--data', dataDir, '--host', '127.0.0.1', '--http-port', String(port),
    '--kafka-in-port', '0', '--kafka-out-port', '0', '--org-key', orgKey()],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  let stderr = '';
  child.stdout!.resume();
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  t.teardown(() => {
    for (const pid of processesWith(dataDir)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  });
  // The server's own process (sh has exec'd node), long before it opens its store and listens.
  const server = () => processesWith(dataDir).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('server/main.js');
    } catch {
      return false;
    }
  });
  const deadline = Date.now() + 30_000;
  while (server().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
  t.ok(server().length > 0, 'the server process started');
  child.kill('SIGKILL');
  // It was killed before the server wrote its ready line, so before the old server read its parent.
  t.ok(await until(() => processesWith(dataDir).length === 0, 30_000),
    `no process of the server is left (${processesWith(dataDir).join(', ')})`);
  t.notOk(await accepting(port), 'the port refuses connections');
  t.match(stderr, /parent process \d+ exited: stopping/, 'it said why it stopped');
});

t.test('the data directory and its files are the owner\'s only', async (t) => {
  const parent = tempDir(t, 'tally-mode-');
  const dataDir = path.join(parent, 'data');
  const server = await startServer({ dataDir });
  t.teardown(() => stopIfRunning(server.child));
  const base = `/3.0/projects/${server.projectId}`;
  t.equal((await client(server.url).post(`${base}/events/clicks`, { key: server.keys.write, body: { n: 1 } })).status, 201);
  t.equal(fs.statSync(dataDir).mode & 0o777, 0o700, 'a new data directory is 0700');
  t.equal(fs.statSync(path.join(dataDir, 'projects.json')).mode & 0o777, 0o600, 'projects.json (the keys) is 0600');
  for (const [name, kind] of Object.entries(snapshot(dataDir))) {
    const mode = fs.statSync(path.join(dataDir, name)).mode & 0o777;
    if (mode & 0o077) t.fail(`${name} is ${mode.toString(8)}`);
    else if (kind !== 'dir' && mode !== 0o600) t.fail(`${name} is ${mode.toString(8)}`);
  }
  t.equal(await server.stop(), 0);

  const open = tempDir(t, 'tally-mode-');
  fs.chmodSync(open, 0o755);
  const refused = await attempt(['--data', open, '--http-port', '0', '--kafka-in-port', '0', '--kafka-out-port', '0',
    '--org-key', orgKey()]);
  t.teardown(() => stopIfRunning(refused.child));
  t.equal(refused.url, null, 'a data directory others can read is refused');
  t.not(refused.code, 0);
  t.ok(refused.stderr.includes(`chmod 700 ${open}`), `the message says what to run: ${refused.stderr.trim()}`);
  t.same(fs.readdirSync(open), [], 'nothing was written in it');
});

t.test('a test server still running when its test cleans up is killed, not left to hold the test file open', async (t) => {
  const server = await startServer();
  const exited = new Promise<string>((resolve) => server.child.once('exit', () => resolve('exited')));
  server.cleanup();
  const outcome = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
  if (outcome !== 'exited') await stopIfRunning(server.child);
  t.equal(outcome, 'exited', 'cleanup() ended the process');
  t.notOk(fs.existsSync(server.dataDir), 'and removed its data directory');
});
