// The Explorer's entry: key entry (localStorage), collections with schema and counts, the query in
// the URL (back/forward and reload replay it), running it through the public API, the same query
// as curl and keen-analysis code, and the live view (Server-Sent Events). Talks only to /3.0.
import { fillForm, readForm, errorField } from './builder.js';
import { renderResult, plural, resizeChart } from './views.js';
import { createDashboard } from './dashboard.js';
import { createSaved } from './saved.js';
import { createDatasets } from './datasets.js';

const $ = (selector) => document.querySelector(selector);
const STORE = 'tally.explorer.key';
const state = { projectId: '', key: '', collections: [], live: null, dashboard: null, lastQuery: null };
const tally = (window.__tally = { view: null, lastError: null, runs: 0, timings: {} });
const EVERYTHING = { start: '1970-01-01T00:00:00.000Z', end: '2100-01-01T00:00:00.000Z' };

async function api(method, path, body) {
  const response = await fetch(`/3.0/projects/${encodeURIComponent(state.projectId)}${path}`, {
    method, headers: { Authorization: state.key, ...(body && { 'Content-Type': 'application/json' }) },
    body: body && JSON.stringify(body),
  });
  const text = await response.text();
  let json;
  try { json = JSON.parse(text); } catch { json = { message: text, error_code: `HTTP ${response.status}` }; }
  if (!response.ok) throw Object.assign(new Error(json.message), { status: response.status, ...json });
  return json;
}

function keyMessage(error) {
  if (error.status === 401) return `That key is not a key of project "${state.projectId}" (401 ${error.error_code}). Check the project id and the key the first start printed.`;
  // The API's message already names the keys that may read: said once, not paraphrased again.
  if (error.status === 403) return `This key may not read (403 ${error.error_code}): ${error.message}`;
  return `${error.error_code ?? 'Error'}: ${error.message}`;
}

async function connect() {
  $('#key-status').textContent = 'Connecting…';
  $('#key-status').className = '';
  try {
    state.collections = await api('GET', '/events');
  } catch (error) {
    $('#key-status').textContent = keyMessage(error);
    $('#key-status').className = 'bad';
    document.body.dataset.connected = 'no';
    return false;
  }
  $('#key-status').textContent = `Connected to project ${state.projectId}: ${plural(state.collections.length, 'collection')}.`;
  document.body.dataset.connected = 'yes';
  renderCollections();
  state.dashboard?.stop();
  state.dashboard = createDashboard({ projectId: state.projectId, api, tally, render: renderResult });
  state.dashboard.show(!$('#dashboard-tab').hidden);
  state.saved = createSaved({ api, list: $('#saved'), onOpen: openSaved });
  void state.saved.load();
  state.datasets = createDatasets({ api, list: $('#datasets'), onOpen: openDataset });
  void state.datasets.load();
  void loadCounts();
  fillFromUrl();
  return true;
}

function renderCollections() {
  const list = $('#collections');
  list.replaceChildren(...state.collections.map((c) => {
    const props = Object.entries(c.properties ?? {}).sort(([a], [b]) => a.localeCompare(b));
    const item = document.createElement('li');
    item.innerHTML = '<details><summary><b></b> <span class="count"></span></summary><table class="schema"></table></details>';
    item.querySelector('b').textContent = c.name;
    item.querySelector('.count').dataset.collection = c.name;
    item.querySelector('summary').addEventListener('click', () => {
      const select = document.querySelector('#query-form select[name=event_collection]');
      if (select) { select.value = c.name; setProperties(c.name); }
      $('#live-collection').value = c.name;
    });
    item.querySelector('table').append(...props.map(([p, t]) => {
      const row = document.createElement('tr');
      row.innerHTML = '<td></td><td class="type"></td>';
      row.cells[0].textContent = p;
      row.cells[1].textContent = t;
      return row;
    }));
    return item;
  }));
  $('#live-collection').replaceChildren(...state.collections.map((c) => new Option(c.name, c.name)));
}

/** Event counts of the first collections, one count query each (they share the query rate limit). */
async function loadCounts() {
  for (const c of state.collections.slice(0, 25)) {
    try {
      const { result } = await api('POST', '/queries/count', { event_collection: c.name, timeframe: EVERYTHING });
      document.querySelector(`.count[data-collection="${CSS.escape(c.name)}"]`).textContent = plural(result, 'event');
    } catch { /* counts are a hint; the list works without them */ }
  }
}

function setProperties(collection) {
  const schema = state.collections.find((c) => c.name === collection)?.properties ?? {};
  $('#properties').replaceChildren(new Option('order by the result', 'result'),
    ...Object.entries(schema).map(([p, type]) => new Option(type, p)));
}

function queryFromUrl() {
  const search = new URLSearchParams(location.search);
  const analysis = search.get('analysis') ?? 'count';
  let params = {};
  try { params = JSON.parse(search.get('query') ?? '{}'); } catch { /* a hand-edited URL: start empty */ }
  if (params.event_collection === undefined && analysis !== 'funnel') params.event_collection = state.collections[0]?.name;
  return { analysis, params, run: search.has('query') };
}

function showForm(analysis, params) {
  const form = $('#query-form');
  fillForm(form, state.collections, analysis, params);
  setProperties(params.event_collection);
  form.elements.event_collection.addEventListener('change', (e) => setProperties(e.target.value));
  showCode(analysis, params);
}

function fillFromUrl() {
  const saved = new URLSearchParams(location.search).get('saved');
  if (saved !== null) return void openSaved(saved, false);
  const { analysis, params, run } = queryFromUrl();
  showForm(analysis, params);
  if (run) void runQuery(analysis, params);
}

/** Opens a saved query: its definition in the builder, its stored (or cached) result drawn. */
async function openSaved(name, push) {
  if (push) history.pushState(null, '', `/explorer?${new URLSearchParams({ saved: name })}`);
  await show(async () => {
    const { analysis, params, answer } = await state.saved.open(name);
    showForm(analysis, params);
    const info = answer.run_information;
    $('#run-info').textContent = `saved query "${name}"${info?.last_run_date ? `, last run ${info.last_run_date}` : ''}`;
    const result = analysis === 'funnel' && Array.isArray(answer.result)
      ? { result: answer.result, steps: params.steps } : answer.result;
    return { analysis, params, result };
  });
}

function showCode(analysis, params) {
  const origin = location.origin;
  const body = JSON.stringify(params);
  $('#curl').textContent = `curl '${origin}/3.0/projects/${state.projectId}/queries/${analysis}' \\\n`
    + `  -H "Authorization: $TALLY_READ_KEY" -H 'Content-Type: application/json' \\\n  -d '${body.replace(/'/g, "'\\''")}'`;
  const host = location.host;
  $('#keen-code').textContent = `import KeenAnalysis from 'keen-analysis';\n\n`
    + `const client = new KeenAnalysis({\n  projectId: '${state.projectId}',\n  readKey: process.env.TALLY_READ_KEY,\n`
    + `  host: '${host}',\n  protocol: '${location.protocol.replace(':', '')}',\n});\n\n`
    + `const { result } = await client.query(${JSON.stringify({ analysis_type: analysis, ...params }, null, 2)});`;
}

function clearErrors() {
  $('#error').hidden = true;
  for (const out of document.querySelectorAll('.field-error')) out.textContent = '';
}

function showError(error) {
  tally.lastError = { status: error.status, message: error.message, error_code: error.error_code };
  const box = $('#error');
  box.textContent = `${error.error_code ?? 'Error'}: ${error.message}`;
  box.hidden = false;
  const name = errorField(error);
  const out = name && document.querySelector(`.field-error[data-error-for="${name}"]`);
  if (out && !out.closest('[hidden]')) out.textContent = error.message;
}

function runQuery(analysis, params) {
  $('#run-info').textContent = '';
  return show(async () => {
    const answer = await api('POST', `/queries/${analysis}`, params);
    return { analysis, params, result: analysis === 'funnel' ? answer : answer.result };
  });
}

/** Shows a dataset's form in place of the builder; submitting it draws the dataset's buckets. */
function openDataset(dataset) {
  const form = $('#dataset-form');
  // Pin, save and the curl line describe builder queries, not a dataset read: hidden meanwhile.
  for (const node of [$('#query-form'), $('.actions'), $('#code')]) node.hidden = true;
  form.hidden = false;
  $('#dataset-name').textContent = dataset.display_name || dataset.dataset_name;
  $('#dataset-index-label').textContent = `${[].concat(dataset.index_by).join(', ')} value`;
  form.elements.timeframe.value = typeof dataset.query.timeframe === 'string' ? dataset.query.timeframe : 'this_7_days';
  form.onsubmit = (event) => {
    event.preventDefault();
    const { analysis_type: analysis, ...params } = dataset.query;
    void show(async () => {
      const answer = await state.datasets.results(dataset, form.elements.index_by.value.trim(), form.elements.timeframe.value.trim());
      return { analysis, params, result: answer.result };
    });
  };
}

/** Runs `load` (→ {analysis, params, result}) and draws its result, or shows its error. */
async function show(load) {
  clearErrors();
  const started = performance.now();
  $('#result').classList.add('busy');
  try {
    const { analysis, params, result } = await load();
    // Without order_by the API returns groups by name; the bars follow the Direction control.
    const direction = params.order_by ? undefined : $('#query-form').elements.direction?.value ?? 'DESC';
    tally.view = renderResult($('#result'), analysis, result, params.timezone, false, { direction });
    state.lastQuery = { analysis, params };
    $('#pin').disabled = $('#save').disabled = false;
    tally.lastError = null;
  } catch (error) {
    if (error.status === 401) $('#key-status').textContent = keyMessage(error);
    $('#result').replaceChildren();
    tally.view = null;
    $('#pin').disabled = $('#save').disabled = true;
    showError(error);
  } finally {
    $('#result').classList.remove('busy');
    tally.timings.lastRunMs = performance.now() - started;
    tally.timings.firstResultMs ??= performance.now();
    tally.runs++;
  }
}

function onSubmit(event) {
  event.preventDefault();
  const collection = event.target.elements.event_collection.value;
  const schema = state.collections.find((c) => c.name === collection)?.properties ?? {};
  const { analysis, params } = readForm(event.target, schema);
  const search = new URLSearchParams({ analysis, query: JSON.stringify(params) });
  if (location.search !== `?${search}`) history.pushState(null, '', `/explorer?${search}`);
  showCode(analysis, params);
  void runQuery(analysis, params);
}

function startLive() {
  state.live?.close();
  const collection = $('#live-collection').value;
  if (!collection || $('#live-tab').hidden) return;
  const list = $('#live-events');
  list.replaceChildren();
  const url = `/3.0/projects/${encodeURIComponent(state.projectId)}/events/${encodeURIComponent(collection)}/live?api_key=${encodeURIComponent(state.key)}`;
  const source = (state.live = new EventSource(url));
  $('#live-status').textContent = 'connecting…';
  source.onopen = () => { $('#live-status').textContent = `live: new ${collection} events appear at the top`; };
  source.onerror = () => { $('#live-status').textContent = 'disconnected; retrying…'; };
  source.onmessage = (message) => {
    const item = document.createElement('li');
    let event;
    try { event = JSON.parse(message.data); } catch { event = message.data; }
    item.innerHTML = '<time></time><code></code>';
    item.dataset.offset = message.lastEventId;
    item.firstChild.textContent = event?.svc?.timestamp ?? '';
    item.lastChild.textContent = JSON.stringify(event);
    list.prepend(item);
    while (list.children.length > 200) list.lastChild.remove();
  };
}

function showTab(name) {
  for (const tab of document.querySelectorAll('.tab')) tab.classList.toggle('active', tab.dataset.tab === name);
  $('#query-tab').hidden = name !== 'query';
  $('#live-tab').hidden = name !== 'live';
  $('#dashboard-tab').hidden = name !== 'dashboard';
  state.dashboard?.show(name === 'dashboard');
  if (name === 'live') startLive(); else { state.live?.close(); state.live = null; }
}

function init() {
  const saved = JSON.parse(localStorage.getItem(STORE) ?? 'null');
  const zones = Intl.supportedValuesOf?.('timeZone') ?? [];
  $('#timezones').replaceChildren(...['UTC', ...zones].map((z) => new Option('', z)));
  $('#key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    state.projectId = $('#project-id').value.trim();
    state.key = $('#api-key').value.trim();
    localStorage.setItem(STORE, JSON.stringify({ projectId: state.projectId, key: state.key }));
    void connect();
  });
  $('#forget-key').addEventListener('click', () => {
    localStorage.removeItem(STORE);
    $('#api-key').value = '';
    $('#key-status').textContent = 'Key forgotten in this browser.';
  });
  $('#query-form').addEventListener('submit', onSubmit);
  $('#dataset-close').addEventListener('click', () => {
    $('#dataset-form').hidden = true;
    for (const node of [$('#query-form'), $('.actions'), $('#code')]) node.hidden = false;
    $('#result').replaceChildren();
  });
  $('#save').addEventListener('click', async () => {
    if (!state.lastQuery || !state.saved) return;
    clearErrors();
    const name = $('#save-name').value.trim();
    try {
      await state.saved.save(name, state.lastQuery.analysis, state.lastQuery.params, Number($('#save-refresh').value));
      $('#run-info').textContent = `saved as "${name}"`;
    } catch (error) {
      showError(error);
    }
    tally.saves = (tally.saves ?? 0) + 1;
  });
  $('#pin').addEventListener('click', () => {
    if (state.lastQuery && state.dashboard) state.dashboard.pin(state.lastQuery.analysis, state.lastQuery.params);
    $('#pin').textContent = 'Pinned';
    setTimeout(() => { $('#pin').textContent = 'Pin to dashboard'; }, 1500);
  });
  for (const tab of document.querySelectorAll('.tab')) tab.addEventListener('click', () => showTab(tab.dataset.tab));
  $('#live-collection').addEventListener('change', startLive);
  let resizing = 0;
  window.addEventListener('resize', () => {
    cancelAnimationFrame(resizing);
    resizing = requestAnimationFrame(() => { if (tally.view) resizeChart(tally.view, $('#result')); });
  });
  window.addEventListener('popstate', () => { if (document.body.dataset.connected === 'yes') fillFromUrl(); });
  if (saved?.projectId && saved?.key) {
    $('#project-id').value = state.projectId = saved.projectId;
    $('#api-key').value = state.key = saved.key;
    void connect();
  } else {
    $('#key-status').textContent = 'Enter a project id and its Read Key (or Master Key) to start.';
  }
}

init();
