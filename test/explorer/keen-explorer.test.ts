/**
 * Keen's own Explorer against Tally (docs/api.md §12): the npm package keen-explorer, unmodified (its
 * built bundle and CSS, served from node_modules by a small static server on loopback next to a
 * page that configures it with `host` and `protocol`), in Debian's Chromium driven by
 * puppeteer-core against the real server. It lists the collections (the project resource), previews
 * recent events (extraction with `latest: 10`), runs a count and a count with group_by and interval,
 * eight other analyses with a filter and a timezone, a two-step funnel with an actor property, an
 * extraction with property names and a bulk (email) extraction; each drawn number or row equals the
 * API's answer to the very query the Explorer sent. It downloads CSV and JSON, replays the embed
 * snippet's query and the API Query URL on Tally, saves, caches, reopens and deletes saved queries.
 * Every request to Tally must succeed and the page must throw nothing.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import puppeteer, { type Browser, type HTTPRequest, type Page } from 'puppeteer-core';
import t from 'tap';
import { client, eventually } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const WAIT_MS = 20_000;
const require = createRequire(import.meta.url);
const DIST = join(dirname(require.resolve('keen-explorer/package.json')), 'dist');
const ITEMS = ['widget', 'gadget', 'gizmo'];
const HOUR_MS = 3_600_000;

let server: TestServer;
let api: ReturnType<typeof client>;
let statics: http.Server;
let browser: Browser;
let page: Page;
let pageUrl: string;
/** The purchases recorded in `before`. */
let purchasesNow: object[] = [];
/** Requests to Tally that failed (status >= 400 or no answer) and errors the page threw. */
const failures: string[] = [];
const pageErrors: string[] = [];
/** Every request the page sent to Tally, in order. */
const sent: HTTPRequest[] = [];
const shots = mkdtempSync(join(tmpdir(), 'tally-keen-explorer-'));

/** 30 purchases within the last few hours by users u0-u3 (the 4 signups are u0, u1, u2 and u9). */
function purchases(now: number): object[] {
  const events: object[] = [];
  for (let n = 0; n < 30; n++) {
    events.push({ item: ITEMS[n % 5 === 0 ? 0 : n % 3], price: 10 + n, user: `u${n % 4}`,
      svc: { timestamp: new Date(now - (n % 3) * HOUR_MS - 60_000).toISOString() } });
  }
  return events;
}

function explorerPage(host: string): string {
  const config = { projectId: server.projectId, masterKey: server.keys.master, readKey: server.keys.read,
    protocol: 'http', host };
  return `<!doctype html><html><head><meta charset="utf-8"><title>Keen Explorer on Tally</title>
<link rel="stylesheet" href="keen-explorer.css"></head><body>
<div id="root"></div>
<script src="keen-explorer.bundle.min.js"></script>
<script>new KeenExplorer({ container: '#root', keenAnalysis: { config: ${JSON.stringify(config)} } });</script>
</body></html>`;
}

/** Serves the page and keen-explorer's dist files as they are in node_modules. */
function serveStatics(html: string): Promise<string> {
  const types: Record<string, string> = { css: 'text/css', js: 'application/javascript', map: 'application/json' };
  statics = http.createServer((req, res) => {
    const name = new URL(req.url ?? '/', 'http://x').pathname.slice(1);
    if (name === '') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    } else if (name === 'favicon.ico') {
      res.writeHead(204).end();
    } else if (/^[\w.-]+$/.test(name) && existsSync(join(DIST, name))) {
      res.writeHead(200, { 'content-type': types[name.split('.').pop()!] ?? 'application/octet-stream' })
        .end(readFileSync(join(DIST, name)));
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => statics.listen(0, '127.0.0.1',
    () => resolve(`http://127.0.0.1:${(statics.address() as AddressInfo).port}/`)));
}

function toTally(url: string): boolean {
  return url.startsWith(server.url);
}

/** The last request the page sent to Tally whose path ends with `suffix` (and method), after `from`. */
function lastSent(method: string, suffix: string, from = 0): HTTPRequest | undefined {
  return sent.slice(from).reverse().find((req) => req.method() === method
    && new URL(req.url()).pathname.endsWith(suffix));
}

async function waitSent(method: string, suffix: string, from: number): Promise<HTTPRequest> {
  const found = await eventually(async () => lastSent(method, suffix, from)?.response() != null, WAIT_MS);
  if (!found) throw new Error(`the Explorer sent no ${method} …${suffix} that was answered`);
  return lastSent(method, suffix, from)!;
}

/** Replays a query the Explorer POSTed, with the Read Key: the API's own answer to it. */
async function apiAnswer(req: HTTPRequest): Promise<any> {
  const path = new URL(req.url()).pathname;
  const answer = await api.post(path, { key: server.keys.read, body: JSON.parse(req.postData() ?? '{}') });
  if (answer.status !== 200) throw new Error(`replay of ${path}: ${answer.status} ${answer.text}`);
  return answer.body;
}

/** Opens the react-select found by `locate` (run in the page) and picks the option labelled `label`. */
async function choose(p: Page, locate: string, label: string): Promise<void> {
  const control = await p.evaluateHandle(`(${locate})().querySelector('[class*="-control"]')`);
  await (control as any).click();
  await p.waitForFunction((l) => [...document.querySelectorAll('[class*="-option"]')]
    .some((o) => o.textContent === l), { timeout: WAIT_MS }, label);
  const options = await p.$$('[class*="-option"]');
  for (const option of options) {
    if (await option.evaluate((o) => o.textContent) === label) {
      await option.click();
      return;
    }
  }
  throw new Error(`no option ${label}`);
}

/** The labels a react-select offers (opens it, reads, closes with Escape). */
async function optionsOf(p: Page, locate: string): Promise<string[]> {
  const control = await p.evaluateHandle(`(${locate})().querySelector('[class*="-control"]')`);
  await (control as any).click();
  await p.waitForSelector('[class*="-option"]', { timeout: WAIT_MS });
  const labels = await p.$$eval('[class*="-option"]', (all) => all.map((o) => o.textContent ?? ''));
  await p.keyboard.press('Escape');
  return labels;
}

async function clickText(p: Page, selector: string, text: string): Promise<void> {
  const handles = await p.$$(selector);
  for (const handle of handles) {
    if ((await handle.evaluate((el) => el.textContent ?? '')).trim() === text) {
      await handle.click();
      return;
    }
  }
  throw new Error(`nothing "${text}" matches ${selector}`);
}

/** Opens the Explorer's foldable section titled `title` (its title also holds the +/- icon). */
async function openFoldable(p: Page, title: string): Promise<void> {
  const titles = await p.$$('.foldable > .title');
  for (const handle of titles) {
    const text = await handle.evaluate((el) => el.firstChild?.textContent ?? '');
    const open = await handle.evaluate((el) => el.parentElement!.classList.contains('foldable-active'));
    if (text.trim() === title) {
      if (!open) await handle.click();
      return;
    }
  }
  throw new Error(`no foldable "${title}"`);
}

const EVENT_COLLECTION = `() => document.querySelector('.event-collection')`;
const ANALYSIS_TYPE = `() => document.querySelector('.label-analysis-type').nextElementSibling`;
const CHART_TYPE = `() => document.querySelector('.select-chart-type')`;
const GROUP_BY = `() => document.querySelector('.group-by .label-main').nextElementSibling`;

/** The select right after the `.label-main` whose text is `label` (in the visible query panel). */
function afterLabel(label: string, within = '.panel-content:not(.hide)'): string {
  return `() => [...document.querySelectorAll(${JSON.stringify(`${within} .label-main`)})]
    .find((el) => el.textContent === ${JSON.stringify(label)}).nextElementSibling`;
}
const TARGET_PROPERTY = afterLabel('Target property');
const TIMEZONE = `() => document.querySelector('.panel-content:not(.hide) .timeframe').nextElementSibling`;

/** Starts a new query (the Explorer's "+" tab): the builder returns to its defaults. */
async function newQuery(p: Page): Promise<void> {
  await p.click('.button-new-query');
  await p.waitForFunction(() => !document.querySelector('.keen-dataviz-container, .result-string'), { timeout: WAIT_MS });
}

/** The single number a metric chart draws: the exact value (its title) and the text shown. */
async function drawnMetric(p: Page): Promise<{ exact: string; shown: string }> {
  await p.waitForSelector('.keen-dataviz-metric', { timeout: WAIT_MS });
  return p.$eval('.keen-dataviz-metric', (el) => ({ exact: el.getAttribute('title') ?? '',
    shown: el.querySelector('.keen-dataviz-metric-value')?.textContent ?? '' }));
}

/** Every row of the drawn table, header first, cells as shown. */
async function drawnTable(p: Page): Promise<string[][]> {
  await p.waitForSelector('.keen-dataviz-table td', { timeout: WAIT_MS });
  return p.$$eval('.keen-dataviz-table tr', (rows) =>
    rows.map((row) => [...row.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').trim())));
}

/** The Explorer's metric drawn now (the exact value in its title). */
async function metricNow(p: Page): Promise<number> {
  return Number((await drawnMetric(p)).exact);
}

/** The `index`th funnel step's element (0-based), as a page function. */
function step(index: number, inner = ''): string {
  return `() => { const s = document.querySelectorAll('.funnel .step')[${index}]; return ${inner || 's'}; }`;
}

/** Clicks Download, then the CSV or JSON button, and returns the file Chromium saved. */
async function download(p: Page, kind: 'csv' | 'json'): Promise<{ name: string; text: string }> {
  const dir = mkdtempSync(join(shots, `download-${kind}-`));
  const cdp = await p.browser().target().createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dir });
  await p.click('.download-toggle-label');
  await p.waitForSelector(`.button-download-${kind}`, { timeout: WAIT_MS });
  await p.click(`.button-download-${kind}`);
  const done = await eventually(async () => {
    const files = readdirSync(dir);
    return files.length === 1 && !files[0]!.endsWith('.crdownload');
  }, WAIT_MS);
  await cdp.detach();
  if (!done) throw new Error(`no ${kind} download in ${dir}`);
  const name = readdirSync(dir)[0]!;
  return { name, text: readFileSync(join(dir, name), 'utf8') };
}

async function runQuery(p: Page): Promise<HTTPRequest> {
  const from = sent.length;
  await clickText(p, 'button', 'Run Query');
  return waitSent('POST', '', from).then(() => {
    const req = sent.slice(from).find((r) => r.method() === 'POST' && /\/queries\/\w+$/.test(new URL(r.url()).pathname));
    if (req === undefined) throw new Error('Run Query sent no query');
    return req;
  });
}

t.before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is not at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  }
  server = await startServer();
  api = client(server.url);
  const now = Date.now();
  purchasesNow = purchases(now);
  const signups = [0, 1, 2, 9].map((n) => ({ user: `u${n}`, plan: n === 0 ? 'pro' : 'free',
    svc: { timestamp: new Date(now - 4 * HOUR_MS).toISOString() } }));
  const batch = await api.post(`/3.0/projects/${server.projectId}/events`,
    { key: server.keys.write, body: { purchases: purchasesNow, signups } });
  if (batch.status !== 200) throw new Error(`batch: ${batch.status} ${batch.text}`);
  const visible = await eventually(async () => (await api.post(`/3.0/projects/${server.projectId}/queries/count`,
    // An absolute timeframe: `this_1_days` lost the purchases of the hours before midnight when run just after it.
    { key: server.keys.read, body: { event_collection: 'purchases', timeframe: {
      start: new Date(now - 24 * HOUR_MS).toISOString(), end: new Date(now + HOUR_MS).toISOString() } } })).body?.result === 30);
  if (!visible) throw new Error('the recorded events did not become visible');
  pageUrl = await serveStatics(explorerPage(new URL(server.url).host));
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  page.on('request', (req) => { if (toTally(req.url())) sent.push(req); });
  page.on('response', (res) => {
    if (res.status() < 400) return;
    const what = `${res.status()} ${res.request().method()} ${res.url()} ${res.request().postData() ?? ''}`;
    failures.push(what);
    res.text().then((text) => t.comment(`${what} → ${text}`), () => undefined);
  });
  page.on('requestfailed', (req) => {
    // Chromium reports a fetch whose answered body the page never reads (keen-analysis does not read
    // a DELETE's 204) as ERR_ABORTED after the response arrived: that answer did not fail.
    const answered = req.response();
    if (answered !== null && answered.status() < 400 && req.failure()?.errorText === 'net::ERR_ABORTED') return;
    failures.push(`failed ${req.method()} ${req.url()}: ${req.failure()?.errorText}`);
  });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  t.comment(`screenshots in ${shots}`);
});

t.teardown(async () => {
  await browser?.close();
  statics?.close();
  await server?.stop();
  server?.cleanup();
});

t.test('§12 over HTTP: discovery, projects, the project, usage; HEAD, CORS and errors as elsewhere', async (t) => {
  const p = `/3.0/projects/${server.projectId}`;
  const master = { key: server.keys.master };
  t.same((await api.get('/3.0', master)).body, { projects_resource_url: '/3.0/projects' });
  const projects = await api.get('/3.0/projects', master);
  t.same(projects.body.map((project: { id: string }) => project.id), [server.projectId], 'a Master Key reaches its project');
  const one = await api.get(p, master);
  t.match(one.body, { id: server.projectId, url: p, events_url: `${p}/events`, queries_url: `${p}/queries`,
    saved_queries: [] });
  t.same(one.body.events, [{ name: 'purchases', url: `${p}/events/purchases` }, { name: 'signups', url: `${p}/events/signups` }]);
  t.same((await api.get(p, { key: server.orgKey })).body, one.body, 'the organization key too');
  const head = await api.send('HEAD', p, master);
  t.equal(head.status, 200);
  t.equal(head.text, '', 'HEAD has no body');
  const usage = await api.get(`${p}/organization-usage`, master);
  t.match(usage.body, { cached_queries: { limited: true, limit: 100, current_usage: 0 },
    events: { collections: 2, events_recorded: 34 } });
  const preflight = await api.send('OPTIONS', p, { headers: { Origin: 'http://example.test', 'Access-Control-Request-Method': 'GET' } });
  t.equal(preflight.headers.get('access-control-allow-origin'), '*');
  for (const [path, options, status, code] of [
    [p, {}, 401, 'InvalidApiKeyError'],
    [p, { key: server.keys.read }, 403, 'KeyNotPermittedError'],
    [`${p}/organization-usage`, { key: server.keys.write }, 403, 'KeyNotPermittedError'],
    ['/3.0/projects', { key: server.keys.read }, 403, 'KeyNotPermittedError'],
    ['/3.0', { key: 'f'.repeat(64) }, 401, 'InvalidApiKeyError'],
    ['/3.0/projects/0123456789abcdef01234567', { key: server.orgKey }, 404, 'ResourceNotFoundError'],
  ] as const) {
    const answer = await api.get(path, options);
    t.equal(answer.status, status, `${path} ${status}`);
    t.same(Object.keys(answer.body).sort(), ['error_code', 'message']);
    t.equal(answer.body.error_code, code);
  }
});

t.test('the Explorer loads the project resource and lists the collections', async (t) => {
  await page.goto(pageUrl, { waitUntil: 'networkidle0' });
  const project = await waitSent('GET', `/projects/${server.projectId}`, 0);
  t.equal(project.response()!.status(), 200, 'GET /3.0/projects/<id> answers');
  t.equal(new URL(project.url()).searchParams.get('api_key'), server.keys.master, 'sent with the Master Key in the query');
  t.same((await project.response()!.json()).events.map((e: { name: string }) => e.name).sort(), ['purchases', 'signups']);
  await page.screenshot({ path: join(shots, 'loaded.png') });
  t.same(await optionsOf(page, EVENT_COLLECTION), ['purchases', 'signups'], 'the collection list shows both collections');
  await choose(page, EVENT_COLLECTION, 'purchases');
  const schema = await waitSent('GET', '/events/purchases', 0);
  t.equal(schema.response()!.status(), 200, 'the schema of the chosen collection loads');
});

t.test('preview: the recent events are the latest 10 by extraction', async (t) => {
  const from = sent.length;
  await page.click('.a-preview-collection');
  await page.waitForSelector('.preview-collection-content', { timeout: WAIT_MS });
  await clickText(page, '.preview-collection-content .tab', 'Recent Events');
  const extraction = await waitSent('POST', '/queries/extraction', from);
  const body = JSON.parse(extraction.postData() ?? '{}');
  t.equal(body.latest, 10, 'the Explorer asks for the latest 10');
  t.equal(body.event_collection, 'purchases');
  const result = (await extraction.response()!.json()).result as { svc: { id: string } }[];
  t.equal(result.length, 10, 'Tally answers 10 events');
  await page.waitForFunction((ids: string[]) => {
    const text = document.querySelector('.preview-collection-content .tab-content')?.textContent ?? '';
    return ids.every((id) => text.includes(id));
  }, { timeout: WAIT_MS }, result.map((event) => event.svc.id));
  t.pass('the preview shows every one of the 10 events');
  await page.screenshot({ path: join(shots, 'preview.png') });
  await page.click('.modal-main .header .x');
  await page.waitForSelector('.preview-collection-content', { hidden: true, timeout: WAIT_MS });
});

t.test('count: the drawn number is the API answer', async (t) => {
  const req = await runQuery(page);
  t.match(new URL(req.url()).pathname, /\/queries\/count$/);
  const answer = await apiAnswer(req);
  t.equal(answer.result, 30);
  await page.waitForSelector('.keen-dataviz-metric-value', { timeout: WAIT_MS });
  const drawn = await page.$eval('.keen-dataviz-metric-value', (el) => el.textContent ?? '');
  t.equal(Number(drawn.replace(/[^\d.]/g, '')), answer.result, `the metric shows ${drawn}`);
  await page.screenshot({ path: join(shots, 'count.png') });
});

t.test('count by item per day: the table holds the API answer', async (t) => {
  await openFoldable(page, 'Group By - Order By');
  await page.screenshot({ path: join(shots, 'groupby-open.png') });
  await choose(page, GROUP_BY, 'item');
  await openFoldable(page, 'Interval');
  const req = await runQuery(page);
  const sentBody = JSON.parse(req.postData() ?? '{}');
  t.same(sentBody.group_by, ['item']);
  t.type(sentBody.interval, 'string', `interval ${sentBody.interval}`);
  const answer = await apiAnswer(req);
  t.ok(Array.isArray(answer.result) && answer.result.length > 0, 'an interval result');
  await choose(page, CHART_TYPE, 'table');
  await page.waitForSelector('.keen-dataviz-table td', { timeout: WAIT_MS });
  await page.screenshot({ path: join(shots, 'groupby-table.png') });
  const table = await page.$$eval('.keen-dataviz-table tr', (rows) =>
    rows.map((row) => [...row.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').trim())));
  const header = table[0]!;
  const body = table.slice(1).filter((row) => row.length === header.length);
  t.equal(body.length, answer.result.length, 'one row per interval');
  for (const [index, bucket] of (answer.result as { value: { item: string; result: number }[] }[]).entries()) {
    for (const { item, result } of bucket.value) {
      const column = header.indexOf(item);
      t.not(column, -1, `a column for ${item}`);
      t.equal(Number(body[index]![column]), result, `row ${index} ${item}`);
    }
  }
});

t.test('save a query: PUT saved, organization-usage, and it is listed', async (t) => {
  const from = sent.length;
  await page.type('[data-test=query-name]', 'purchases-by-item');
  await clickText(page, 'button', 'Save');
  const put = await waitSent('PUT', '/queries/saved/purchases-by-item', from);
  t.equal(put.response()!.status(), 201, 'created');
  const usage = await waitSent('GET', '/organization-usage', from);
  t.match(await usage.response()!.json(), { cached_queries: { limited: true, limit: 100, current_usage: 0 } });
  const listed = await api.get(`/3.0/projects/${server.projectId}/queries/saved/purchases-by-item`, { key: server.keys.master });
  t.equal(listed.status, 200);
  t.equal(listed.body.query.analysis_type, 'count');
  t.same(listed.body.query.group_by, ['item']);
  await clickText(page, '.tab', 'Browse');
  await page.waitForFunction(() => [...document.querySelectorAll('.saved-queries .item .name')]
    .some((el) => el.textContent === 'purchases-by-item'), { timeout: WAIT_MS });
  t.pass('the Browse panel lists the saved query');
  await page.screenshot({ path: join(shots, 'saved.png') });
});

t.test('cache the saved query: refresh rate 4 hours, organization-usage counts it', async (t) => {
  await clickText(page, '.tab', 'Query');
  const from = sent.length;
  await page.click('label[for=cacheQuery]');
  await page.waitForSelector('[data-test=refresh-settings]', { timeout: WAIT_MS });
  await clickText(page, 'button', 'Update');
  const put = await waitSent('PUT', '/queries/saved/purchases-by-item', from);
  t.equal(put.response()!.status(), 200, 'replaced');
  const saved = await api.get(`/3.0/projects/${server.projectId}/queries/saved/purchases-by-item`, { key: server.keys.master });
  t.equal(saved.body.refresh_rate, 14_400, 'cached every 4 hours, as the Explorer chose');
  const usage = await waitSent('GET', '/organization-usage', from);
  t.match(await usage.response()!.json(), { cached_queries: { limited: true, limit: 100, current_usage: 1 } });
  const result = await api.get(`/3.0/projects/${server.projectId}/queries/saved/purchases-by-item/result`, { key: server.keys.read });
  t.equal(result.status, 200, 'the cached result reads');
  t.same(result.body.query.group_by, ['item']);
  await page.screenshot({ path: join(shots, 'cached.png') });
});

t.test('other analyses with a filter item eq widget and a timezone: each drawn number is the API answer', async (t) => {
  await newQuery(page);
  await choose(page, EVENT_COLLECTION, 'purchases');
  await choose(page, ANALYSIS_TYPE, 'sum');
  await choose(page, TARGET_PROPERTY, 'price');
  await page.click('.panel-content:not(.hide) .filters.foldable');
  await page.waitForSelector('.filters-container .button-add-filter', { timeout: WAIT_MS });
  await page.click('.filters-container .button-add-filter');
  await page.waitForSelector('.filters-container .row', { timeout: WAIT_MS });
  await choose(page, `() => document.querySelector('.filters-container .row .row-part')`, 'item');
  await page.type('.filters-container .row .row-part:nth-child(4) input', 'widget');
  await page.click('.filters-container .button-done');
  await page.waitForSelector('.filters-container', { hidden: true, timeout: WAIT_MS });
  await choose(page, TIMEZONE, 'Asia/Tokyo');
  await page.screenshot({ path: join(shots, 'analyses-builder.png') });
  const widgets = purchasesNow.filter((event: any) => event.item === 'widget');
  const prices = widgets.map((event: any) => event.price as number).sort((a, b) => a - b);
  const expected: Record<string, number> = {
    sum: prices.reduce((a, b) => a + b, 0),
    minimum: prices[0]!,
    maximum: prices.at(-1)!,
    count_unique: new Set(widgets.map((event: any) => event.user)).size,
  };
  let chosenTarget = 'price';
  for (const [analysis, target, percentile] of [['sum', 'price'], ['average', 'price'], ['minimum', 'price'],
    ['maximum', 'price'], ['count_unique', 'user'], ['median', 'price'], ['standard_deviation', 'price'],
    ['percentile', 'price', '90']] as const) {
    if (analysis !== 'sum') await choose(page, ANALYSIS_TYPE, analysis);
    if (target !== chosenTarget) await choose(page, TARGET_PROPERTY, target);
    chosenTarget = target;
    if (percentile !== undefined) await page.type('.percentile input', percentile);
    const req = await runQuery(page);
    t.match(new URL(req.url()).pathname, new RegExp(`/queries/${analysis}$`));
    const body = JSON.parse(req.postData() ?? '{}');
    t.match(body.filters, [{ property_name: 'item', operator: 'eq', property_value: 'widget' }], `${analysis}: the filter as sent`);
    t.equal(body.filters.length, 1);
    t.equal(body.timezone, 32_400, `${analysis}: Asia/Tokyo as an offset in seconds`);
    t.equal(body.target_property, target);
    if (percentile !== undefined) t.equal(body.percentile, Number(percentile));
    const answer = await apiAnswer(req);
    t.equal(typeof answer.result, 'number', `${analysis}: a number`);
    if (analysis in expected) t.equal(answer.result, expected[analysis], `${analysis} of widget ${target}s`);
    const drawn = await drawnMetric(page);
    t.equal(Number(drawn.exact), answer.result, `${analysis}: the metric is ${drawn.exact} (shown ${drawn.shown})`);
    t.ok(Math.abs(parseFloat(drawn.shown) - answer.result) <= Math.abs(answer.result) * 0.01, `${analysis}: shown ${drawn.shown}`);
  }
  await page.screenshot({ path: join(shots, 'analyses.png') });
});

t.test('embed and API Query URL: the snippet names the project, the Read Key and the query; the URL answers as drawn', async (t) => {
  const drawn = await metricNow(page);
  // A click copies the URL (what a user takes away). The box is rendered with `defaultValue`, so
  // its attribute follows the query while its live value may keep the URL it started with.
  await page.evaluate(() => document.addEventListener('copy', () => {
    (window as any).copied = (document.body.lastElementChild as HTMLTextAreaElement).value;
  }, { once: true }));
  await page.click('.apiQueryUrl');
  const url = await page.evaluate(() => (window as any).copied as string);
  t.equal(await page.$eval('.apiQueryUrl input', (el) => el.getAttribute('value')), url, 'the box\'s value attribute is that URL');
  t.ok(url.startsWith(`${server.url}/3.0/projects/${server.projectId}/queries/percentile?api_key=${server.keys.master}&`),
    `the API Query URL names Tally's host: ${url}`);
  const params = new URL(url).searchParams;
  t.equal(params.get('event_collection'), '"purchases"');
  t.equal(params.get('target_property'), '"price"');
  t.equal(params.get('percentile'), '90');
  t.match(JSON.parse(params.get('filters')!), [{ property_name: 'item', operator: 'eq', property_value: 'widget' }]);
  const answer = await fetch(url);
  t.equal(answer.status, 200, 'Tally answers the URL the Explorer shows (GET, JSON values URL-encoded)');
  t.equal((await answer.json()).result, drawn, 'with the number drawn');

  await page.click('.button-embed-html');
  await page.waitForSelector('.modal-main .container', { timeout: WAIT_MS });
  const code = await page.$eval('.modal-main .container', (el) => el.textContent ?? '');
  await page.screenshot({ path: join(shots, 'embed.png') });
  t.match(code, `projectId: '${server.projectId}'`, 'the project id');
  t.match(code, `readKey: '${server.keys.read}'`, 'the Read Key (never the Master Key)');
  t.notMatch(code, server.keys.master);
  for (const line of [`analysisType: 'percentile'`, `eventCollection: 'purchases'`, `targetProperty: 'price'`,
    `timeframe: "this_14_days"`, 'timezone: 32400', 'percentile: 90', `"propertyName":"item"`, `"propertyValue":"widget"`]) {
    t.match(code, line, `the query: ${line}`);
  }
  // keen-explorer 7.1.9 writes `new KeenAnalysis({ projectId, readKey })` without `host`: the snippet
  // as generated would ask api.keen.io. Run its query against Tally with the host added.
  const query = /\.query\(\{([\s\S]*?)\}\)\s*\.then/.exec(code)?.[1];
  t.ok(query, 'the snippet holds a client.query({...})');
  const members = Function(`return {${query}}`)() as Record<string, unknown>;
  const body = Object.fromEntries(Object.entries(members).map(([key, value]) => [key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
    key === 'filters' ? (value as any[]).map((f) => ({ property_name: f.propertyName, operator: f.operator, property_value: f.propertyValue })) : value]));
  const replay = await api.post(`/3.0/projects/${server.projectId}/queries/${body['analysis_type']}`, { key: server.keys.read, body });
  t.equal(replay.status, 200, 'the snippet\'s query runs on Tally');
  t.equal(replay.body.result, drawn, 'and answers the number drawn');
  await page.click('.modal-main .header .x');
  await page.waitForSelector('.modal-main .container', { hidden: true, timeout: WAIT_MS });
});

t.test('save the percentile query, then browse the saved queries and reopen each', async (t) => {
  let from = sent.length;
  await page.type('[data-test=query-name]', 'widget-price-p90');
  await clickText(page, 'button', 'Save');
  const put = await waitSent('PUT', '/queries/saved/widget-price-p90', from);
  t.equal(put.response()!.status(), 201, 'created');
  const definition = await api.get(`/3.0/projects/${server.projectId}/queries/saved/widget-price-p90`, { key: server.keys.master });
  t.match(definition.body.query, { analysis_type: 'percentile', target_property: 'price', percentile: 90, timezone: 32_400,
    filters: [{ property_name: 'item', operator: 'eq', property_value: 'widget' }] }, 'stored as the Explorer built it');

  await newQuery(page);
  await clickText(page, '.tab', 'Browse');
  await page.waitForFunction(() => document.querySelectorAll('.saved-queries .item').length === 2, { timeout: WAIT_MS });
  from = sent.length;
  await clickText(page, '.saved-queries .item .name', 'widget-price-p90');
  const read = await waitSent('GET', '/queries/saved/widget-price-p90/result', from);
  t.equal(read.response()!.status(), 200, 'the Explorer reads the saved result');
  const stored = await api.get(`/3.0/projects/${server.projectId}/queries/saved/widget-price-p90/result`, { key: server.keys.read });
  t.equal(await metricNow(page), stored.body.result, `the drawn metric is the saved query's result ${stored.body.result}`);
  await clickText(page, '.tab', 'Query');
  const text = (locate: string) => page.evaluate(`(${locate})().textContent`);
  t.equal(await text(ANALYSIS_TYPE), 'percentile', 'the builder holds the analysis type');
  t.equal(await text(EVENT_COLLECTION), 'Event collectionpurchases', 'the collection');
  t.equal(await text(TARGET_PROPERTY), 'price', 'the target property');
  t.equal(await page.$eval('.percentile input', (el) => (el as HTMLInputElement).value), '90', 'the percentile');
  t.equal(await text(TIMEZONE), 'Timezone: Asia/Tokyo', 'the timezone');
  t.equal(await page.$eval('.panel-content:not(.hide) .filters .count', (el) => el.textContent), '1', 'one filter');
  await page.screenshot({ path: join(shots, 'reopened-percentile.png') });

  await clickText(page, '.tab', 'Browse');
  from = sent.length;
  await clickText(page, '.saved-queries .item .name', 'purchases-by-item');
  await waitSent('GET', '/queries/saved/purchases-by-item/result', from);
  const byItem = await api.get(`/3.0/projects/${server.projectId}/queries/saved/purchases-by-item/result`, { key: server.keys.read });
  await clickText(page, '.tab', 'Query');
  t.equal(await text(ANALYSIS_TYPE), 'count');
  t.equal(await text(GROUP_BY), 'item', 'the group by');
  if ((await page.$('.keen-dataviz-table')) === null) await choose(page, CHART_TYPE, 'table');
  const table = await drawnTable(page);
  await page.screenshot({ path: join(shots, 'reopened-by-item.png') });
  const header = table[0]!;
  const rows = table.slice(1).filter((row) => row.length === header.length);
  t.equal(rows.length, byItem.body.result.length, 'one row per interval');
  for (const [index, bucket] of (byItem.body.result as { value: { item: string; result: number }[] }[]).entries()) {
    for (const { item, result } of bucket.value) t.equal(Number(rows[index]![header.indexOf(item)]), result, `row ${index} ${item}`);
  }
});

t.test('funnel: signups then purchases by user, drawn step counts are the API answer', async (t) => {
  await newQuery(page);
  await choose(page, ANALYSIS_TYPE, 'funnel');
  await page.waitForSelector('.funnel .step', { timeout: WAIT_MS });
  await choose(page, step(0, `s.querySelector('.event-collection')`), 'signups');
  await choose(page, step(0, `[...s.querySelectorAll('.label-main')].find((l) => l.textContent === 'Actor property').nextElementSibling`), 'user');
  await page.click('.funnel .button-add');
  await page.waitForFunction(() => document.querySelectorAll('.funnel .step').length === 2, { timeout: WAIT_MS });
  await choose(page, step(1, `s.querySelector('.event-collection')`), 'purchases');
  await choose(page, step(1, `[...s.querySelectorAll('.label-main')].find((l) => l.textContent === 'Actor property').nextElementSibling`), 'user');
  await page.screenshot({ path: join(shots, 'funnel-builder.png') });
  const req = await runQuery(page);
  t.match(new URL(req.url()).pathname, /\/queries\/funnel$/);
  const body = JSON.parse(req.postData() ?? '{}');
  t.match(body.steps, [{ event_collection: 'signups', actor_property: 'user' }, { event_collection: 'purchases', actor_property: 'user' }]);
  const answer = await apiAnswer(req);
  t.same(answer.result, [4, 3], 'u0, u1, u2 and u9 signed up; u0, u1 and u2 of them purchased');
  await choose(page, CHART_TYPE, 'table');
  const table = await drawnTable(page);
  await page.screenshot({ path: join(shots, 'funnel.png') });
  t.comment(JSON.stringify(table));
  const numbers = table.slice(1).map((row) => Number(row.at(-1)));
  t.same(numbers, answer.result, 'the table draws each step count');
});

t.test('extraction: properties item, price and user of the latest 12, drawn rows are the API answer; CSV and JSON download', async (t) => {
  await newQuery(page);
  await choose(page, EVENT_COLLECTION, 'purchases');
  await choose(page, ANALYSIS_TYPE, 'extraction');
  await page.waitForSelector('.extraction', { timeout: WAIT_MS });
  for (const name of ['item', 'price', 'user']) await choose(page, `() => document.querySelector('.extraction .standardUnits')`, name);
  await page.click('.extraction input[type=number]', { count: 3 });
  await page.type('.extraction input[type=number]', '12');
  await page.screenshot({ path: join(shots, 'extraction-builder.png') });
  const req = await runQuery(page);
  t.match(new URL(req.url()).pathname, /\/queries\/extraction$/);
  const body = JSON.parse(req.postData() ?? '{}');
  t.equal(body.latest, 12);
  t.same(body.property_names, ['item', 'price', 'user']);
  const answer = await apiAnswer(req);
  t.equal(answer.result.length, 12, '12 events');
  const table = await drawnTable(page);
  await page.screenshot({ path: join(shots, 'extraction.png') });
  const header = table[0]!;
  const rows = table.slice(1).filter((row) => row.length === header.length);
  t.comment(JSON.stringify(table.slice(0, 3)));
  const expected = (answer.result as Record<string, unknown>[]).map((event) => header.map((column) => String(event[column])));
  t.same(rows, expected, 'the table holds every extracted event, row by row');

  const csv = await download(page, 'csv');
  t.equal(csv.name, 'untitled-query.csv');
  const lines = csv.text.trim().split('\n').map((line) => line.split(','));
  t.same(lines, table.map((row) => row), 'the CSV is the table');
  const json = await download(page, 'json');
  t.equal(json.name, 'untitled-query.json');
  t.same(JSON.parse(json.text).result, answer.result, 'the JSON holds the API answer');
});

t.test('bulk extraction to email: the Explorer draws Tally\'s sentence; the job\'s events are the API answer', async (t) => {
  await clickText(page, '.extraction .tab', 'Bulk CSV extraction');
  await page.waitForSelector('.extraction input[name=email]', { timeout: WAIT_MS });
  await page.type('.extraction input[name=email]', 'analyst@example.test');
  const from = sent.length;
  await clickText(page, 'button', 'Extract to Email');
  const req = await waitSent('POST', '/queries/extraction', from);
  const body = JSON.parse(req.postData() ?? '{}');
  t.equal(body.email, 'analyst@example.test');
  t.equal(body.latest, 1000, 'the bulk tab asks for up to 1000');
  t.same(body.property_names, ['item', 'price', 'user']);
  t.equal(req.response()!.status(), 202, 'accepted');
  const accepted = await req.response()!.json();
  t.match(accepted, { result: /^Processing\. /, id: /^[0-9a-f]{24}$/, url: /\/result$/ });
  await page.waitForSelector('.result-string', { timeout: WAIT_MS });
  t.equal(await page.$eval('.result-string', (el) => el.textContent), accepted.result, 'the Explorer draws the sentence');
  await page.screenshot({ path: join(shots, 'bulk.png') });
  let job: any = {};
  const done = await eventually(async () => {
    job = (await api.get(`/3.0/projects/${server.projectId}/queries/extraction/jobs/${accepted.id}`, { key: server.keys.read })).body;
    return job.status === 'done';
  }, WAIT_MS);
  t.ok(done, `the job is done (${job.status})`);
  const file = await api.get(accepted.url, { key: server.keys.read });
  const events = file.text.trim().split('\n').map((line: string) => JSON.parse(line));
  const { email: _email, ...sync } = body;
  const answer = await api.post(`/3.0/projects/${server.projectId}/queries/extraction`, { key: server.keys.read, body: sync });
  t.equal(events.length, 30, 'every purchase');
  t.same(events, answer.body.result, 'the job holds what the synchronous extraction answers');
});

t.test('delete a saved query from Browse: confirm, DELETE, and the list drops it', async (t) => {
  await clickText(page, '.tab', 'Browse');
  const items = await page.$$('.saved-queries .item');
  let target;
  for (const item of items) {
    if (await item.$eval('.name', (el) => el.textContent) === 'widget-price-p90') target = item;
  }
  if (target === undefined) throw new Error('widget-price-p90 is not listed');
  const from = sent.length;
  await (await target.$('.button-delete'))!.click();
  await page.waitForFunction(() => [...document.querySelectorAll('button')].some((b) => b.textContent === 'Confirm'), { timeout: WAIT_MS });
  await clickText(page, 'button', 'Confirm');
  const del = await waitSent('DELETE', '/queries/saved/widget-price-p90', from);
  t.equal(del.response()!.status(), 204, 'deleted');
  t.equal((await api.get(`/3.0/projects/${server.projectId}/queries/saved/widget-price-p90`, { key: server.keys.master })).status, 404);
  await page.waitForFunction(() => ![...document.querySelectorAll('.saved-queries .item .name')]
    .some((el) => el.textContent === 'widget-price-p90'), { timeout: WAIT_MS });
  t.pass('the Browse panel no longer lists it');
  await clickText(page, '.tab', 'Query');
});

t.test('no request to Tally failed and the page threw nothing', async (t) => {
  t.same(failures, [], 'no failing request');
  t.same(pageErrors, [], 'no uncaught page error');
  t.ok(sent.some((req) => req.method() === 'GET' && new URL(req.url()).pathname.endsWith('/organization-usage')));
});
