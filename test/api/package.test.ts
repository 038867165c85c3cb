/**
 * Tally as an installed package: `npm pack` the repository, install the tarball into an empty
 * project, then embed the engine with `import { openEngine } from 'tally'` and start the server
 * with `npx tally`. Dependencies come from the npm cache the repository's own install filled.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const NPM_FLAGS = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];

t.test('a packed tarball installs into an empty project that embeds the engine and runs npx tally', { timeout: 240_000 }, async (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-package-'));
  // --ignore-scripts: dist is built already (pretest); pack would otherwise compile it again.
  const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work, '--loglevel=error'],
    { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').pop()!;
  const tarball = path.join(work, packed);
  t.ok(fs.existsSync(tarball), `packed ${packed}`);
  const consumer = path.join(work, 'consumer');
  fs.mkdirSync(consumer);
  fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }));
  execFileSync('npm', ['install', tarball, ...NPM_FLAGS], { cwd: consumer, stdio: 'pipe' });

  fs.writeFileSync(path.join(consumer, 'embed.mjs'), `
    import { openEngine } from 'tally';
    const engine = await openEngine({ dataDir: process.argv[2], queryWorkers: 0, ingestWorkers: 0 });
    const project = engine.listProjects()[0].id;
    await engine.appendEvents(project, [{ collection: 'clicks', event: { button: 'buy' } }], { ip: '127.0.0.1', userAgent: 'embedded' });
    const { result } = await engine.query(project, 'count', { event_collection: 'clicks', timeframe: 'this_1_days' });
    await engine.close();
    console.log(JSON.stringify({ result }));
  `);
  const embedded = execFileSync(process.execPath, ['embed.mjs', path.join(work, 'embedded-data')], { cwd: consumer, encoding: 'utf8' });
  t.same(JSON.parse(embedded.trim().split('\n').pop()!), { result: 1 });
  t.ok(fs.existsSync(path.join(consumer, 'node_modules', 'tally', 'dist', 'engine', 'index.d.ts')), 'type declarations ship');

  const server = spawn('npx', ['--no-install', 'tally', '--data', path.join(work, 'server-data'), '--http-port', '0',
    '--kafka-in-port', '0', '--kafka-out-port', '0'], { cwd: consumer, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  server.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const ready = await new Promise<string | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), 60_000);
    server.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^tally ready http=(\S+)/m.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    server.once('exit', () => resolve(null));
  });
  t.ok(ready, `npx tally printed its ready line (${stdout.trim().split('\n').pop()})`);
  if (ready) t.same(await (await fetch(`${ready}/health`)).json(), { status: 'ok' });
  // npx runs tally as its child: SIGTERM goes to the whole process group, as a terminal's Ctrl-C would.
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  process.kill(-server.pid!, 'SIGTERM');
  await closed;
  t.match(stderr, /"msg":"stopped"/, 'SIGTERM stops it cleanly');
  fs.rmSync(work, { recursive: true, force: true });
});
