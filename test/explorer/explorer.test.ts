/**
 * The Explorer in a real browser: Debian's Chromium driven by puppeteer-core against the real server.
 * It records events over HTTP, enters the key, builds a count with an interval and a group_by in
 * the form, and checks the chart's data (what uPlot holds) and the table's numbers against the
 * API's own answer; a bad filter shows the API's message; reload and back reproduce the query; the
 * live view shows an event recorded after it opened. Screenshots go to a temp dir (printed).
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const WAIT_MS = 15_000;
const DAY = '2026-01-10';
const TIMEFRAME = { start: `${DAY}T00:00:00.000Z`, end: `${DAY}T06:00:00.000Z` };
const ITEMS = ['widget', 'gadget', 'gizmo'];

let server: TestServer;
let api: ReturnType<typeof client>;
let browser: Browser;
let page: Page;
const shots = mkdtempSync(join(tmpdir(), 'tally-explorer-'));

/** 30 purchases over the day's first five hours: hour h gets item i (i+h) times, some skipped. */
function purchases(): object[] {
  const events: object[] = [];
  for (let hour = 0; hour < 5; hour++) {
    ITEMS.forEach((item, index) => {
      for (let n = 0; n < (index + hour) % 4; n++) {
        const minute = String(n * 7).padStart(2, '0');
        events.push({ item, price: 10 + index + n, user: `u${(hour + n) % 4}`,
          svc: { timestamp: `${DAY}T0${hour}:${minute}:00.000Z` } });
      }
    });
  }
  return events;
}

async function query(analysis: string, params: object): Promise<{ status: number; body: any }> {
  return api.post(`/3.0/projects/${server.projectId}/queries/${analysis}`,
    { key: server.keys.read, body: params });
}

/** What the page's last view drew: uPlot's own data for a line chart, the bars' values otherwise. */
async function drawn(p: Page): Promise<any> {
  return p.evaluate(() => {
    const view = (window as any).__tally.view;
    if (view === null) return null;
    const plot = view.plot;
    return {
      kind: view.kind,
      labels: plot ? plot.series.slice(1).map((s: any) => s.label) : view.labels,
      data: plot ? plot.data.map((column: ArrayLike<number>) => Array.from(column)) : view.data,
    };
  });
}

/** The result table as parsed cell values (each td carries its value as JSON). */
async function tableCells(p: Page): Promise<{ columns: string[]; rows: unknown[][] }> {
  return p.evaluate(() => ({
    columns: [...document.querySelectorAll('#result-table th')].map((th) => th.textContent ?? ''),
    rows: [...document.querySelectorAll('#result-table tbody tr')].map((tr) =>
      [...tr.querySelectorAll('td')].map((td) => JSON.parse((td as HTMLElement).dataset['value']!))),
  }));
}

/** Groups as the bars show them without order_by: as the Direction control says (DESC by default). */
function byResultDesc<T extends { result: number }>(groups: T[], label: (g: T) => string): T[] {
  return [...groups].sort((a, b) => b.result - a.result || label(a).localeCompare(label(b)));
}

async function waitRuns(p: Page, runs: number): Promise<void> {
  await p.waitForFunction((n) => (window as any).__tally?.runs >= n, { timeout: WAIT_MS }, runs);
}

async function typeInto(p: Page, selector: string, text: string): Promise<void> {
  await p.$eval(selector, (el) => { (el as HTMLInputElement).value = ''; });
  await p.type(selector, text);
}

t.before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is not at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  }
  server = await startServer();
  api = client(server.url);
  const batch = await api.post(`/3.0/projects/${server.projectId}/events`,
    { key: server.keys.write, body: { purchases: purchases() } });
  if (batch.status !== 200) throw new Error(`batch: ${batch.status} ${batch.text}`);
  const visible = await eventually(async () =>
    (await query('count', { event_collection: 'purchases', timeframe: TIMEFRAME })).body?.result === purchases().length);
  if (!visible) throw new Error('the recorded events did not become visible');
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  t.comment(`screenshots in ${shots}`);
});

t.teardown(async () => {
  await browser?.close();
  await server?.stop();
  server?.cleanup();
});

t.test('a browser asking / for HTML is sent to the explorer; JSON clients are not', async (t) => {
  const html = await api.get('/', { headers: { Accept: 'text/html,application/xhtml+xml' } });
  t.equal(html.status, 302);
  t.equal(html.headers.get('location'), '/explorer');
  const versions = await api.get('/', { key: server.keys.master, headers: { Accept: 'application/json' } });
  t.equal(versions.status, 200);
  t.equal(versions.body[0].version, '3.0');
  t.match(server.stdout(), new RegExp(`^tally explorer ${server.url}/explorer`, 'm'), 'npm start prints the URL');
  const missing = await api.get('/explorer/nothing.js');
  t.equal(missing.status, 404);
  t.equal(missing.body.error_code, 'ResourceNotFoundError');
});

t.test('a wrong key gets a clear 401 message, a write key a clear 403', async (t) => {
  await page.goto(`${server.url}/`, { waitUntil: 'domcontentloaded' });
  t.equal(new URL(page.url()).pathname, '/explorer', 'the browser followed the redirect');
  await typeInto(page, '#project-id', server.projectId);
  await typeInto(page, '#api-key', 'f'.repeat(64));
  await page.click('#key-form button[type=submit]');
  await page.waitForSelector('body[data-connected=no]', { timeout: WAIT_MS });
  const status = await page.$eval('#key-status', (el) => el.textContent ?? '');
  t.match(status, /401/);
  t.match(status, /InvalidApiKeyError/);
  await page.screenshot({ path: join(shots, 'key-401.png') });
  await typeInto(page, '#api-key', server.keys.write);
  await page.click('#key-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#key-status')?.textContent?.includes('403'),
    { timeout: WAIT_MS });
  t.match(await page.$eval('#key-status', (el) => el.textContent ?? ''), /KeyNotPermittedError.*Read Key or Master Key/);
});

t.test('count by hour and item: the chart and the table hold the API answer', async (t) => {
  await typeInto(page, '#api-key', server.keys.read);
  await page.click('#key-form button[type=submit]');
  await page.waitForSelector('body[data-connected=yes]', { timeout: WAIT_MS });
  await page.waitForFunction(() => document.querySelector('.count[data-collection="purchases"]')?.textContent !== '',
    { timeout: WAIT_MS });
  t.equal(await page.$eval('.count[data-collection="purchases"]', (el) => el.textContent),
    `${purchases().length} events`, 'the collection list shows the count');
  t.ok(await page.$eval('#collections', (el) => el.textContent!.includes('price')), 'and the schema');

  await page.select('select[name=analysis]', 'count');
  await page.select('select[name=event_collection]', 'purchases');
  await page.select('select[name=timeframe_kind]', 'absolute');
  await page.$eval('input[name=start]', (el) => { (el as HTMLInputElement).value = '2026-01-10T00:00'; });
  await page.$eval('input[name=end]', (el) => { (el as HTMLInputElement).value = '2026-01-10T06:00'; });
  await typeInto(page, 'input[name=interval]', 'hourly');
  await typeInto(page, 'input[name=group_by]', 'item');
  const runs = await page.evaluate(() => (window as any).__tally.runs);
  await page.click('#run');
  await waitRuns(page, runs + 1);

  const params = { event_collection: 'purchases', timeframe: TIMEFRAME, interval: 'hourly', group_by: 'item' };
  const answer = await query('count', params);
  t.equal(answer.status, 200);
  const buckets = answer.body.result as { timeframe: { start: string; end: string }; value: { item: string; result: number }[] }[];
  t.equal(buckets.length, 6, 'six hourly buckets');
  const labels = [...new Set(buckets.flatMap((b) => b.value.map((g) => g.item)))];
  const expected = [
    buckets.map((b) => Date.parse(b.timeframe.start) / 1000),
    // A group absent from a bucket had no event there: the page draws it as 0.
    ...labels.map((label) => buckets.map((b) => b.value.find((g) => g.item === label)?.result ?? 0)),
  ];
  const chart = await drawn(page);
  t.equal(chart.kind, 'line');
  t.same(chart.labels, labels, 'one series per group');
  t.same(chart.data, expected, "uPlot holds the API's buckets");

  const table = await tableCells(page);
  t.same(table.columns, ['start', 'end', ...labels]);
  t.same(table.rows, buckets.map((b) => [b.timeframe.start, b.timeframe.end,
    ...labels.map((label) => b.value.find((g) => g.item === label)?.result ?? 0)]), "the table is the API's answer");
  const total = table.rows.flatMap((row) => row.slice(2)).reduce((a: number, v) => a + (Number(v) || 0), 0);
  t.equal(total, purchases().length, 'every recorded event is counted once');

  const curl = await page.$eval('#curl', (el) => el.textContent ?? '');
  t.match(curl, `/3.0/projects/${server.projectId}/queries/count`);
  t.match(curl, '"group_by":"item"');
  t.match(await page.$eval('#keen-code', (el) => el.textContent ?? ''), /client\.query\(/);
  await page.screenshot({ path: join(shots, 'count-interval-group.png'), fullPage: true });

  // The URL holds the query: a reload replays it.
  const url = new URL(page.url());
  t.equal(url.searchParams.get('analysis'), 'count');
  t.same(JSON.parse(url.searchParams.get('query')!), params);
  await page.reload({ waitUntil: 'domcontentloaded' });
  await waitRuns(page, 1);
  t.same(await drawn(page), chart, 'the reloaded page draws the same chart');
  t.equal(await page.$eval('input[name=group_by]', (el) => (el as HTMLInputElement).value), 'item');

  // Another query, then back: the first one is drawn again.
  await page.$eval('input[name=interval]', (el) => { (el as HTMLInputElement).value = ''; });
  await page.click('#run');
  await waitRuns(page, 2);
  const bars = await drawn(page);
  const grouped = await query('count', { event_collection: 'purchases', timeframe: TIMEFRAME, group_by: 'item' });
  t.equal(bars.kind, 'group');
  const sortedGroups = byResultDesc(grouped.body.result as { item: string; result: number }[], (g) => g.item);
  t.same(bars.labels, sortedGroups.map((g) => g.item));
  t.same(bars.data, sortedGroups.map((g) => g.result), "the bars are the API's groups, largest first (Direction DESC)");
  await page.screenshot({ path: join(shots, 'count-group-bars.png'), fullPage: true });
  await page.goBack();
  await waitRuns(page, 3);
  t.same(await drawn(page), chart, 'back shows the interval chart again');
});

t.test('a bad filter shows the API message next to the filters', async (t) => {
  const filter = { property_name: 'item', operator: 'regex', property_value: '(' };
  const answer = await query('count', { event_collection: 'purchases', timeframe: TIMEFRAME, filters: [filter] });
  t.equal(answer.status, 400);
  t.equal(answer.body.error_code, 'InvalidFilterError');
  await page.click('button[data-add=filter]');
  await page.type('#filters .filter:last-child input[name=f_property]', 'item');
  await page.select('#filters .filter:last-child select[name=f_operator]', 'regex');
  await page.type('#filters .filter:last-child input[name=f_value]', '(');
  const runs = await page.evaluate(() => (window as any).__tally.runs);
  await page.click('#run');
  await waitRuns(page, runs + 1);
  t.equal(await page.$eval('output[data-error-for=filters]', (el) => el.textContent), answer.body.message);
  t.equal(await page.$eval('#error', (el) => el.textContent), `InvalidFilterError: ${answer.body.message}`);
  t.equal(await page.$('#result-table'), null, 'no stale result stays on screen');
  await page.screenshot({ path: join(shots, 'bad-filter.png'), fullPage: true });
});

t.test('a filter value is typed by the schema; timeframe and timezone errors show at their fields', async (t) => {
  await page.$eval('#filters', (el) => el.replaceChildren());
  await page.click('button[data-add=filter]');
  await page.type('#filters .filter input[name=f_property]', 'price');
  await page.select('#filters .filter select[name=f_operator]', 'gte');
  await page.type('#filters .filter input[name=f_value]', '12');
  await page.click('button[data-add=filter]');
  await page.type('#filters .filter:last-child input[name=f_property]', 'item');
  await page.select('#filters .filter:last-child select[name=f_operator]', 'in');
  await page.type('#filters .filter:last-child input[name=f_value]', '["gizmo","gadget"]');
  let runs = await page.evaluate(() => (window as any).__tally.runs);
  await page.click('#run');
  await waitRuns(page, runs + 1);
  const sent = JSON.parse(new URL(page.url()).searchParams.get('query')!);
  t.same(sent.filters, [{ property_name: 'price', operator: 'gte', property_value: 12 },
    { property_name: 'item', operator: 'in', property_value: ['gizmo', 'gadget'] }], 'a number for a num property, a list for in');
  const answer = await query('count', sent);
  t.equal(answer.status, 200);
  const expected = answer.body.result.flatMap((b: { value: { result: number }[] }) => b.value.map((g) => g.result))
    .reduce((a: number, v: number) => a + v, 0);
  const want = purchases().filter((e: any) => e.price >= 12 && ['gizmo', 'gadget'].includes(e.item)).length;
  t.equal(expected, want, 'the API counted the filtered events');
  t.ok(want > 0 && want < purchases().length, 'the filter keeps some events and drops others');
  const table = await tableCells(page);
  t.equal(table.rows.flatMap((row) => row.slice(2)).reduce((a: number, v) => a + Number(v), 0), want);

  for (const [field, value] of [['timeframe', 'this_banana'], ['timezone', 'Mars/Base']] as const) {
    await page.select('select[name=timeframe_kind]', 'relative');
    await typeInto(page, `input[name=${field}]`, value);
    runs = await page.evaluate(() => (window as any).__tally.runs);
    await page.click('#run');
    await waitRuns(page, runs + 1);
    const bad = await query('count', JSON.parse(new URL(page.url()).searchParams.get('query')!));
    t.equal(bad.status, 400);
    t.equal(await page.$eval(`output[data-error-for=${field}]`, (el) => el.textContent), bad.body.message,
      `the ${field} error is next to the ${field} field`);
    await typeInto(page, `input[name=${field}]`, field === 'timeframe' ? 'this_7_days' : 'UTC');
  }
});

t.test('funnel, extraction, a single number, multi_analysis, groups and select_unique are drawn from the API answer', async (t) => {
  const steps = [{ event_collection: 'purchases', actor_property: 'user' },
    { event_collection: 'purchases', actor_property: 'user', filters: [{ property_name: 'item', operator: 'eq', property_value: 'gizmo' }] }];
  const cases: [string, object][] = [
    ['funnel', { timeframe: TIMEFRAME, steps }],
    ['extraction', { event_collection: 'purchases', timeframe: TIMEFRAME, latest: 5 }],
    ['sum', { event_collection: 'purchases', timeframe: TIMEFRAME, target_property: 'price' }],
    ['multi_analysis', { event_collection: 'purchases', timeframe: TIMEFRAME, interval: 'hourly',
      analyses: { n: { analysis_type: 'count' }, p90: { analysis_type: 'percentile', target_property: 'price', percentile: 90 } } }],
    ['percentile', { event_collection: 'purchases', timeframe: TIMEFRAME, target_property: 'price', percentile: 50,
      group_by: ['item', 'user'], order_by: { property_name: 'result', direction: 'DESC' }, limit: 4 }],
    ['select_unique', { event_collection: 'purchases', timeframe: TIMEFRAME, target_property: 'user' }],
  ];
  for (const [analysis, params] of cases) {
    const search = new URLSearchParams({ analysis, query: JSON.stringify(params) });
    await page.goto(`${server.url}/explorer?${search}`, { waitUntil: 'domcontentloaded' });
    await waitRuns(page, 1);
    const answer = await query(analysis, params);
    t.equal(answer.status, 200, analysis);
    const view = await drawn(page);
    if (analysis === 'funnel') {
      t.equal(view.kind, 'funnel');
      t.same(view.data, answer.body.result, 'funnel steps');
    } else if (analysis === 'extraction') {
      const table = await tableCells(page);
      t.equal(table.rows.length, 5);
      const ids = table.rows.map((row) => row[table.columns.indexOf('svc.id')]);
      t.same(ids, answer.body.result.map((e: { svc: { id: string } }) => e.svc.id), 'the extracted events');
    } else if (analysis === 'multi_analysis') {
      const buckets = answer.body.result as { timeframe: { start: string }; value: Record<string, number | null> }[];
      t.equal(view.kind, 'line');
      t.same(view.labels, ['n', 'p90'], 'a series per label');
      t.same(view.data, [buckets.map((b) => Date.parse(b.timeframe.start) / 1000),
        buckets.map((b) => b.value['n']), buckets.map((b) => b.value['p90'])]);
    } else if (analysis === 'percentile') {
      const groups = answer.body.result as { item: string; user: string; result: number }[];
      t.equal(groups.length, 4, 'limit');
      t.equal(view.kind, 'group');
      t.same(view.labels, groups.map((g) => `${g.item} / ${g.user}`), 'bars per group, in the API order');
      t.same(view.data, groups.map((g) => g.result));
      t.same((await tableCells(page)).rows, groups.map((g) => [g.item, g.user, g.result]));
    } else if (analysis === 'select_unique') {
      t.same((await tableCells(page)).rows, answer.body.result.map((v: string) => [v]), 'one row per value');
    } else {
      t.equal(view.kind, 'number');
      t.equal(view.data, answer.body.result, 'the big number');
      t.equal(await page.$eval('#big-number', (el) => el.textContent),
        answer.body.result.toLocaleString('en-US', { maximumFractionDigits: 2 }));
    }
    await page.screenshot({ path: join(shots, `${analysis}.png`), fullPage: true });
  }
});

t.test('the live view shows an event recorded after it opened', async (t) => {
  await page.goto(`${server.url}/explorer`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('body[data-connected=yes]', { timeout: WAIT_MS });
  await page.click('button[data-tab=live]');
  await page.select('#live-collection', 'purchases');
  await page.waitForFunction(() => document.querySelector('#live-status')?.textContent?.startsWith('live'),
    { timeout: WAIT_MS });
  await page.waitForFunction(() => document.querySelectorAll('#live-events li').length > 0, { timeout: WAIT_MS });
  const marker = `live-${Date.now()}`;
  const recorded = await api.post(`/3.0/projects/${server.projectId}/events/purchases`,
    { key: server.keys.write, body: { item: marker, price: 1 } });
  t.equal(recorded.status, 201);
  await page.waitForFunction((m) => document.querySelector('#live-events li code')?.textContent?.includes(m),
    { timeout: WAIT_MS }, marker);
  const first = await page.$eval('#live-events li code', (el) => JSON.parse(el.textContent!));
  t.equal(first.item, marker, 'the newest event is on top');
  t.match(first.svc.id, /^[0-9a-f]{24}$/);
  await page.screenshot({ path: join(shots, 'live.png'), fullPage: true });
});

t.test('the live stream checks the key like other read routes', async (t) => {
  const path = `/3.0/projects/${server.projectId}/events/purchases/live`;
  const none = await api.get(path);
  t.equal(none.status, 401);
  t.equal(none.body.error_code, 'InvalidApiKeyError');
  const write = await api.get(`${path}?api_key=${server.keys.write}`);
  t.equal(write.status, 403);
  t.equal(write.body.error_code, 'KeyNotPermittedError');
  const invalid = await api.get(`/3.0/projects/${server.projectId}/events/_hidden/live?api_key=${server.keys.read}`);
  t.equal(invalid.status, 400, 'a name no event can have is refused, not awaited forever');
  t.equal(invalid.body.error_code, 'InvalidCollectionNameError');
  // A reconnecting EventSource sends the last id it saw: the stream resumes right after it.
  // Nothing was deleted, so the log's end offset is the number of events stored.
  const end = (await query('count', { event_collection: 'purchases', timeframe: 'this_100_years' })).body.result as number;
  const ids = await firstIds(`${server.url}${path}?api_key=${server.keys.read}`, { 'Last-Event-ID': String(end - 3) }, 2);
  t.same(ids, [end - 2, end - 1], 'ids are log offsets, resumed after Last-Event-ID');
  const latest = await firstIds(`${server.url}${path}?api_key=${server.keys.read}`, {}, 1);
  t.ok(latest[0]! >= 0 && latest[0]! < end, 'a new stream starts at recent events');
});

/** The first `count` event ids of an SSE stream. */
async function firstIds(url: string, headers: Record<string, string>, count: number): Promise<number[]> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const reader = response.body!.getReader();
  let text = '';
  const ids = () => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  while (ids().length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString();
  }
  controller.abort();
  return ids().slice(0, count);
}

t.test('a pinned query is drawn on the dashboard, refreshes itself and survives a reload', async (t) => {
  const params = { event_collection: 'purchases', timeframe: TIMEFRAME, group_by: 'item' };
  const search = new URLSearchParams({ analysis: 'count', query: JSON.stringify(params) });
  await page.goto(`${server.url}/explorer?${search}`, { waitUntil: 'domcontentloaded' });
  await waitRuns(page, 1);
  await page.click('#pin');
  await page.click('button[data-tab=dashboard]');
  await page.select('#refresh', '5');
  await page.waitForFunction(() => (window as any).__tally.cards?.[0]?.data !== undefined, { timeout: WAIT_MS });
  const card = () => page.evaluate(() => (window as any).__tally.cards[0]);
  const before = byResultDesc((await query('count', params)).body.result as { item: string; result: number }[], (g) => g.item);
  t.same((await card()).labels, before.map((g) => g.item));
  t.same((await card()).data, before.map((g) => g.result), "the card holds the API's groups");

  const recorded = await api.post(`/3.0/projects/${server.projectId}/events/purchases`,
    { key: server.keys.write, body: { item: 'sprocket', price: 3, svc: { timestamp: `${DAY}T05:30:00.000Z` } } });
  t.equal(recorded.status, 201);
  t.ok(await eventually(async () => (await query('count', params)).body.result.some((g: { item: string }) => g.item === 'sprocket')));
  const refreshes = await page.evaluate(() => (window as any).__tally.refreshes);
  await page.waitForFunction((n) => (window as any).__tally.refreshes > n
    && (window as any).__tally.cards[0]?.labels?.includes('sprocket'), { timeout: 20_000 }, refreshes);
  const after = byResultDesc((await query('count', params)).body.result as { item: string; result: number }[], (g) => g.item);
  t.same((await card()).data, after.map((g) => g.result), 'the timer refreshed the card with the new event');
  await page.screenshot({ path: join(shots, 'dashboard.png'), fullPage: true });

  await page.reload({ waitUntil: 'domcontentloaded' });
  await page.click('button[data-tab=dashboard]');
  await page.waitForFunction(() => (window as any).__tally.cards?.[0]?.data !== undefined, { timeout: WAIT_MS });
  t.same((await card()).data, after.map((g) => g.result), 'the pin is kept in localStorage');
  t.equal(await page.$$eval('#cards .card', (cards) => cards.length), 1);
});

t.test('saved and cached queries are listed and open with their stored result; saving needs the Master Key', async (t) => {
  const definition = { analysis_type: 'count', event_collection: 'purchases', timeframe: TIMEFRAME, group_by: 'item' };
  for (const [name, rate] of [['by_item', 0], ['by_item_cached', 14_400]] as const) {
    const put = await api.send('PUT', `/3.0/projects/${server.projectId}/queries/saved/${name}`,
      { key: server.keys.master, body: { query: definition, refresh_rate: rate } });
    t.equal(put.status, 201, `saved ${name}`);
  }
  await page.goto(`${server.url}/explorer`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#saved a[data-saved=by_item_cached]', { timeout: WAIT_MS });
  t.match(await page.$eval('#saved a[data-saved=by_item_cached]', (a) => a.parentElement!.textContent),
    /cached every 4 h/);
  const runs = await page.evaluate(() => (window as any).__tally.runs);
  await page.click('#saved a[data-saved=by_item_cached]');
  await waitRuns(page, runs + 1);
  const stored = await api.get(`/3.0/projects/${server.projectId}/queries/saved/by_item_cached/result`,
    { key: server.keys.read });
  t.equal(stored.status, 200);
  const view = await drawn(page);
  t.equal(view.kind, 'group');
  const storedGroups = byResultDesc(stored.body.result as { item: string; result: number }[], (g) => g.item);
  t.same(view.labels, storedGroups.map((g) => g.item));
  t.same(view.data, storedGroups.map((g) => g.result), 'the stored result is drawn (largest first)');
  t.equal(new URL(page.url()).searchParams.get('saved'), 'by_item_cached', 'the URL names the saved query');
  t.equal(await page.$eval('input[name=group_by]', (el) => (el as HTMLInputElement).value), 'item',
    'its definition is in the builder');

  await typeInto(page, '#save-name', 'mine');
  await page.click('#save');
  await page.waitForFunction(() => (window as any).__tally.saves === 1, { timeout: WAIT_MS });
  const forbidden = await api.send('PUT', `/3.0/projects/${server.projectId}/queries/saved/mine`,
    { key: server.keys.read, body: { query: definition } });
  t.equal(forbidden.status, 403);
  t.equal(await page.$eval('#error', (el) => el.textContent), `KeyNotPermittedError: ${forbidden.body.message}`,
    "a Read Key cannot save: the API's message says so");
  await page.screenshot({ path: join(shots, 'saved.png'), fullPage: true });
});

t.test('a cached dataset is listed and draws its buckets for an index value', async (t) => {
  const now = new Date().toISOString();
  const visits = ['US', 'US', 'FR', 'US', 'DE'].map((country) => ({ country, svc: { timestamp: now } }));
  t.equal((await api.post(`/3.0/projects/${server.projectId}/events`, { key: server.keys.write, body: { visits } })).status, 200);
  const put = await api.send('PUT', `/3.0/projects/${server.projectId}/datasets/visits-by-country`, { key: server.keys.master,
    body: { display_name: 'Visits by country', index_by: ['country'],
      query: { analysis_type: 'count', event_collection: 'visits', timeframe: 'this_2_days', interval: 'daily' } } });
  t.equal(put.status, 201, put.text);
  const results = async () => (await api.get(`/3.0/projects/${server.projectId}/datasets/visits-by-country/results?index_by=US&timeframe=this_2_days`,
    { key: server.keys.read })).body?.result as { timeframe: { start: string }; value: number }[] | undefined;
  t.ok(await eventually(async () => (await results())?.some((b) => b.value === 3) ?? false), 'the dataset counted the visits');
  await page.goto(`${server.url}/explorer`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#datasets a[data-dataset=visits-by-country]', { timeout: WAIT_MS });
  await page.click('#datasets a[data-dataset=visits-by-country]');
  await page.type('#dataset-form input[name=index_by]', 'US');
  const runs = await page.evaluate(() => (window as any).__tally.runs);
  await page.click('#dataset-form button[type=submit]');
  await waitRuns(page, runs + 1);
  const buckets = (await results())!;
  const view = await drawn(page);
  t.equal(view.kind, 'line');
  t.same(view.data, [buckets.map((b) => Date.parse(b.timeframe.start) / 1000), buckets.map((b) => b.value)],
    "the chart holds the dataset's buckets");
  await page.screenshot({ path: join(shots, 'dataset.png'), fullPage: true });
});
