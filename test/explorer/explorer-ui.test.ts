/**
 * The Explorer's look in a real browser (Debian's Chromium via puppeteer-core, the real server):
 * no horizontal page scroll from 900 to 1,920 px wide (a wide table and the code panel scroll in
 * their own boxes), 20 distinct series colours then an "other" series, time ticks on bucket
 * boundaries in the query's timezone, the current (partial) bucket marked, bars in the order the
 * Direction control shows, one number format, nothing of the builder before a key is accepted,
 * singular "1 event", the 403 message said once, and no 404 (favicon). Screenshots go to a temp
 * dir (printed); with TALLY_EXPLORER_DOCS_PNG=1 the 1,400 px screenshot also replaces docs/explorer.png.
 */
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const WAIT_MS = 15_000;
const DOCS_PNG = fileURLToPath(new URL('../../../docs/explorer.png', import.meta.url));
const DAY = '2026-01-10';
const TIMEFRAME = { start: `${DAY}T00:00:00.000Z`, end: `${DAY}T06:00:00.000Z` };
const ZONE = 'Europe/Paris';
const HOUR = 3600_000;

let server: TestServer;
let api: ReturnType<typeof client>;
let browser: Browser;
let page: Page;
const shots = mkdtempSync(join(tmpdir(), 'tally-explorer-ui-'));
const notFound: string[] = [];

/** 25 buttons, button i clicked i+1 times, spread over the last few days (so today is partial). */
function clicks(now: number): object[] {
  const events: object[] = [];
  for (let i = 0; i < 25; i++) {
    for (let n = 0; n <= i; n++) {
      events.push({ button: `b${String(i).padStart(2, '0')}`,
        svc: { timestamp: new Date(now - ((n * 7 + i) % 72) * HOUR - 60_000).toISOString() } });
    }
  }
  return events;
}

/** Orders with awkward amounts: sums and averages with many decimals and thousands. */
const ORDERS = [38714.2, 39372.765, 0.005, 1234.5678, 12, 7.333333].map((amount, i) =>
  ({ amount, item: ['widget', 'gadget', 'gizmo'][i % 3], svc: { timestamp: `${DAY}T01:0${i}:00.000Z` } }));

/** Events with 11 properties and svc (timestamp, id, created_at…): a 14-column extraction table. */
const WIDE = Array.from({ length: 3 }, (_, n) => Object.fromEntries([
  ...Array.from({ length: 11 }, (_, i) => [`property_${i}`, `a rather long value number ${i} of event ${n} ${'x'.repeat(20)}`]),
  ['svc', { timestamp: `${DAY}T02:00:00.000Z` }]]));

/** 30 purchases over the day's first five hours: hour h gets item i (i+h)%4 times. */
function purchases(): object[] {
  const events: object[] = [];
  for (let hour = 0; hour < 5; hour++) {
    ['widget', 'gadget', 'gizmo'].forEach((item, index) => {
      for (let n = 0; n < (index + hour) % 4; n++) {
        events.push({ item, price: 10 + index + n, svc: { timestamp: `${DAY}T0${hour}:${String(n * 7).padStart(2, '0')}:00.000Z` } });
      }
    });
  }
  return events;
}

async function query(analysis: string, params: object): Promise<{ status: number; body: any }> {
  return api.post(`/3.0/projects/${server.projectId}/queries/${analysis}`, { key: server.keys.read, body: params });
}

async function waitRuns(p: Page, runs: number): Promise<void> {
  await p.waitForFunction((n) => (window as any).__tally?.runs >= n, { timeout: WAIT_MS }, runs);
}

async function typeInto(p: Page, selector: string, text: string): Promise<void> {
  await p.$eval(selector, (el) => { (el as HTMLInputElement).value = ''; });
  await p.type(selector, text);
}

/** Opens the explorer on a query given in the URL and waits until it is drawn. */
async function open(analysis: string, params: object): Promise<void> {
  const search = new URLSearchParams({ analysis, query: JSON.stringify(params) });
  await page.goto(`${server.url}/explorer?${search}`, { waitUntil: 'domcontentloaded' });
  await waitRuns(page, 1);
  await page.waitForSelector('body[data-connected=yes]', { timeout: WAIT_MS });
}

const view = (p: Page) => p.evaluate(() => {
  const v = (window as any).__tally.view;
  return { kind: v.kind, labels: v.labels, colors: v.colors, ticks: v.ticks, partial: v.partial,
    partialDrawn: v.partialDrawn, data: v.plot ? v.plot.data.map((c: ArrayLike<number>) => Array.from(c)) : v.data };
});

/** Whether an element takes space on screen (hidden, display:none or inside one: false). */
const visible = (p: Page, selector: string) => p.evaluate((s) => {
  const node = document.querySelector(s) as HTMLElement | null;
  return node !== null && node.getClientRects().length > 0;
}, selector);

t.before(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  server = await startServer();
  api = client(server.url);
  const now = Date.now();
  const batch = await api.post(`/3.0/projects/${server.projectId}/events`, { key: server.keys.write,
    body: { clicks: clicks(now), orders: ORDERS, wide: WIDE, purchases: purchases(),
      signups: [{ plan: 'free', svc: { timestamp: `${DAY}T03:00:00.000Z` } }] } });
  if (batch.status !== 200) throw new Error(`batch: ${batch.status} ${batch.text}`);
  const everything = { start: '2000-01-01T00:00:00.000Z', end: '2100-01-01T00:00:00.000Z' };
  const visibleNow = await eventually(async () =>
    (await query('count', { event_collection: 'clicks', timeframe: everything })).body?.result === 325
    && (await query('count', { event_collection: 'signups', timeframe: everything })).body?.result === 1);
  if (!visibleNow) throw new Error('the recorded events did not become visible');
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  page = await browser.newPage();
  page.on('response', (response) => { if (response.status() === 404) notFound.push(response.url()); });
  await page.setViewport({ width: 1400, height: 900 });
  t.comment(`screenshots in ${shots}`);
});

t.teardown(async () => {
  await browser?.close();
  await server?.stop();
  server?.cleanup();
});

t.test('before a key is accepted only the key form shows; a Write Key gets its 403 message once', async (t) => {
  await page.goto(`${server.url}/explorer`, { waitUntil: 'load' });
  for (const selector of ['#query-form', '#run', '#pin', '#save', '#code', '#result', '#collections-panel', 'nav']) {
    t.notOk(await visible(page, selector), `${selector} is not shown before connecting`);
  }
  t.ok(await visible(page, '#key-form'), 'the key form is');
  await typeInto(page, '#project-id', server.projectId);
  await typeInto(page, '#api-key', server.keys.write);
  await page.click('#key-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#key-status')?.textContent?.includes('403'), { timeout: WAIT_MS });
  const status = await page.$eval('#key-status', (el) => el.textContent ?? '');
  t.match(status, /KeyNotPermittedError/);
  t.equal(status.split('Read Key or Master Key').length - 1, 1, `"Read Key or Master Key" is said once: ${status}`);
  const sentences = status.split(/(?<=[.:])\s+/).map((s) => s.toLowerCase().replace(/[^a-z ]/g, '').trim()).filter(Boolean);
  t.equal(new Set(sentences).size, sentences.length, 'no sentence is repeated');
  t.equal(await page.$$eval('[role=alert]:not([hidden]), #key-status', (nodes) =>
    nodes.filter((n) => n.textContent?.includes('403')).length), 1, 'and shown in one place');
  for (const selector of ['#query-form', '#run', '#pin', '#code']) {
    t.notOk(await visible(page, selector), `${selector} is still not shown after a refused key`);
  }
  await page.screenshot({ path: join(shots, 'write-key-403.png') });

  await typeInto(page, '#api-key', server.keys.read);
  await page.click('#key-form button[type=submit]');
  await page.waitForSelector('body[data-connected=yes]', { timeout: WAIT_MS });
  await page.waitForSelector('#run', { visible: true, timeout: WAIT_MS });
  t.ok(await visible(page, '#query-form'), 'the builder shows once the key is accepted');
});

t.test('plurals: "1 event", "1 collection" style counts', async (t) => {
  await page.waitForFunction(() => document.querySelector('.count[data-collection="signups"]')?.textContent !== ''
    && document.querySelector('.count[data-collection="clicks"]')?.textContent !== '', { timeout: WAIT_MS });
  t.equal(await page.$eval('.count[data-collection="signups"]', (el) => el.textContent), '1 event');
  t.equal(await page.$eval('.count[data-collection="clicks"]', (el) => el.textContent), '325 events');
  t.match(await page.$eval('#key-status', (el) => el.textContent), /: 5 collections\.$/);
  t.notMatch(await page.evaluate(() => document.body.innerText), /\b1 (events|rows|collections)\b|\(s\)/);
});

t.test('the page has a favicon and no response is a 404', async (t) => {
  t.ok(await page.$('link[rel=icon]'), 'index.html names an icon');
  await open('count', { event_collection: 'purchases', timeframe: TIMEFRAME, interval: 'hourly', group_by: 'item' });
  await page.reload({ waitUntil: 'networkidle0' });
  t.same(notFound, [], 'no 404 while loading, connecting and querying');
});

t.test('no horizontal page scroll from 900 to 1920 px: the code panel and a 14-column table scroll in their boxes', async (t) => {
  await open('extraction', { event_collection: 'wide', timeframe: TIMEFRAME });
  t.equal(await page.$$eval('#result-table th', (th) => th.length), 14, 'a 14-column table');
  await page.$eval('#code', (el) => { (el as HTMLDetailsElement).open = true; });
  for (const width of [900, 1400, 1920]) {
    await page.setViewport({ width, height: 1000 });
    const size = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
    t.ok(size.scroll <= size.inner, `extraction + code panel at ${width}: page ${size.scroll} px in a ${size.inner} px window`);
    const table = await page.$eval('.table-wrap', (el) => ({ scroll: el.scrollWidth, client: el.clientWidth, right: el.getBoundingClientRect().right }));
    t.ok(table.right <= width, `the table's box ends inside the window at ${width}`);
    if (width === 900) t.ok(table.scroll > table.client, 'the wide table scrolls inside its own box');
    const path = join(shots, `extraction-code-${width}.png`);
    await page.screenshot({ path, fullPage: true });
    t.comment(path);
  }
  // Bars, their values and the filters must fit at 900 px too.
  await open('count', { event_collection: 'clicks', timeframe: 'this_14_days', group_by: 'button',
    filters: [{ property_name: 'button', operator: 'ne', property_value: 'a long value to compare with, long enough' }] });
  await page.$eval('#code', (el) => { (el as HTMLDetailsElement).open = true; });
  for (const width of [900, 1920]) {
    await page.setViewport({ width, height: 1000 });
    const size = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
      overflowing: [...document.querySelectorAll('.bar-value, .bar-label, #filters input, #filters select, #run, header input, header button')]
        .filter((n) => n.getBoundingClientRect().right > window.innerWidth).map((n) => n.outerHTML.slice(0, 80)) }));
    t.ok(size.scroll <= size.inner, `bars + filters at ${width}: page ${size.scroll} px in a ${size.inner} px window`);
    t.same(size.overflowing, [], `nothing is cut off at the right edge at ${width}`);
    const path = join(shots, `bars-filters-${width}.png`);
    await page.screenshot({ path, fullPage: true });
    t.comment(path);
  }
  // A line chart follows the window's width.
  await open('count', { event_collection: 'clicks', timeframe: 'this_14_days', interval: 'daily', timezone: ZONE });
  for (const width of [1920, 900]) {
    await page.setViewport({ width, height: 1000 });
    await page.waitForFunction(() => {
      const plot = (window as any).__tally.view.plot;
      return plot.width <= document.querySelector('#result')!.clientWidth;
    }, { timeout: WAIT_MS });
    const size = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
    t.ok(size.scroll <= size.inner, `line chart at ${width}: page ${size.scroll} px in a ${size.inner} px window`);
    const path = join(shots, `line-${width}.png`);
    await page.screenshot({ path, fullPage: true });
    t.comment(path);
  }
  await page.setViewport({ width: 1400, height: 900 });
});

t.test('25 groups: 20 series with distinct colours and an "other" series for the 5 smallest', async (t) => {
  const params = { event_collection: 'clicks', timeframe: 'this_14_days', interval: 'daily', timezone: ZONE, group_by: 'button' };
  await open('count', params);
  const drawn = await view(page);
  t.equal(drawn.kind, 'line');
  t.equal(drawn.labels.length, 21, '21 series');
  t.equal(new Set(drawn.colors).size, 21, '21 distinct colours');
  t.same(drawn.labels.filter((l: string) => l === 'other'), ['other'], 'one named other');
  const answer = await query('count', params);
  const buckets = answer.body.result as { value: { button: string; result: number }[] }[];
  const smallest = ['b00', 'b01', 'b02', 'b03', 'b04'];
  t.notOk(drawn.labels.some((l: string) => smallest.includes(l)), 'the smallest groups are folded');
  t.same(drawn.data[drawn.labels.indexOf('other') + 1],
    buckets.map((b) => b.value.filter((g) => smallest.includes(g.button)).reduce((a, g) => a + g.result, 0)),
    'other counts the folded groups');
  t.equal(await page.$$eval('#result-table th', (th) => th.length), 2 + 25, 'the table still lists every group');
  await page.screenshot({ path: join(shots, 'groups-25.png'), fullPage: true });
});

t.test('time ticks sit on bucket boundaries in the query timezone; the partial bucket is marked', async (t) => {
  const zoned = (ts: number) => new Intl.DateTimeFormat('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit',
    hourCycle: 'h23' }).format(ts * 1000);
  for (const width of [900, 1920]) {
    await page.setViewport({ width, height: 1000 });
    await open('count', { event_collection: 'clicks', timeframe: 'this_14_days', interval: 'daily', timezone: ZONE });
    const daily = await view(page);
    t.ok(daily.ticks.length >= 2, `${daily.ticks.length} ticks at ${width}`);
    t.same(daily.ticks.map(zoned), daily.ticks.map(() => '00:00'), `every daily tick is at 00:00 ${ZONE} (${width} px)`);
    const labels = await page.evaluate(() => (window as any).__tally.view.plot.axes[0]._values as string[]);
    t.notOk(labels.some((l) => /am|pm|:/i.test(l)), `daily tick labels are dates: ${labels.join(', ')}`);
    t.equal(daily.partial, daily.data[0].length - 1, 'the last (current) bucket is the partial one');
    t.ok(daily.partialDrawn, 'the chart marks it');
    t.match(await page.$eval('#partial-note', (el) => el.textContent), /^partial/);
    t.equal(await page.$$eval('#result-table tbody tr.partial', (rows) => rows.length), 1, 'the table marks its row');
    t.ok(await page.$eval('#result-table tbody tr:last-child', (row) => row.classList.contains('partial')));
    const path = join(shots, `daily-partial-${width}.png`);
    await page.screenshot({ path, fullPage: true });
    t.comment(path);
  }
  await page.setViewport({ width: 1400, height: 900 });
  await open('count', { event_collection: 'clicks', timeframe: 'this_72_hours', interval: 'hourly', timezone: ZONE });
  const hourly = await view(page);
  t.ok(hourly.ticks.length >= 2);
  t.same(hourly.ticks.map((ts: number) => zoned(ts).slice(3)), hourly.ticks.map(() => '00'), 'hourly ticks are on whole hours');
  t.ok(hourly.ticks.every((ts: number, i: number) => i === 0 || (ts - hourly.ticks[i - 1]) % 3600 === 0));
  await open('count', { event_collection: 'purchases', timeframe: TIMEFRAME, interval: 'hourly' });
  t.equal((await view(page)).partial, null, 'a past day has no partial bucket');
  t.equal(await page.$('#partial-note'), null);
});

t.test('group bars follow the Direction control', async (t) => {
  const params = { event_collection: 'purchases', timeframe: TIMEFRAME, group_by: 'item' };
  const answer = (await query('count', params)).body.result as { item: string; result: number }[];
  await open('count', params);
  t.equal(await page.$eval('select[name=direction]', (el) => (el as HTMLSelectElement).value), 'DESC', 'the control says DESC');
  const desc = await view(page);
  const sorted = [...answer].sort((a, b) => b.result - a.result || a.item.localeCompare(b.item));
  t.same(desc.data, sorted.map((g) => g.result), 'bars are largest first');
  t.same(desc.labels, sorted.map((g) => g.item));
  t.ok(desc.data.every((v: number, i: number) => i === 0 || desc.data[i - 1] >= v), 'descending');
  await page.select('select[name=direction]', 'ASC');
  const runs = await page.evaluate(() => (window as any).__tally.runs);
  await page.click('#run');
  await waitRuns(page, runs + 1);
  const asc = await view(page);
  t.ok(asc.data.every((v: number, i: number) => i === 0 || asc.data[i - 1] <= v), 'ASC: smallest first');
  // With order_by the API orders the groups and the bars keep its order.
  const ordered = { ...params, order_by: { property_name: 'result', direction: 'ASC' } };
  await open('count', ordered);
  t.same((await view(page)).labels, (await query('count', ordered)).body.result.map((g: { item: string }) => g.item));
});

t.test('one number format for the big number, the table and the bars', async (t) => {
  const FORMAT = /^-?\d{1,3}(,\d{3})*(\.\d{1,2})?$/;
  const expect = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });
  const sum = { event_collection: 'orders', timeframe: TIMEFRAME, target_property: 'amount' };
  await open('sum', sum);
  const total = (await query('sum', sum)).body.result as number;
  t.equal(await page.$eval('#big-number', (el) => el.textContent), expect(total));
  t.match(await page.$eval('#big-number', (el) => el.textContent), FORMAT);
  const average = { ...sum, group_by: 'item' };
  await open('average', average);
  const texts = await page.evaluate(() => ({
    bars: [...document.querySelectorAll('.bar-value')].map((n) => n.textContent ?? ''),
    cells: [...document.querySelectorAll('#result-table td.num')].map((n) => ({ text: n.textContent ?? '',
      value: JSON.parse((n as HTMLElement).dataset['value']!) })),
  }));
  t.ok(texts.bars.length === 3 && texts.cells.length === 3);
  for (const text of [...texts.bars, ...texts.cells.map((c) => c.text)]) t.match(text, FORMAT, text);
  for (const cell of texts.cells) t.equal(cell.text, expect(cell.value));
  t.ok(texts.bars.some((s) => s.includes(',')), 'thousands are grouped');
  await open('sum', { ...sum, interval: 'hourly' });
  const axis = await page.evaluate(() => (window as any).__tally.view.plot.axes[1]._values as string[]);
  for (const text of axis) t.match(text, FORMAT, `axis label ${text}`);
  await page.screenshot({ path: join(shots, 'numbers.png'), fullPage: true });
});

t.test('the docs screenshot: a count by hour and item, chart and table, at 1400 px', async (t) => {
  const definition = { analysis_type: 'count', event_collection: 'purchases', timeframe: TIMEFRAME, group_by: 'item' };
  const put = await api.send('PUT', `/3.0/projects/${server.projectId}/queries/saved/purchases_by_item`,
    { key: server.keys.master, body: { query: definition, refresh_rate: 14_400 } });
  t.equal(put.status, 201);
  await page.setViewport({ width: 1400, height: 1000 });
  await open('count', { event_collection: 'purchases', timeframe: TIMEFRAME, interval: 'hourly', group_by: 'item' });
  await page.waitForSelector('#saved a[data-saved=purchases_by_item]', { timeout: WAIT_MS });
  await page.$eval('#collections details', (el) => { (el as HTMLDetailsElement).open = false; });
  const size = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
  t.ok(size.scroll <= size.inner);
  const path = join(shots, 'explorer-1400.png');
  await page.screenshot({ path, fullPage: true });
  t.comment(path);
  if (process.env['TALLY_EXPLORER_DOCS_PNG'] === '1') {
    copyFileSync(path, DOCS_PNG);
    t.comment(`copied to ${DOCS_PNG}`);
  }
});
