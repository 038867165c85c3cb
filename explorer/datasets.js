// Cached datasets (docs/api.md §10) in the sidebar: listed with their status; opening one asks for
// an index_by value and a timeframe and draws the dataset's precomputed buckets (no rate limit).

export function createDatasets({ api, list, onOpen }) {
  let datasets = [];
  const render = () => {
    list.replaceChildren(...datasets.map((d) => {
      const item = document.createElement('li');
      const link = document.createElement('a');
      link.href = '#';
      link.textContent = d.display_name || d.dataset_name;
      link.dataset.dataset = d.dataset_name;
      link.onclick = (event) => { event.preventDefault(); onOpen(d); };
      const note = document.createElement('span');
      note.className = 'count';
      note.textContent = ` ${d.query?.analysis_type ?? ''} by ${[].concat(d.index_by).join(', ')} · ${d.status ?? ''}`;
      item.append(link, note);
      return item;
    }));
    if (datasets.length === 0) list.innerHTML = '<li class="count">none yet</li>';
  };
  return {
    async load() {
      try { datasets = (await api('GET', '/datasets')).datasets ?? []; } catch { datasets = []; }
      render();
    },
    /** The dataset's buckets for one index value (a string, or JSON for several index_by). */
    async results(dataset, indexBy, timeframe) {
      const search = new URLSearchParams({ index_by: indexBy, timeframe });
      return api('GET', `/datasets/${encodeURIComponent(dataset.dataset_name)}/results?${search}`);
    },
  };
}
