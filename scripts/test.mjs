#!/usr/bin/env node
/**
 * `npm test`: tap, with every temporary directory the suite makes (data dirs, segment files, a
 * Kafka broker's logs, Chromium's profile) under one scratch directory of its own, removed when
 * the run ends however it ends. Tests make them with os.tmpdir(), which reads TMPDIR; a run of the
 * suite used to leave a few gigabytes behind in /tmp. Arguments go to tap as they are.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const scratch = mkdtempSync(join(tmpdir(), 'tally-tests-'));
const remove = () => {
  try {
    rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
  } catch (error) {
    // A mount a failed test left (test/api/disk-full.test.ts) is busy: say so rather than fail the run.
    console.error(`tests: could not remove ${scratch}: ${error.message}`);
  }
};

const tap = spawn(join('node_modules', '.bin', 'tap'), process.argv.slice(2), {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: scratch },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => tap.kill(signal));
tap.on('exit', (code) => {
  remove();
  process.exit(code ?? 1);
});
