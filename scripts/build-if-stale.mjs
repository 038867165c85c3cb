#!/usr/bin/env node
/**
 * Compiles the TypeScript (tsc -p tsconfig.json) only when a source file is newer than the last
 * build, so `npm start` on a current build starts at once; `--always` compiles regardless (the
 * `prepack` and `pretest` scripts), from an empty dist. A stamp file in dist records the last
 * successful build.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const stamp = path.join(root, 'dist', '.build-stamp');

function newest(file) {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return /\.(ts|json)$/.test(file) ? stat.mtimeMs : 0;
  let latest = 0;
  for (const entry of fs.readdirSync(file)) latest = Math.max(latest, newest(path.join(file, entry)));
  return latest;
}

const sources = Math.max(...['engine', 'server', 'bench', 'test', 'tsconfig.json', 'package.json']
  .map((name) => newest(path.join(root, name))));
const built = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
const always = process.argv.includes('--always');
if (always || built < sources) {
  // A full build starts from an empty dist: the output of a moved or deleted source (a test file
  // among them, which tap would still run) must not outlive it.
  if (always) for (const dir of ['engine', 'server', 'bench', 'test']) fs.rmSync(path.join(root, 'dist', dir), { recursive: true, force: true });
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.json')],
    { stdio: 'inherit' });
  fs.mkdirSync(path.dirname(stamp), { recursive: true });
  fs.writeFileSync(stamp, `${new Date().toISOString()}\n`);
}
