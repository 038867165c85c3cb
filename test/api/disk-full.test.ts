/**
 * A full disk, for real: the data directory lives on a small tmpfs that the test fills with a
 * ballast file. Writes must be refused with 503 ServiceUnavailableError (never a 500, never an
 * acknowledgement of something not stored), queries must keep answering, writes must resume by
 * themselves once the ballast is deleted, and every acknowledged event must be there, exactly
 * once, after a kill -9 and a restart. Mounting needs root (CI runs as root).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const ALL_TIME = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };
const TMPFS_BYTES = 24 * 1024 * 1024;
/** Room left beside the ballast: a few batches' worth of WAL records. */
const FREE_BYTES = 160 * 1024;
const BATCH = 50;

function tmpFiles(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((name) => name.endsWith('.tmp'));
}

const isRoot = process.getuid?.() === 0;

async function count(server: TestServer): Promise<number> {
  const response = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/count`, {
    key: server.keys.read, body: { event_collection: 'fill', timeframe: ALL_TIME },
  });
  if (response.status !== 200) throw new Error(`count answered ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.result;
}

/**
 * Text that compresses little: segments are ZSTD-compressed, and a padded note would shrink to
 * almost nothing in a segment, so a flush would fit in the room the full WAL leaves.
 */
function noise(seed: number, length: number): string {
  let state = (seed * 2654435761) >>> 0 || 1;
  let text = '';
  for (let i = 0; i < length; i++) {
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    text += String.fromCharCode(33 + (state % 94));
  }
  return text;
}

function batch(from: number): { fill: Record<string, unknown>[] } {
  return {
    fill: Array.from({ length: BATCH }, (_, i) => ({
      n: from + i, note: `event ${from + i} ${noise(from + i + 1, 600)}`, nested: { a: from + i, b: [1, 2, 3] },
    })),
  };
}

t.test('a full disk refuses writes with 503, loses nothing acknowledged and recovers by itself', {
  skip: isRoot ? false : 'mounting a tmpfs needs root (CI runs as root)', timeout: 180_000,
}, async (t) => {
  const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-diskfull-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_BYTES}`, 'tmpfs', mount]);
  t.teardown(() => {
    try {
      execFileSync('umount', ['-l', mount]);
    } finally {
      fs.rmSync(mount, { recursive: true, force: true });
    }
  });
  const dataDir = path.join(mount, 'data');
  let server = await startServer({ dataDir });
  const api = client(server.url);
  const batchPath = `/3.0/projects/${server.projectId}/events`;

  // Fill the disk but for FREE_BYTES.
  const ballast = path.join(mount, 'ballast');
  const { bavail, bsize } = fs.statfsSync(mount);
  fs.writeFileSync(ballast, Buffer.alloc(Math.max(0, bavail * bsize - FREE_BYTES)));

  let acknowledged = 0;
  let next = 0;
  let refusals = 0;
  const errors: unknown[] = [];
  // Bound: at most 400 batches; the disk fills within a few.
  for (let i = 0; i < 400 && refusals < 20; i++) {
    const response = await api.post(batchPath, { key: server.keys.write, body: batch(next) });
    next += BATCH;
    if (response.status === 200) {
      t.ok(response.body.fill.every((r: { success: boolean }) => r.success), 'a 200 batch stored every event');
      acknowledged += BATCH;
    } else {
      refusals++;
      errors.push({ status: response.status, body: response.body });
    }
  }
  t.ok(refusals >= 20, `the disk filled up (${acknowledged} events acknowledged first)`);
  t.ok(acknowledged > 0, 'some writes were acknowledged before the disk filled');
  t.ok(errors.every((e) => (e as { status: number }).status === 503), 'every refusal is a 503');
  t.match(errors[0], { body: { error_code: 'ServiceUnavailableError', message: /disk is full/ } }, 'with a message that says why');

  // Each retry cuts the WAL back to its last durable byte, which gives back the refused write's
  // bytes: a small event may fit then. Either way nothing is acknowledged that is not stored.
  const single = await api.post(`${batchPath}/fill`, { key: server.keys.write, body: { n: -1 } });
  t.ok(single.status === 503 || single.status === 201, `a single event is refused or, if it fit, stored (${single.status})`);
  if (single.status === 201) acknowledged++;
  t.equal(await count(server), acknowledged, 'queries keep answering, with exactly the acknowledged events');
  t.equal((await api.get('/health')).status, 200, 'the process stays alive');
  // A flush tick (every 10 s) meets the full disk: its segment write fails and leaves nothing behind.
  t.ok(await eventually(async () => /"msg":"flush failed.*ENOSPC/.test(server.stderr()), 15_000), 'a flush failed on the full disk');
  t.same(tmpFiles(dataDir), [], 'no half-written file is left taking space');
  t.equal(await count(server), acknowledged, 'rows of the failed flush still answer queries');

  // Space comes back: writes resume without a restart.
  fs.rmSync(ballast);
  t.ok(await eventually(async () => {
    const response = await api.post(batchPath, { key: server.keys.write, body: batch(next) });
    if (response.status !== 200) return false;
    next += BATCH;
    acknowledged += BATCH;
    return true;
  }, 10_000), 'writes resume by themselves once space is freed');
  t.equal(await count(server), acknowledged);

  // Fill it again, then crash: what was acknowledged survives a kill -9 on a once-full disk.
  const again = fs.statfsSync(mount);
  fs.writeFileSync(ballast, Buffer.alloc(Math.max(0, again.bavail * again.bsize - FREE_BYTES)));
  let refusedAgain = false;
  // Bound: at most 400 batches.
  for (let i = 0; i < 400 && !refusedAgain; i++) {
    const response = await api.post(batchPath, { key: server.keys.write, body: batch(next) });
    next += BATCH;
    if (response.status === 200) acknowledged += BATCH;
    else refusedAgain = response.status === 503;
  }
  t.ok(refusedAgain, 'the disk filled a second time');
  await server.kill9();
  fs.rmSync(ballast);
  server = await server.restart();
  t.ok(await eventually(async () => (await count(server)) === acknowledged), `all ${acknowledged} acknowledged events are back after kill -9`);
  const distinct = await client(server.url).post(`/3.0/projects/${server.projectId}/queries/count_unique`, {
    key: server.keys.read, body: { event_collection: 'fill', target_property: 'n', timeframe: ALL_TIME },
  });
  t.equal(distinct.body.result, acknowledged, 'each exactly once');
  t.equal(await server.stop(), 0);
});
