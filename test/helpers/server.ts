/**
 * Starts the real Tally server as a child process (so kill -9 is real) on 127.0.0.1 and port 0 with a
 * temporary data dir, and hands tests its URL, the organization key and the default project's keys.
 * Keys come from the organization API (the org key is passed in), not from parsing the banner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { client } from './http.js';

/** dist/test/helpers/server.js → dist/server/main.js */
export const MAIN_JS = fileURLToPath(new URL('../../server/main.js', import.meta.url));
/** The launcher `tally` and `npm start` run (it sets malloc tunables, then execs Node on MAIN_JS). */
export const LAUNCHER = fileURLToPath(new URL('../../../bin/tally', import.meta.url));

/**
 * The environment defaults the launcher sets (its `: "${NAME:=value}"` lines): servers started
 * here run node directly, so node flags can be added (TALLY_NODE_ARGS), with the same tunables.
 */
export function launcherDefaults(): Record<string, string> {
  const defaults: Record<string, string> = {};
  for (const [, name, value] of readFileSync(LAUNCHER, 'utf8').matchAll(/^: "\$\{(\w+):=([^}]*)\}"$/gm)) {
    defaults[name] = value;
  }
  return defaults;
}

const READY_TIMEOUT_MS = 30_000;
const READY_RE = /^tally ready http=(\S+) kafka_in=(\S+) kafka_out=(\S+)$/m;

export interface Keys {
  readonly master: string;
  readonly write: string;
  readonly read: string;
}

export interface StartOptions {
  /** Reuse a data dir (restart); default a fresh temp dir removed by cleanup(). */
  readonly dataDir?: string;
  readonly orgKey?: string;
  /** The key the projects are listed with (default orgKey): a cluster node adopts the shared organization's. */
  readonly listKey?: string;
  readonly args?: readonly string[];
}

export interface TestServer {
  readonly url: string;
  readonly dataDir: string;
  readonly orgKey: string;
  readonly projectId: string;
  readonly keys: Keys;
  /** Everything the process printed to stdout so far. */
  stdout(): string;
  stderr(): string;
  readonly child: ChildProcess;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL; resolves once the process is gone. */
  kill9(): Promise<void>;
  /** Starts a new server on the same data dir and org key. */
  restart(args?: readonly string[]): Promise<TestServer>;
  /**
   * Removes the data dir (after stop/kill9). A process still running (a test that failed before
   * stopping it) is killed first, so it cannot keep the test file alive until tap's timeout.
   */
  cleanup(): void;
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The URL from a starting server's ready line; rejects (with its output) if it exits or stalls first. */
export function waitReady(child: ChildProcess, out: { stdout: string; stderr: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('server not ready in time')), READY_TIMEOUT_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(new Error(`${error.message}\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`));
    };
    child.stdout!.on('data', (chunk: Buffer) => {
      out.stdout += chunk.toString();
      const match = READY_RE.exec(out.stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => { out.stderr += chunk.toString(); });
    child.once('exit', (code) => fail(new Error(`server exited with ${code} before ready`)));
  });
}

/** GET with node:http(s); HTTPS test servers use self-signed certificates. */
function getJson(url: string, key: string): Promise<{ status: number; body: unknown }> {
  const transport = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const request = transport.get(url, { headers: { Authorization: key }, rejectUnauthorized: false }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => { text += chunk.toString(); });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
    });
    request.on('error', reject);
  });
}

async function defaultProject(url: string, orgKey: string): Promise<{ id: string; api_keys: Keys }> {
  const { status, body } = await getJson(`${url}/3.0/organizations/default/projects`, orgKey);
  const projects = body as { id: string; api_keys: Keys }[];
  if (status !== 200 || !Array.isArray(projects) || projects.length === 0) {
    throw new Error(`cannot list projects: ${status} ${JSON.stringify(projects)}`);
  }
  return projects[0]!;
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'tally-test-'));
  const orgKey = options.orgKey ?? randomBytes(32).toString('hex');
  // TALLY_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the server in benchmarks.
  const nodeArgs = (process.env.TALLY_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const args = [...nodeArgs, MAIN_JS, '--data', dataDir, '--host', '127.0.0.1', '--http-port', '0',
    '--kafka-in-port', '0', '--kafka-out-port', '0', '--org-key', orgKey, ...(options.args ?? [])];
  // Without tap's NODE_OPTIONS loaders (coverage, TS import hooks): the server runs as in production.
  const env = { ...launcherDefaults(), ...process.env, NODE_OPTIONS: '' };
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const out = { stdout: '', stderr: '' };
  const url = await waitReady(child, out);
  const project = await defaultProject(url, options.listKey ?? orgKey);
  const server: TestServer = {
    url, dataDir, orgKey, projectId: project.id, keys: project.api_keys, child,
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    stop: async () => {
      child.kill('SIGTERM');
      return exited(child);
    },
    kill9: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    restart: (restartArgs) => startServer({ dataDir, orgKey, args: restartArgs ?? options.args ?? [] }),
    cleanup: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
  return server;
}

/**
 * One server for a whole test file: started before its first test, stopped and removed after the
 * last. The returned object's fields are set once the server is up.
 */
export function serverForFile(
  tap: { before(fn: () => Promise<void>): void; teardown(fn: () => Promise<void>): void }, options: StartOptions = {},
): { server: TestServer; api: ReturnType<typeof client> } {
  const shared = {} as { server: TestServer; api: ReturnType<typeof client> };
  tap.before(async () => {
    shared.server = await startServer(options);
    shared.api = client(shared.server.url);
  });
  tap.teardown(async () => {
    if (shared.server.child.exitCode === null && shared.server.child.signalCode === null) await shared.server.stop();
    shared.server.cleanup();
  });
  return shared;
}

/** scripts/ports.mjs (plain ESM, not compiled): a port reserved for this process (see there why). */
const PORTS = new URL('../../../scripts/ports.mjs', import.meta.url).href;

export async function freePort(): Promise<number> {
  const { freePort: reserved } = (await import(PORTS)) as { freePort: () => Promise<number> };
  return reserved();
}
