// Catalog: the Datasets of the pinned Snapshot, their sources by status
// and format with their errors, and Refresh.
import * as api from './api.js';
import { h, clear } from './dom.js';
import { int, age, time, bytes } from './fmt.js';
import { errorBox, table } from './ui.js';

export const title = 'Catalog';

function counts(obj) {
  const entries = Object.entries(obj || {}).sort((a, b) => b[1] - a[1]);
  return h('span', { class: 'chips' }, entries.map(([k, v]) => h('span', { class: 'chip status-' + k }, k + ' ' + int(v))));
}

export async function render(root, app) {
  const c = app.catalog;
  const last = c.refresh && c.refresh.last_refresh;
  const status = h('div', { class: 'report', role: 'status', 'aria-live': 'polite' });
  // A Directory answers each request over the Datasets of the moment:
  // there is no Snapshot of the server's to rebuild.
  const refresh = h('button', { type: 'button', class: 'primary', id: 'refresh', hidden: app.directory }, 'Refresh');
  refresh.addEventListener('click', async () => {
    refresh.disabled = true;
    clear(status).appendChild(h('span', { class: 'muted' }, 'Refreshing: discovering and pinning sources…'));
    try {
      const r = await api.post('catalog', undefined, { quiet: true });
      await app.adopt();
      const rep = r.refreshed || {};
      app.go('/', { dataset: app.params().get('dataset') }, { replace: true });
      app.notice(`Refresh ${rep.outcome || 'done'} in ${int(r.refresh_ms)} ms: snapshot ${r.snapshot_id.slice(0, 12)}` +
        (rep.reused_sources ? `, ${int(rep.reused_sources)} sources reused` : ''));
    } catch (e) {
      clear(status).appendChild(errorBox(e));
      refresh.disabled = false;
    }
  });
  const selected = app.dataset();
  const datasets = selected ? c.datasets.filter((d) => d.name === selected) : c.datasets;
  root.appendChild(h('section', { 'aria-labelledby': 'cat-h' },
    h('div', { class: 'toolbar' },
      h('h1', { id: 'cat-h', class: 'grow' }, 'Catalog'),
      refresh),
    h('div', { class: 'cards' },
      card('snapshot', c.snapshot_id.slice(0, 16), c.snapshot_id),
      card('built', age(c.created_at), time(c.created_at)),
      card('generation', int(c.generation)),
      card('Datasets', int(c.datasets.length)),
      card('sources', int(c.datasets.reduce((n, d) => n + d.sources, 0))),
      card('errors', c.error_policy, 'error policy'),
      last ? card('last refresh', last.outcome, `${last.trigger}, ${time(last.started_at)}${last.error ? ': ' + last.error : ''}`) : null),
    status));
  if (app.directory && !c.datasets.length) {
    root.appendChild(h('p', { id: 'no-datasets' }, 'No Dataset is public on this Directory. Enter your keys in ',
      h('a', { href: '/settings', 'data-nav': true }, 'Settings → Keys'), ' to see yours.'));
  }
  for (const d of datasets) root.appendChild(datasetSection(d, app));
}

function card(k, v, titleText) {
  return h('div', { class: 'card', title: titleText || null }, h('div', { class: 'k' }, k), h('div', { class: 'v' }, v));
}

function datasetSection(d, app) {
  const sec = h('section', { class: 'dataset', 'aria-label': 'Dataset ' + d.name },
    h('h2', null, d.name, ' ', h('span', { class: 'muted mono' }, d.uri)),
    h('div', { class: 'links' },
      h('a', { href: app.href('/runs', { dataset: d.name }), 'data-nav': true }, 'Runs'),
      h('a', { href: app.href('/sql', { dataset: d.name, sql: 'SELECT * FROM ' + ident(d.alias) + '.sources LIMIT 100' }), 'data-nav': true }, 'sources in SQL')),
    h('dl', { class: 'kv' },
      h('dt', null, 'sources'), h('dd', null, int(d.sources)),
      h('dt', null, 'by status'), h('dd', null, counts(d.by_status)),
      h('dt', null, 'by format'), h('dd', null, counts(d.by_format)),
      h('dt', null, 'by kind'), h('dd', null, counts(d.by_kind))));
  if (d.errors.length) {
    sec.appendChild(h('h3', null, 'Source errors'));
    sec.appendChild(table([
      { label: '_file_', cls: 'cell', render: (e) => e._file_ },
      { label: 'error', render: (e) => h('span', { class: 'mono' }, e.error) },
    ], d.errors));
  }
  const list = h('div');
  sec.appendChild(h('h3', null, 'Sources'));
  sec.appendChild(list);
  loadSources(list, d.name, '');
  return sec;
}

// ident quotes a SQL identifier.
export function ident(s) { return '"' + String(s).replace(/"/g, '""') + '"'; }

async function loadSources(el, dataset, token) {
  let r;
  try {
    r = await api.get('sources', { dataset, page_size: 50, page_token: token });
  } catch (e) {
    el.appendChild(errorBox(e));
    return;
  }
  const t = table([
    { label: '_file_', cls: 'cell', render: (s) => s._file_ },
    { label: 'kind', render: (s) => s.source_type },
    { label: 'status', render: (s) => h('span', { class: 'status-' + s.status }, s.status) },
    { label: 'format', render: (s) => s.format || h('span', { class: 'muted' }, 'not read yet') },
    { label: 'size', num: true, render: (s) => bytes(s.size_bytes) },
    { label: 'error', render: (s) => (s.error ? h('span', { class: 'mono status-error' }, s.error) : '') },
  ], r.sources);
  el.appendChild(t);
  if (r.next_page_token) {
    const more = h('button', { type: 'button' }, 'More sources');
    more.addEventListener('click', () => { more.remove(); loadSources(el, dataset, r.next_page_token); });
    el.appendChild(h('div', { class: 'pager' }, more));
  }
}
