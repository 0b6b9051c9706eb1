// Search across the Snapshot's trajectories: text in messages, reasoning,
// observations, tool arguments and results. Each hit links to its step.
import * as api from './api.js';
import { h, highlight } from './dom.js';
import { errorBox, Selection } from './ui.js';

export const title = 'Search';

export async function render(root, app) {
  const p = app.params();
  const q = p.get('q') || '';
  const input = h('input', { type: 'search', name: 'q', value: q, size: 48, placeholder: 'text in messages, tool arguments and results', 'aria-label': 'search text', id: 'search-q' });
  input.dataset.slash = '';
  const form = h('form', { class: 'toolbar', role: 'search' }, h('label', { class: 'grow' }, 'search', input), h('button', { type: 'submit', class: 'primary' }, 'Search'));
  form.addEventListener('submit', (e) => { e.preventDefault(); app.go('/search', { dataset: p.get('dataset'), q: input.value.trim() }); });
  app.keys.slash = () => input.focus();
  root.append(h('h1', null, 'Search'), form);
  if (!q) { input.focus(); return; }
  const status = h('p', { class: 'muted', role: 'status' }, 'Searching…');
  const list = h('ul', { class: 'hit-list', id: 'hits', 'aria-label': 'search hits' });
  root.append(status, list);
  const rows = [];
  const sel = new Selection(app, { onOpen: (i, li) => li.querySelector('a').click() });
  let cursor = '';
  const more = h('button', { type: 'button', hidden: true }, 'More hits');
  root.appendChild(h('div', { class: 'pager' }, more));
  const load = async () => {
    let r;
    try {
      r = await api.get('search', { q, dataset: app.dataset(), limit: 50, cursor });
    } catch (e) {
      status.replaceWith(errorBox(e));
      return;
    }
    for (const hit of r.hits) {
      const k = hit.key;
      const li = h('li', null,
        h('a', { href: app.storylineHref(k, { step: hit.step_index, find: q }), 'data-nav': true, class: 'hit-link' },
          k._file_, ' · ', k.session_id, ' · step ', String(hit.step_index)),
        ' ', h('span', { class: 'chip' }, hit.field),
        h('div', { class: 'snippet' }, highlight(hit.snippet || '', q)));
      list.appendChild(li);
      rows.push(li);
    }
    sel.setRows(rows);
    status.textContent = rows.length ? `${rows.length}${r.next_cursor ? '+' : ''} hits` : 'No hits.';
    cursor = r.next_cursor;
    more.hidden = !cursor;
  };
  more.addEventListener('click', load);
  await load();
}
