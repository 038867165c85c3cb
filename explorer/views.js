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
/** The one number format of the page (big number, table, bars, chart axis): grouping, at most 2 decimals. */
const NUMBER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const formatNumber = (n) => NUMBER.format(n);
const fmt = (v) => v === null || v === undefined ? '—'
  : typeof v === 'number' ? formatNumber(v)
  : typeof v === 'object' ? JSON.stringify(v) : String(v);
/** "1 event", "2 events", "1,234 events". */
export const plural = (n, word) => `${formatNumber(n)} ${word}${n === 1 ? '' : 's'}`;
/** 20 distinct series colours; beyond 20 series the smallest fold into "other" (grey). */
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#65a30d',
  '#92400e', '#ea580c', '#1e3a8a', '#f472b6', '#0f766e', '#a16207', '#4c1d95', '#84cc16', '#be123c',
  '#06b6d4', '#c084fc', '#1f2937'];
const OTHER_COLOR = '#9ca3af';
const MAX_SERIES = COLORS.length;

const groupKeys = (row) => Object.keys(row).filter((k) => k !== 'result');
const groupLabel = (row, keys) => keys.map((k) => fmt(row[k])).join(' / ');

/** Rows and columns of any result; the table view and the CSV both come from this. */
function tabulate(result, analysis) {
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
function intervalSeries(buckets, analysis) {
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

/**
 * At most MAX_SERIES series: the groups with the largest totals keep their own series (in their
 * order), the rest fold into one "other" series (summed for additive analyses, the minimum or
 * maximum of those, else left empty: an average of averages would be wrong).
 */
function foldSeries(labels, series, analysis) {
  if (labels.length <= MAX_SERIES) return { labels, series, folded: 0 };
  const total = (values) => values.reduce((a, v) => a + (typeof v === 'number' ? Math.abs(v) : 0), 0);
  const ranked = labels.map((_, i) => i).sort((a, b) => total(series[b]) - total(series[a]) || a - b);
  const keep = new Set(ranked.slice(0, MAX_SERIES));
  const rest = ranked.slice(MAX_SERIES).map((i) => series[i]);
  const combine = ADDITIVE.includes(analysis) ? (vs) => vs.reduce((a, v) => a + (v ?? 0), 0)
    : analysis === 'minimum' ? (vs) => (vs.some((v) => v !== null) ? Math.min(...vs.filter((v) => v !== null)) : null)
      : analysis === 'maximum' ? (vs) => (vs.some((v) => v !== null) ? Math.max(...vs.filter((v) => v !== null)) : null)
        : () => null;
  const other = series[0].map((_, b) => combine(rest.map((s) => s[b])));
  const kept = labels.map((_, i) => i).filter((i) => keep.has(i));
  return { labels: [...kept.map((i) => labels[i]), 'other'], series: [...kept.map((i) => series[i]), other],
    folded: rest.length };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const NICE = [1, 2, 3, 4, 6, 7, 12, 14, 24, 28, 30, 48, 60, 90, 120, 180, 360];
const pad = (n) => String(n).padStart(2, '0');

/**
 * Time-axis ticks on bucket starts, which the API puts on interval boundaries in the query's
 * timezone (daily → midnight, hourly → whole hours): every k-th bucket, k a round number chosen so
 * labels do not collide, aligned to round local times (00:00, 06:00, … for hourly buckets).
 */
function bucketTicks(x, step, zoned, view) {
  const secondsOfDay = (ts) => { const d = zoned(ts); return d.getHours() * 3600 + d.getMinutes() * 60 + d.getSeconds(); };
  return (u, axisIdx, min, max) => {
    const inRange = x.filter((ts) => ts >= min && ts <= max);
    const cssWidth = u.bbox.width / (window.devicePixelRatio || 1);
    const room = Math.max(1, Math.floor(cssWidth / (step < 86400 ? 60 : 56)));
    const k = NICE.find((n) => n >= inRange.length / room) ?? Math.ceil(inRange.length / room);
    let first = 0;
    if (k > 1 && step < 86400 && 86400 % (k * step) === 0) {
      const aligned = inRange.findIndex((ts) => secondsOfDay(ts) % (k * step) === 0);
      if (aligned >= 0) first = aligned % k;
    }
    const ticks = inRange.filter((_, i) => i >= first && (i - first) % k === 0);
    view.ticks = ticks;
    return ticks;
  };
}

/** Tick labels: dates for daily and longer buckets, times (with the date where the day changes) below. */
function tickLabels(step, zoned) {
  return (u, ticks) => {
    let lastDay = '';
    return ticks.map((ts) => {
      const d = zoned(ts);
      const day = `${MONTHS[d.getMonth()]} ${d.getDate()}`;
      if (step >= 28 * 86400) return `${MONTHS[d.getMonth()]} ${d.getFullYear()}`;
      if (step >= 86400 - 3600) return day;
      const time = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
      const label = day !== lastDay ? `${time}\n${day}` : time;
      lastDay = day;
      return label;
    });
  };
}

/** The bucket that contains now: its interval has not ended, so its value is still growing. */
function partialBucket(result, now = Date.now()) {
  const index = result.findIndex((b) => Date.parse(b.timeframe.start) <= now && now < Date.parse(b.timeframe.end));
  return index < 0 ? null : index;
}

/** Shades the segment into the partial bucket's point, draws a dashed line at it and says "partial". */
function markPartial(index, view) {
  return (u) => {
    const ctx = u.ctx;
    const ratio = window.devicePixelRatio || 1;
    const at = u.valToPos(u.data[0][index], 'x', true);
    const before = index > 0 ? u.valToPos(u.data[0][index - 1], 'x', true) : at - 8 * ratio;
    const { top, height } = u.bbox;
    ctx.save();
    ctx.fillStyle = 'rgba(107, 114, 128, 0.10)';
    ctx.fillRect(before, top, at - before, height);
    ctx.setLineDash([4 * ratio, 4 * ratio]);
    ctx.strokeStyle = '#6b7280';
    ctx.lineWidth = ratio;
    ctx.beginPath();
    ctx.moveTo(at, top);
    ctx.lineTo(at, top + height);
    ctx.stroke();
    ctx.fillStyle = '#4b5563';
    ctx.font = `${11 * ratio}px system-ui, sans-serif`;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'top';
    ctx.fillText('partial', at - 4 * ratio, top + 4 * ratio);
    ctx.restore();
    view.partialDrawn = true;
  };
}

function lineChart(container, analysis, result, view, timezone) {
  const all = intervalSeries(result, analysis);
  const { labels, series, folded } = foldSeries(all.labels, all.series, analysis);
  const x = result.map((b) => Date.parse(b.timeframe.start) / 1000);
  const step = (Date.parse(result[0].timeframe.end) - Date.parse(result[0].timeframe.start)) / 1000;
  const zoned = tzDate(timezone);
  const partial = partialBucket(result);
  const box = el('div', { class: 'chart', id: view.ids ? 'chart' : undefined });
  container.append(box);
  const width = Math.max(280, container.clientWidth - 8);
  const colors = labels.map((label, i) => (folded > 0 && i === labels.length - 1 ? OTHER_COLOR : COLORS[i]));
  const plot = new window.uPlot({
    width, height: view.ids ? 320 : 200, legend: { live: false }, tzDate: zoned,
    series: [{}, ...labels.map((label, i) => ({ label, stroke: colors[i], width: 2,
      fill: labels.length === 1 ? `${COLORS[0]}22` : undefined, points: { show: x.length < 60 } }))],
    axes: [{ splits: bucketTicks(x, step, zoned, view), values: tickLabels(step, zoned), size: step < 86400 - 3600 ? 56 : 40 },
      { size: 60, values: (u, ticks) => ticks.map(formatNumber) }],
    hooks: partial === null ? {} : { draw: [markPartial(partial, view)] },
  }, [x, ...series], box);
  Object.assign(view, { kind: 'line', plot, labels, colors, folded, partial, data: plot.data });
  if (partial !== null) {
    container.append(el('p', { class: 'partial-note', id: view.ids ? 'partial-note' : undefined,
      text: `partial: the bucket from ${result[partial].timeframe.start} has not ended yet, so its values are still growing` }));
  }
  if (folded > 0) {
    container.append(el('p', { class: 'partial-note',
      text: `"other" combines the ${plural(folded, 'smallest group')} (the table lists every group)` }));
  }
}

/** Fits the drawn chart to its container's width again (the window was resized). */
export function resizeChart(view, container) {
  if (!view.plot) return;
  const width = Math.max(280, container.clientWidth - 8);
  if (width !== view.plot.width) view.plot.setSize({ width, height: view.plot.height });
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

function table({ columns, rows }, id, partial = null) {
  return el('table', { id },
    el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { text: c })))),
    el('tbody', {}, ...rows.map((r, i) => el('tr', i === partial
      ? { class: 'partial', title: 'partial: this interval has not ended yet' } : {}, ...r.map((v) =>
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
export function renderResult(container, analysis, result, timezone, compact = false, { direction } = {}) {
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
    const items = result.map((r) => ({ label: groupLabel(r, keys), value: r.result }));
    // direction: the query has no order_by (the API lists groups by name), so the bars are sorted
    // by their value as the Direction control says; with order_by they keep the API's order.
    if (direction === 'ASC' || direction === 'DESC') {
      const sign = direction === 'ASC' ? 1 : -1;
      const num = (v) => (typeof v === 'number' ? v : null);
      const rank = (a, b) => (num(a.value) === null || num(b.value) === null
        ? (num(a.value) === null) - (num(b.value) === null) : sign * (a.value - b.value));
      items.sort((a, b) => rank(a, b) || a.label.localeCompare(b.label));
    }
    bars(chartArea, items, view, 'group');
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
  container.append(tools, el('div', { class: 'table-wrap' }, table(data, 'result-table', view.partial ?? null)), raw);
  return view;
}
