// The dashboard: queries pinned from the query view (kept in localStorage per project), each drawn
// in a card from the API's answer and refreshed on a timer while the dashboard is shown.

const STORE = 'tally.explorer.pins';

function load(projectId) {
  try { return JSON.parse(localStorage.getItem(STORE) ?? '{}')[projectId] ?? []; } catch { return []; }
}

function save(projectId, pins) {
  let all = {};
  try { all = JSON.parse(localStorage.getItem(STORE) ?? '{}'); } catch { /* a corrupt store is replaced */ }
  all[projectId] = pins;
  localStorage.setItem(STORE, JSON.stringify(all));
}

const title = ({ analysis, params }) => [analysis, params.event_collection, params.target_property,
  params.group_by && `by ${[].concat(params.group_by).join(', ')}`, params.interval,
  typeof params.timeframe === 'string' ? params.timeframe : 'absolute'].filter(Boolean).join(' · ');

/** Runs one pinned query into its card; the card's drawn data is kept on tally.cards[index]. */
async function refreshCard(card, pin, index, { api, tally, render }) {
  const body = card.querySelector('.card-body');
  try {
    const answer = await api('POST', `/queries/${pin.analysis}`, pin.params);
    const result = pin.analysis === 'funnel' ? answer : answer.result;
    const view = render(body, pin.analysis, result, pin.params.timezone, true,
      { direction: pin.params.order_by ? undefined : 'DESC' });
    tally.cards[index] = { kind: view.kind, labels: view.labels,
      data: view.plot ? view.plot.data.map((column) => Array.from(column)) : view.data, table: view.table };
  } catch (error) {
    body.replaceChildren(Object.assign(document.createElement('p'), { className: 'card-error',
      textContent: `${error.error_code ?? 'Error'}: ${error.message}` }));
    tally.cards[index] = { error: error.error_code };
  }
}

export function createDashboard({ projectId, api, tally, render }) {
  const cards = document.querySelector('#cards');
  const refresh = document.querySelector('#refresh');
  let pins = load(projectId);
  let timer = null;
  let shown = false;
  tally.cards = [];
  tally.refreshes = 0;

  const draw = () => {
    document.querySelector('#no-pins').hidden = pins.length > 0;
    cards.replaceChildren(...pins.map((pin, index) => {
      const card = document.createElement('article');
      card.className = 'card';
      card.innerHTML = '<header><a></a><button type="button" title="unpin">×</button></header><div class="card-body"></div>';
      const link = card.querySelector('a');
      link.textContent = title(pin);
      link.href = `/explorer?${new URLSearchParams({ analysis: pin.analysis, query: JSON.stringify(pin.params) })}`;
      card.querySelector('button').onclick = () => { pins.splice(index, 1); save(projectId, pins); draw(); void refreshAll(); };
      return card;
    }));
  };
  const refreshAll = async () => {
    const all = [...cards.children];
    tally.cards = [];
    await Promise.all(all.map((card, index) => refreshCard(card, pins[index], index, { api, tally, render })));
    tally.refreshes++;
    document.querySelector('#refreshed').textContent = `updated ${new Date().toLocaleTimeString()}`;
  };
  const schedule = () => {
    clearInterval(timer);
    timer = null;
    const seconds = Number(refresh.value);
    if (shown && seconds > 0) timer = setInterval(() => void refreshAll(), seconds * 1000);
  };
  refresh.onchange = () => { localStorage.setItem(`${STORE}.refresh`, refresh.value); schedule(); };
  refresh.value = localStorage.getItem(`${STORE}.refresh`) ?? refresh.value;
  document.querySelector('#refresh-now').onclick = () => void refreshAll();
  draw();

  return {
    pin(analysis, params) {
      pins.push({ analysis, params });
      save(projectId, pins);
      draw();
      if (shown) void refreshAll();
    },
    /** Refreshes at once and on the timer while shown; a hidden dashboard sends no queries. */
    show(visible) {
      shown = visible;
      if (visible) void refreshAll();
      schedule();
    },
    stop() { shown = false; schedule(); },
  };
}
