/**
 * The Explorer's weight and speed: the bytes of every JS and CSS file the page loads (raw and gzip
 * -9, as a compressing proxy or CDN would send them), and the time from navigation to the first
 * chart drawn for a query in the URL (key already saved), in Debian's Chromium over loopback.
 *   node dist/bench/explorer.js [--events N] [--runs R]
 */
import { gzipSync } from 'node:zlib';
import puppeteer from 'puppeteer-core';
import { startServer } from '../test/helpers/server.js';
import { benchArgs } from './args.js';

const args = benchArgs({ events: { arg: 'N' }, runs: { arg: 'R' } });
const total = args.integer('events', 10_000);
const runs = args.integer('runs', 5);
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

const server = await startServer();
try {
  const page = await (await fetch(`${server.url}/explorer`)).text();
  const assets = [...page.matchAll(/(?:href|src)="(\/explorer\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
  // The modules app.js imports (one level: they import nothing else).
  const app = await (await fetch(`${server.url}/explorer/app.js`)).text();
  const modules = [...app.matchAll(/from '\.\/([\w-]+\.js)'/g)].map((m) => `/explorer/${m[1]}`);
  let raw = 0;
  let gzip = 0;
  for (const asset of [...assets, ...modules]) {
    const bytes = Buffer.from(await (await fetch(server.url + asset)).arrayBuffer());
    const packed = gzipSync(bytes, { level: 9 }).length;
    raw += bytes.length;
    gzip += packed;
    console.log(`${asset.padEnd(30)} ${String(bytes.length).padStart(7)} B  gzip ${String(packed).padStart(6)} B`);
  }
  const html = Buffer.from(page);
  console.log(`JS+CSS total ${raw} B, gzip ${gzip} B; HTML ${html.length} B (gzip ${gzipSync(html, { level: 9 }).length} B)`);

  const start = Date.parse('2026-01-01T00:00:00Z');
  const items = ['widget', 'gadget', 'gizmo', 'doohickey', 'thing'];
  const events = Array.from({ length: total }, (_, i) => ({
    item: items[i % items.length], price: i % 50,
    svc: { timestamp: new Date(start + Math.floor((i * 30 * 86_400_000) / total)).toISOString() },
  }));
  for (let i = 0; i < events.length; i += 5_000) {
    await fetch(`${server.url}/3.0/projects/${server.projectId}/events`, {
      method: 'POST', headers: { Authorization: server.keys.write, 'Content-Type': 'application/json' },
      body: JSON.stringify({ purchases: events.slice(i, i + 5_000) }),
    });
  }
  const params = { event_collection: 'purchases', interval: 'daily', group_by: 'item',
    timeframe: { start: '2026-01-01T00:00:00.000Z', end: '2026-01-31T00:00:00.000Z' } };
  const url = `${server.url}/explorer?${new URLSearchParams({ analysis: 'count', query: JSON.stringify(params) })}`;
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const tab = await browser.newPage();
  await tab.goto(`${server.url}/explorer`);
  await tab.evaluate((p, k) => localStorage.setItem('tally.explorer.key', JSON.stringify({ projectId: p, key: k })),
    server.projectId, server.keys.read);
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    await tab.goto(url);
    await tab.waitForFunction(() => (window as any).__tally?.view?.kind === 'line', { timeout: 30_000 });
    times.push(await tab.evaluate(() => (window as any).__tally.timings.firstResultMs as number));
  }
  await browser.close();
  times.sort((a, b) => a - b);
  console.log(`time to first chart (${total} events, 30 daily buckets x ${items.length} groups, ${runs} loads): `
    + `median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms, min ${times[0]!.toFixed(0)} ms, max ${times.at(-1)!.toFixed(0)} ms`);
} finally {
  await server.stop();
  server.cleanup();
}
