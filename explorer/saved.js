// Saved and cached queries (docs/api.md §9) in the sidebar: listed with the Read Key, opened into
// the builder with their stored result (a cached one from the server's cache, no rate limit), and
// saved from the builder with the Master Key (a Read Key gets the API's 403 message).

export function createSaved({ api, list, onOpen }) {
  let saved = [];

  const render = () => {
    list.replaceChildren(...saved.map((s) => {
      const item = document.createElement('li');
      const link = document.createElement('a');
      link.href = `/explorer?saved=${encodeURIComponent(s.query_name)}`;
      link.textContent = s.query_name;
      link.dataset.saved = s.query_name;
      link.onclick = (event) => { event.preventDefault(); onOpen(s.query_name, true); };
      const note = document.createElement('span');
      note.className = 'count';
      note.textContent = ` ${s.query?.analysis_type ?? ''}${s.refresh_rate > 0 ? ` · cached every ${s.refresh_rate / 3600} h` : ''}`;
      item.append(link, note);
      return item;
    }));
    if (saved.length === 0) list.innerHTML = '<li class="count">none yet</li>';
  };

  return {
    async load() {
      try { saved = await api('GET', '/queries/saved'); } catch { saved = []; }
      render();
    },
    /** The stored definition and result of one saved query: {analysis, params, result, info}. */
    async open(name) {
      const answer = await api('GET', `/queries/saved/${encodeURIComponent(name)}/result`);
      const { analysis_type: analysis, ...params } = answer.query;
      return { analysis, params, answer };
    },
    async save(name, analysis, params, refreshRate) {
      await api('PUT', `/queries/saved/${encodeURIComponent(name)}`,
        { query: { analysis_type: analysis, ...params }, refresh_rate: refreshRate });
      await this.load();
    },
  };
}
