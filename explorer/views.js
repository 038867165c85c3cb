// Result views: a big number, a line chart over an interval (uPlot, one series per group or
// label), bars for groups, a funnel with step conversion, and a table of every result with CSV
// download. What each view drew is kept on window.__tally.view so tests can read the chart's data.

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined) continue;
    if (k === 'text') node.textContent = v; else node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
};
const fmt = (v) => v === null || v === undefined ? '—'
  : typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 4 })
  : typeof v === 'object' ? JSON.stringify(v) : String(v);
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#65a30d',
  '#4b5563', '#ea580c'];

const groupKeys = (row) => Object.keys(row).filter((k) => k !== 'result');
const groupLabel = (row, keys) => keys.map((k) => fmt(row[k])).join(' / ');

/** Rows and columns of any result; the table view and the CSV both come from this. */
export function tabulate(result, analysis) {
  if (analysis === 'funnel') {
    const steps = result.steps ?? [];
    return { columns: ['step', 'collection', 'actors', 'conversion'], rows: result.result.map((n, i) => [
      i + 1, steps[i]?.event_collection ?? '', n, i === 0 || !result.result[0] ? 1 : n / result.result[0]]) };
  }
  if (typeof result !== 'object' || result === null) return { columns: ['result'], rows: [[result]] };
  if (Array.isArray(result) && result.length > 0 && result[0] && typeof result[0] === 'object' && 'timeframe' in result[0]) {
    const { labels, series } = intervalSeries(result, analysis);
    return { columns: ['start', 'end', ...labels],
      rows: result.map((b, i) => [b.timeframe.start, b.timeframe.end, ...series.map((s) => s[i])]) };
  }
  if (Array.isArray(result) && result.length > 0 && result[0] && typeof result[0] === 'object' && 'result' in result[0]) {
    const keys = groupKeys(result[0]);
    const multi = typeof result[0].result === 'object' && result[0].result !== null;
    const labels = multi ? Object.keys(result[0].result) : ['result'];
    return { columns: [...keys, ...labels], rows: result.map((r) =>
      [...keys.map((k) => r[k]), ...(multi ? labels.map((l) => r.result[l]) : [r.result])]) };
  }
  if (Array.isArray(result)) {
    if (result.length > 0 && typeof result[0] === 'object' && result[0] !== null) return events(result);
    return { columns: ['value'], rows: result.map((v) => [v]) };
  }
  return { columns: ['label', 'result'], rows: Object.entries(result).map(([k, v]) => [k, v]) };
}

/** Extraction events flattened to dotted columns (svc.timestamp first). */
function events(list) {
  const columns = new Set();
  const flat = list.map((event) => {
    const out = {};
    const walk = (obj, prefix) => {
      for (const [k, v] of Object.entries(obj)) {
        const key = prefix + k;
        if (v && typeof v === 'object' && !Array.isArray(v)) walk(v, `${key}.`);
        else { out[key] = v; columns.add(key); }
      }
    };
    walk(event, '');
    return out;
  });
  const cols = [...columns].sort((a, b) => (a === 'svc.timestamp' ? -1 : b === 'svc.timestamp' ? 1 : a.localeCompare(b)));
  return { columns: cols, rows: flat.map((row) => cols.map((c) => row[c])) };
}

/** Analyses whose value over no event is 0, so a group absent from a bucket counts 0 there. */
const ADDITIVE = ['count', 'count_unique', 'sum'];

/**
 * One series per group (group_by), per label (multi_analysis), or the single value. A group absent
 * from a bucket is 0 for additive analyses (no event) and a gap (null) for the others.
 */
export function intervalSeries(buckets, analysis) {
  const missing = ADDITIVE.includes(analysis) ? 0 : null;
  const first = buckets.find((b) => b.value !== null && typeof b.value === 'object');
  if (first === undefined) return { labels: ['value'], series: [buckets.map((b) => b.value)] };
  if (!Array.isArray(first.value)) {
    const labels = Object.keys(first.value);
    return { labels, series: labels.map((l) => buckets.map((b) => b.value?.[l] ?? null)) };
  }
  const labels = [];
  const index = new Map();
  for (const b of buckets) for (const row of b.value) {
    const label = groupLabel(row, groupKeys(row));
    if (!index.has(label)) { index.set(label, labels.length); labels.push(label); }
  }
  const series = labels.map(() => buckets.map(() => missing));
  buckets.forEach((b, i) => {
    for (const row of b.value) series[index.get(groupLabel(row, groupKeys(row)))][i] = row.result;
  });
  return { labels, series };
}

/** uPlot's date function for the query's timezone (IANA name or offset in seconds; default UTC). */
function tzDate(timezone) {
  const U = window.uPlot;
  if (typeof timezone === 'number') return (ts) => U.tzDate(new Date((ts + timezone) * 1e3), 'UTC');
  const zone = typeof timezone === 'string' && timezone !== '' ? timezone : 'UTC';
  return (ts) => U.tzDate(new Date(ts * 1e3), zone);
}

function lineChart(container, analysis, result, view, timezone) {
  const { labels, series } = intervalSeries(result, analysis);
  const x = result.map((b) => Date.parse(b.timeframe.start) / 1000);
  const box = el('div', { class: 'chart', id: view.ids ? 'chart' : undefined });
  container.append(box);
  const width = Math.max(320, container.clientWidth - 8);
  const plot = new window.uPlot({
    width, height: view.ids ? 320 : 200, legend: { live: false }, tzDate: tzDate(timezone),
    series: [{}, ...labels.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length], width: 2,
      fill: labels.length === 1 ? `${COLORS[0]}22` : undefined, points: { show: x.length < 60 } }))],
    axes: [{}, { size: 60 }],
  }, [x, ...series], box);
  Object.assign(view, { kind: 'line', plot, labels, data: plot.data });
}

function bars(container, items, view, kind) {
  const max = Math.max(0, ...items.map((i) => (typeof i.value === 'number' ? i.value : 0)));
  const list = el('div', { class: `bars ${kind}`, id: view.ids ? 'chart' : undefined });
  for (const item of items) {
    const width = max > 0 && typeof item.value === 'number' ? (100 * item.value) / max : 0;
    list.append(el('div', { class: 'bar-row' },
      el('span', { class: 'bar-label', text: item.label }),
      el('span', { class: 'bar-track' }, el('span', { class: 'bar', style: `width:${width}%` })),
      el('span', { class: 'bar-value', text: fmt(item.value) + (item.note ? ` ${item.note}` : '') })));
  }
  container.append(list);
  Object.assign(view, { kind, labels: items.map((i) => i.label), data: items.map((i) => i.value) });
}

function table({ columns, rows }, id) {
  return el('table', { id },
    el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { text: c })))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((v) =>
      el('td', { class: typeof v === 'number' ? 'num' : '', 'data-value': JSON.stringify(v ?? null), text: fmt(v) }))))));
}

function toCsv({ columns, rows }) {
  const cell = (v) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [columns, ...rows].map((r) => r.map(cell).join(',')).join('\n') + '\n';
}

/**
 * Draws `result` of `analysis` into container, the time axis in the query's timezone; returns what
 * was drawn (the page keeps it on __tally.view).
 */
export function renderResult(container, analysis, result, timezone, compact = false) {
  container.replaceChildren();
  const view = { analysis, ids: !compact };
  const chartArea = el('div', { class: 'chart-area' });
  container.append(chartArea);
  const isBuckets = Array.isArray(result) && result[0] && typeof result[0] === 'object' && 'timeframe' in result[0];
  const isGroups = Array.isArray(result) && result[0] && typeof result[0] === 'object' && 'result' in result[0];
  if (analysis === 'funnel') {
    const first = result.result[0];
    bars(chartArea, result.result.map((n, i) => ({ label: `${i + 1}. ${result.steps?.[i]?.event_collection ?? ''}`,
      value: n, note: first ? `(${Math.round((100 * n) / first)}%)` : '' })), view, 'funnel');
  } else if (isBuckets) {
    lineChart(chartArea, analysis, result, view, timezone);
  } else if (isGroups && typeof result[0].result !== 'object') {
    const keys = groupKeys(result[0]);
    bars(chartArea, result.map((r) => ({ label: groupLabel(r, keys), value: r.result })), view, 'group');
  } else if (typeof result === 'number' || result === null) {
    chartArea.append(el('div', { class: 'big-number', id: view.ids ? 'big-number' : undefined, text: fmt(result) }));
    Object.assign(view, { kind: 'number', data: result });
  } else if (analysis === 'multi_analysis' && !Array.isArray(result)) {
    bars(chartArea, Object.entries(result).map(([label, value]) => ({ label, value })), view, 'group');
  } else {
    Object.assign(view, { kind: 'table' });
  }
  const data = tabulate(result, analysis);
  view.table = data;
  if (compact) {
    // A dashboard card: the chart, or the first rows of a table when there is no chart.
    if (view.kind === 'table') container.append(el('div', { class: 'table-wrap' }, table({ ...data, rows: data.rows.slice(0, 20) })));
    return view;
  }
  const blob = new Blob([toCsv(data)], { type: 'text/csv' });
  const tools = el('p', { class: 'tools' },
    el('a', { href: URL.createObjectURL(blob), download: `${analysis}.csv`, id: 'csv', text: 'Download CSV' }),
    ` · ${data.rows.length} row${data.rows.length === 1 ? '' : 's'}`);
  const raw = el('details', { id: 'raw' }, el('summary', { text: 'Raw JSON' }),
    el('pre', { text: JSON.stringify(result, null, 2) }));
  container.append(tools, el('div', { class: 'table-wrap' }, table(data, 'result-table')), raw);
  return view;
}
