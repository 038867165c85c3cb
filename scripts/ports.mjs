/**
 * Ports for the listeners tests start, and restart on the same port (a Tally node, a Kafka broker
 * killed and started again). Chosen at random below the kernel's ephemeral range (32768-60999 on
 * Linux), so no outgoing connection (Kafka clients open many) takes one before or between binds,
 * and reserved across processes with a file per port in the temp dir holding the owner's pid, so a
 * test file running beside this one does not pick a port this one's stopped broker will want back.
 * A reservation ends with its process (files of dead pids are skipped, and removed after a day).
 */
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DIR = join(tmpdir(), 'tally-test-ports');
const FIRST = 20_000;
const COUNT = 12_000;
const STALE_MS = 24 * 3600 * 1000;
const mine = new Set();
let hooked = false;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** True when this process now holds `port`'s reservation file. */
function reserve(port) {
  const file = join(DIR, String(port));
  try {
    const fd = openSync(file, 'wx');
    writeSync(fd, String(process.pid));
    closeSync(fd);
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    try {
      const pid = Number(readFileSync(file, 'utf8'));
      if (!alive(pid) && Date.now() - statSync(file).mtimeMs > STALE_MS) unlinkSync(file);
    } catch {
      // gone meanwhile, or unreadable: another port will do
    }
    return false;
  }
  mine.add(file);
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const f of mine) {
        try { unlinkSync(f); } catch { /* already gone */ }
      }
    });
  }
  return true;
}

function bindable(port) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port on 127.0.0.1 free now and reserved for this process until it exits. */
export async function freePort() {
  mkdirSync(DIR, { recursive: true });
  for (;;) {
    const port = FIRST + Math.floor(Math.random() * COUNT);
    if (!reserve(port)) continue;
    if (await bindable(port)) return port;
    // Bound by something outside these reservations: keep the file, so no one tries it again soon.
  }
}
