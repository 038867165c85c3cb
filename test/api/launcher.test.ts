/**
 * bin/tally, the launcher `npm start` and the `tally` command run: it sets glibc malloc's tunables
 * (unless the environment already has them) and becomes the Node process serving, so the pid a
 * supervisor sees is the server's, SIGTERM reaches it and its exit code is the server's.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { LAUNCHER, launcherDefaults, waitReady } from '../helpers/server.js';

/** The --org-key the launched server was given. */
function orgKeyOf(pid: number): string {
  const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  return args[args.indexOf('--org-key') + 1]!;
}

function environOf(pid: number): Map<string, string> {
  const entries = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter((entry) => entry.includes('='));
  return new Map(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
}

async function launch(t: Test, env: Record<string, string | undefined>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-launcher-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const child = spawn('sh', [LAUNCHER, '--data', dataDir, '--host', '127.0.0.1', '--http-port', '0',
    '--kafka-in-port', '0', '--kafka-out-port', '0', '--org-key', randomBytes(32).toString('hex')],
  { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '', ...env } });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await waitReady(child, { stdout: '', stderr: '' });
  return { child, url, exited };
}

t.test('the launcher sets the malloc tunables and execs the server', async (t) => {
  const defaults = launcherDefaults();
  t.same(defaults, { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '1048576', UV_USE_IO_URING: '0' }, 'the defaults test servers copy');
  const { child, url, exited } = await launch(t, { MALLOC_ARENA_MAX: undefined, MALLOC_MMAP_THRESHOLD_: undefined, UV_USE_IO_URING: undefined });
  t.match(url, /^http:\/\/127.0.0.1:\d+$/, 'it printed the ready line');
  t.same(await (await fetch(`${url}/health`)).json(), { status: 'ok' });
  const cmdline = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
  t.match(cmdline[1], /dist\/server\/main\.js$/, 'the launched pid is Node running the server (exec, no shell left)');
  const environ = environOf(child.pid!);
  t.equal(environ.get('MALLOC_ARENA_MAX'), '2');
  t.equal(environ.get('MALLOC_MMAP_THRESHOLD_'), '1048576');
  t.equal(environ.get('UV_USE_IO_URING'), '0');
  // Writes make WAL writes: on libuv's thread pool, so no io_uring polling thread (iou-sqp-*) appears.
  const projects = await (await fetch(`${url}/3.0/organizations/default/projects`, { headers: { Authorization: orgKeyOf(child.pid!) } })).json() as
    { id: string; api_keys: { write: string } }[];
  const project = projects[0]!;
  for (let i = 0; i < 20; i++) {
    const answer = await fetch(`${url}/3.0/projects/${project.id}/events/launched`,
      { method: 'POST', headers: { Authorization: project.api_keys.write, 'Content-Type': 'application/json' }, body: JSON.stringify({ i }) });
    t.equal(answer.status, 201);
  }
  const threads = fs.readdirSync(`/proc/${child.pid}/task`).map((task) => fs.readFileSync(`/proc/${child.pid}/task/${task}/comm`, 'utf8').trim());
  t.same(threads.filter((name) => name.startsWith('iou-')), [], 'no io_uring threads');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM reaches the server, which stops cleanly');
});

t.test('values from the environment win over the defaults', async (t) => {
  const { child, url, exited } = await launch(t, { MALLOC_ARENA_MAX: '4', MALLOC_MMAP_THRESHOLD_: undefined });
  const environ = environOf(child.pid!);
  t.equal(environ.get('MALLOC_ARENA_MAX'), '4');
  t.equal(environ.get('MALLOC_MMAP_THRESHOLD_'), '1048576');
  child.kill('SIGTERM');
  t.equal(await exited, 0);
});
