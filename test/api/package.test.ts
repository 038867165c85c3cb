/**
 * Tally as an installed package: `npm pack` the repository, install the tarball into an empty
 * project, then embed the engine with `import { openEngine } from 'tally'` and start the server
 * with `npx tally`. Dependencies come from the npm cache the repository's own install filled.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
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
  const installed = spawnSync('npm', ['install', tarball, ...NPM_FLAGS.filter((flag) => !flag.startsWith('--loglevel')), '--loglevel=warn'],
    { cwd: consumer, encoding: 'utf8' });
  t.equal(installed.status, 0, installed.stderr);
  // npm 11 names every package with an install-time script; Tally itself has none (its dependencies'
  // optional native builds are theirs to name).
  t.notMatch(`${installed.stdout}${installed.stderr}`, /tally@[^ ]* \((prepare|preinstall|install|postinstall)/, 'no install-time script of Tally\'s own');

  fs.writeFileSync(path.join(consumer, 'embed.mjs'), `
    import { openEngine } from 'tally';
    const engine = await openEngine({ dataDir: process.argv[2], queryWorkers: 0, ingestWorkers: 0 });
    const project = engine.projects.list()[0].id;
    await engine.events.append(project, [{ collection: 'clicks', event: { button: 'buy' } }], { ip: '127.0.0.1', userAgent: 'embedded' });
    const { result } = await engine.queries.run(project, 'count', { event_collection: 'clicks', timeframe: 'this_1_days' });
    await engine.close();
    console.log(JSON.stringify({ result }));
  `);
  const embedded = execFileSync(process.execPath, ['embed.mjs', path.join(work, 'embedded-data')], { cwd: consumer, encoding: 'utf8' });
  t.same(JSON.parse(embedded.trim().split('\n').pop()!), { result: 1 });
  t.ok(fs.existsSync(path.join(consumer, 'node_modules', 'tally', 'dist', 'engine', 'index.d.ts')), 'type declarations ship');

  // A CommonJS program (a default `npm init` project) requires the engine and prints events.
  fs.writeFileSync(path.join(consumer, 'embed.cjs'), `
    const { openEngine } = require('tally');
    (async () => {
      const engine = await openEngine({ dataDir: process.argv[2] });
      const project = engine.projects.list()[0].id;
      await engine.events.append(project, [{ collection: 'clicks', event: { button: 'buy' } }], { ip: '127.0.0.1', userAgent: 'cjs' });
      const { result } = await engine.queries.run(project, 'extraction', { event_collection: 'clicks', timeframe: 'this_1_days' });
      await engine.close();
      console.log(JSON.stringify(result.map((event) => event.button)));
    })();
  `);
  const required = execFileSync(process.execPath, ['embed.cjs', path.join(work, 'cjs-data')], { cwd: consumer, encoding: 'utf8' });
  t.same(JSON.parse(required.trim().split('\n').pop()!), ['buy'], 'require() works and the extraction prints the event');

  // The tarball ships no test code and no source map without its source.
  const shipped: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(file);
      } else {
        shipped.push(path.relative(path.join(consumer, 'node_modules', 'tally'), file));
      }
    }
  };
  walk(path.join(consumer, 'node_modules', 'tally'));
  t.same(shipped.filter((file) => /(^|\/)tests?([-/.]|$)|\.test\.|fake-engine|fixtures\//.test(file)), [], 'no test code in the package');
  t.same(shipped.filter((file) => file.endsWith('.map')), [], 'no source maps (their sources are not shipped)');

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
