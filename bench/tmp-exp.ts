import fs from 'node:fs';
import { openEngine } from '../engine/index.js';
import { mulberry32 } from '../test/helpers/random.js';
const N = Number(process.argv[2] ?? 2_000_000);
const dir = fs.mkdtempSync('/tmp/exp/e-');
const engine = await openEngine({ dataDir: dir });
const project = engine.listProjects()[0].id;
const r = mulberry32(1);
const END = Date.UTC(2026, 10, 1);
const countries = Array.from({ length: 50 }, (_, i) => `C${i}`);
const devices = ['desktop', 'mobile', 'tablet', 'tv', 'watch'];
const t0 = Date.now();
const ctx = { ip: '1.2.3.4', userAgent: 'x' };
const pending: Promise<unknown>[] = [];
for (let b = 0; b < N / 5000; b++) {
  let body = '{"views":[';
  for (let i = 0; i < 5000; i++) {
    const ts = new Date(END - Math.floor(r() * 90 * 86400000)).toISOString();
    body += (i ? ',' : '') + `{"user_id":"u${Math.floor(r() * 500000)}","session_id":"s${Math.floor(r() * 2000000)}","page":{"path":"/p/${Math.floor(1000 * r() ** 3)}","country":"${countries[Math.floor(50 * r() ** 2)]}"},"device":"${devices[Math.floor(5 * r())]}","price":${Math.round(r() * 20000) / 100},"quantity":${1 + Math.floor(r() * 5)},"is_member":${r() < 0.3},"svc":{"timestamp":"${ts}"}}`;
  }
  body += ']}';
  pending.push(engine.appendBatchBody(project, Buffer.from(body), ctx));
  if (pending.length >= 4) await pending.shift();
}
await Promise.all(pending);
const loadS = (Date.now() - t0) / 1000;
const du = (d: string): number => fs.readdirSync(d, { withFileTypes: true }).reduce((s, e) => s + (e.isDirectory() ? du(`${d}/${e.name}`) : fs.statSync(`${d}/${e.name}`).size), 0);
const segs = () => { let n = 0; const walk = (d: string) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { if (e.isDirectory()) walk(`${d}/${e.name}`); else if (e.name.endsWith('.arrow')) n++; } }; walk(dir); return n; };
console.log(`loaded ${N} in ${loadS.toFixed(1)}s = ${(N / loadS).toFixed(0)}/s; segments ${segs()}; bytes/event ${(du(dir) / N).toFixed(1)} rss ${(process.memoryUsage().rss / 1e6).toFixed(0)}MB`);
const tf = { start: new Date(END - 91 * 86400000).toISOString(), end: new Date(END + 86400000).toISOString() };
const qs: [string, Record<string, unknown>][] = [
  ['count', {}],
  ['count', { filters: [{ property_name: 'page.country', operator: 'eq', property_value: 'C3' }] }],
  ['count', { filters: [{ property_name: 'price', operator: 'gt', property_value: 150 }] }],
  ['select_unique', { target_property: 'device' }],
  ['count_unique', { target_property: 'page.country' }],
  ['count', { group_by: 'page.country' }],
  ['sum', { target_property: 'price' }],
  ['extraction', { latest: 100 }],
];
for (let round = 0; round < 3; round++) {
  const times: string[] = [];
  for (const [a, p] of qs) {
    const s = performance.now();
    try { await engine.query(project, a, { event_collection: 'views', timeframe: tf, ...p }); times.push(`${a}:${(performance.now() - s).toFixed(0)}`); }
    catch (e) { times.push(`${a}:ERR ${(e as Error).message.slice(0, 40)}`); }
  }
  console.log(`round ${round} segs ${segs()}: ${times.join(' ')}`);
}
await new Promise((r) => setTimeout(r, 15000));
console.log(`after 15s: segments ${segs()} bytes/event ${(du(dir) / N).toFixed(1)}`);
await engine.close();
console.log(`after close: segments ${segs()} bytes/event ${(du(dir) / N).toFixed(1)} rss ${(process.memoryUsage().rss / 1e6).toFixed(0)}MB`);
