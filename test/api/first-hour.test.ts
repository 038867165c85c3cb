/**
 * A newcomer's first hour (issue 37): the banner's `export` lines name the keys the README uses and
 * they work; a first start that fails after creating the keys shows them on the next start;
 * `tally keys --data DIR` prints them again; `--version`, `-h` and a usage line named after how
 * the server was run; a startup error is one sentence naming the flag, never a stack trace.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { client } from '../helpers/http.js';
import { MAIN_JS, waitReady } from '../helpers/server.js';

const run = promisify(execFile);
const env = { ...process.env, NODE_OPTIONS: '' };

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-first-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs the server to completion (a start that fails); its exit code and output. */
function runToExit(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The `export NAME=value` lines of a banner. */
function exportsOf(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/^ {2}export (\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
}

t.test('keys survive a failed first start, come as export lines that work, and print again', async (t) => {
  const dir = path.join(tempDir(t), 'data');
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const port = (busy.address() as { port: number }).port;
  const failed = await runToExit(['--data', dir, '--host', '127.0.0.1', '--http-port', String(port),
    '--kafka-in-port', '0', '--kafka-out-port', '0']);
  busy.close();
  t.equal(failed.code, 1, 'a port in use stops the start');
  t.match(failed.stderr, new RegExp(`^tally: port ${port} on 127\\.0\\.0\\.1 is in use.*--http-port\\n$`), 'one sentence naming the flag');
  t.notMatch(failed.stderr, /\n\s+at /, 'no stack trace');
  t.notMatch(failed.stdout, /export WRITE_KEY/, 'no keys from a start that did not serve');

  const child = spawn(process.execPath, [MAIN_JS, '--data', dir, '--host', '127.0.0.1', '--http-port', '0',
    '--kafka-in-port', '0', '--kafka-out-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const out = { stdout: '', stderr: '' };
  t.teardown(() => { child.kill('SIGKILL'); });
  const url = await waitReady(child, out);
  const shown = exportsOf(out.stdout);
  t.same(Object.keys(shown).sort(), ['MASTER_KEY', 'ORG_KEY', 'PROJECT_ID', 'READ_KEY', 'TALLY_URL', 'WRITE_KEY']);
  t.equal(shown['TALLY_URL'], url);
  const api = client(url);
  const base = `/3.0/projects/${shown['PROJECT_ID']}`;
  t.equal((await api.post(`${base}/events/purchases`, { key: shown['WRITE_KEY'], body: { price: 24.5, item: { name: 'hat' } } })).status, 201);
  const count = await api.get(`${base}/queries/count?event_collection=purchases&timeframe=this_7_days`, { key: shown['READ_KEY'] });
  t.same(count.body, { result: 1 }, 'the Read Key of the banner counts the event the Write Key recorded');
  t.equal((await api.get('/3.0/organizations/default/projects', { key: shown['ORG_KEY'] })).status, 200);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));

  const again = await run(process.execPath, [MAIN_JS, 'keys', '--data', dir], { env });
  t.same(exportsOf(again.stdout), { ...shown, TALLY_URL: 'http://127.0.0.1:8080' }, '`tally keys` prints the same keys');

  const third = await runToExit(['--data', dir, '--host', '127.0.0.1', '--http-port', '0', '--kafka-in-port', '0',
    '--kafka-out-port', '0', '--version']);
  t.equal(third.code, 0);
  const version = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version;
  t.equal(third.stdout, `tally ${version}\n`, '--version');
});

t.test('-h and --help name the command as it was run; keys of an empty directory say what to do', async (t) => {
  const direct = await run(process.execPath, [MAIN_JS, '-h'], { env: { ...env, npm_lifecycle_event: '' } });
  t.match(direct.stdout, /^Usage: tally \[flags\]/);
  t.match(direct.stdout, /--flush-interval MS/);
  const viaNpm = await run(process.execPath, [MAIN_JS, '--help'], { env: { ...env, npm_lifecycle_event: 'start' } });
  t.match(viaNpm.stdout, /^Usage: npm start -- \[flags\]/);
  const empty = await runToExit(['keys', '--data', tempDir(t)]);
  t.equal(empty.code, 1);
  t.match(empty.stderr, /^tally: no keys in .*: it holds no projects\.json/);
  const file = path.join(tempDir(t), 'a-file');
  fs.writeFileSync(file, '');
  const uncreatable = await runToExit(['--data', path.join(file, 'data'), '--http-port', '0', '--kafka-in-port', '0', '--kafka-out-port', '0']);
  t.equal(uncreatable.code, 1);
  t.match(uncreatable.stderr, /^tally: cannot (create|use) data directory .*a-file\/data: a part of the path is not a directory; .*--data\n$/,
    'a data directory that cannot be made is one sentence naming the flag');
  const damaged = tempDir(t);
  fs.writeFileSync(path.join(damaged, 'projects.json'), '{"orgKey": ');
  const unreadable = await runToExit(['keys', '--data', damaged]);
  t.equal(unreadable.code, 1);
  t.match(unreadable.stderr, /^tally: .*projects\.json is not a projects file Tally wrote/, 'a damaged keys file is one sentence, no stack');
  const unknown = await runToExit(['--data', tempDir(t), '--bogus']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /^tally: unknown flag --bogus/);
});

t.test('the banner is shown once: not on a later start', async (t) => {
  const dir = tempDir(t);
  const args = ['--data', dir, '--host', '127.0.0.1', '--http-port', '0', '--kafka-in-port', '0', '--kafka-out-port', '0',
    '--org-key', randomBytes(32).toString('hex')];
  for (const [round, expectBanner] of [[0, true], [1, false]] as const) {
    const child = spawn(process.execPath, [MAIN_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    const out = { stdout: '', stderr: '' };
    await waitReady(child, out);
    t.equal(/export WRITE_KEY=/.test(out.stdout), expectBanner, `start ${round}`);
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
});
