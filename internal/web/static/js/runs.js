// Runs: server-side filters, sort and keyset paging over the runs of the
// pinned Snapshot. Filters, sort and the page cursor are in the URL; the
// cursors of earlier pages ride in history.state, so Back, Previous and a
// reload all land on the same page.
import * as api from './api.js';
import { h, clear } from './dom.js';
import { int, usd, duration, time } from './fmt.js';
import { errorBox, Selection } from './ui.js';
import { ident } from './catalog.js';
import { label } from './text.js';

export const title = 'Runs';

const FILTERS = [
  ['q', 'text', 'file, session, agent, model…'],
  ['agent', 'agent', ''], ['model', 'model', ''], ['status', 'status', ''], ['format', 'format', ''],
  ['since', 'since (UTC)', ''], ['until', 'until (UTC)', ''],
];

// SORTS are the sort keys with the labels the menu shows.
const SORTS = [
  ['started_at', 'start time'], ['ended_at', 'end time'], ['duration', 'duration'], ['step_count', 'steps'],
  ['tool_call_count', 'tool calls'], ['prompt_tokens', 'prompt tokens'], ['completion_tokens', 'completion tokens'],
  ['cost_usd', 'cost'], ['reward', 'reward'], ['agent_name', 'agent'], ['agent_model_name', 'model'], ['status', 'status'],
  ['source_format', 'format'], ['_file_', 'file'], ['session_id', 'session'],
];
const TEXT_SORTS = new Set(['agent_name', 'agent_model_name', 'status', 'source_format', '_file_', 'session_id']);

// sortLabel is a sort's menu label: "steps, most first", "file, Z–A".
function sortLabel(key, desc) {
  const name = SORTS.find(([k]) => k === key)[1];
  if (TEXT_SORTS.has(key)) return name + (desc ? ', Z–A' : ', A–Z');
  if (key === 'started_at' || key === 'ended_at') return name + (desc ? ', newest first' : ', oldest first');
  return name + (desc ? ', most first' : ', least first');
}

// task is what a run was asked to do, in the words of its producer: an
// evaluation's sample id and epoch, a benchmark's task or instance.
function task(r) {
  let e = r.extra;
  if (typeof e === 'string') { try { e = JSON.parse(e); } catch { e = null; } }
  if (!e || typeof e !== 'object') return null;
  const pick = e.task ?? e.instance_id ?? (e.instance && e.instance.instance_id) ?? e.task_id ?? e.problem_id;
  if (pick != null && typeof pick !== 'object') return String(pick);
  if (e.id != null && typeof e.id !== 'object') return 'sample ' + e.id + (e.epoch != null ? ' · epoch ' + e.epoch : '');
  return null;
}

// Columns: [label, sort key or null, numeric, render, class].
const COLUMNS = [
  ['started', 'started_at', false, (r) => time(r.started_at).replace(/:\d\dZ$/, 'Z'), 'nowrap'],
  ['Storyline', '_file_', false, (r, app) => [h('a', { href: app.storylineHref({ dataset: r.dataset, _file_: r._file_, session_id: r.session_id }), 'data-nav': true, class: 'open', title: r._file_ + ' · ' + r.session_id },
    r.__child ? h('span', { class: 'muted', 'aria-label': 'subagent' }, '↳ ') : null,
    h('span', { class: 'mono' }, label(r._file_)), ' ', h('span', { class: 'muted mono' }, label(r.session_id))),
    r.parent_session_id && !r.__child ? [' ', h('a', { href: app.storylineHref({ dataset: r.dataset, _file_: r._file_, session_id: r.parent_session_id }), 'data-nav': true, class: 'chip', title: 'the parent agent' }, 'subagent of ', label(r.parent_session_id))] : null,
    r.subagent_refs && r.subagent_refs.length ? [' ', h('span', { class: 'chip', title: 'subagents started by this run' }, r.subagent_refs.length + ' subagent' + (r.subagent_refs.length > 1 ? 's' : ''))] : null], 'story-cell'],
  ['task', null, false, (r) => { const t = task(r); return t ? h('span', { title: t }, label(t)) : h('span', { class: 'muted' }, '—'); }, 'clip'],
  ['agent · model', 'agent_name', false, (r) => [label(r.agent_name || '—'), h('br'), h('span', { class: 'muted' }, label(r.agent_model_name || '—'))], 'clip'],
  ['format', 'source_format', false, (r) => r.source_format, 'clip'],
  ['status', 'status', false, (r) => h('span', { class: 'status-' + r.status }, r.status), 'nowrap'],
  ['reward', 'reward', true, (r) => (r.reward === null || r.reward === undefined ? '—' : String(+r.reward.toFixed(4)))],
  ['steps', 'step_count', true, (r) => int(r.step_count)],
  ['calls', 'tool_call_count', true, (r) => int(r.tool_call_count)],
  ['tokens ↑ / ↓', 'prompt_tokens', true, (r) => [int(r.prompt_tokens), h('br'), h('span', { class: 'muted' }, int(r.completion_tokens))]],
  ['cost', 'cost_usd', true, (r) => usd(r.cost_usd)],
  ['duration', 'duration', true, (r) => duration(r.duration_ms)],
];

// DATASET_COLUMN is shown when the list covers every Dataset.
const DATASET_COLUMN = ['Dataset', null, false, (r) => label(r.dataset), 'clip'];

// grouped orders a page so that each subagent follows its parent (when
// the parent is on the page), marking it as a child.
function grouped(runs) {
  const key = (r, sid) => JSON.stringify([r.dataset, r._file_, sid]);
  const here = new Set(runs.map((r) => key(r, r.session_id)));
  const kids = new Map();
  const top = [];
  for (const r of runs) {
    const pk = r.parent_session_id ? key(r, r.parent_session_id) : null;
    if (pk && here.has(pk)) { if (!kids.has(pk)) kids.set(pk, []); kids.get(pk).push({ ...r, __child: true }); } else top.push(r);
  }
  const out = [];
  const walk = (r, depth) => {
    out.push(r);
    if (depth < 8) for (const c of kids.get(key(r, r.session_id)) || []) walk(c, depth + 1);
  };
  top.forEach((r) => walk(r, 0));
  return out.length === runs.length ? out : runs; // a cycle: keep the server's order
}

export async function render(root, app) {
  const p = app.params();
  const dataset = app.dataset();
  const sort = p.get('sort') || '-started_at';
  const filters = {};
  for (const [k] of FILTERS) if (p.get(k)) filters[k] = p.get(k);
  const cursor = p.get('cursor') || '';
  const limit = p.get('limit') || '50';
  const stack = (history.state && history.state.cursors) || [];
  const picked = new Set(p.getAll('pick'));

  const base = { dataset: p.get('dataset'), ...filters, sort: sort === '-started_at' ? '' : sort, limit: limit === '50' ? '' : limit, group: p.get('group') || '' };
  const form = h('form', { class: 'toolbar', role: 'search', 'aria-label': 'Filter runs' });
  const inputs = {};
  for (const [k, label, ph] of FILTERS) {
    const time = k === 'since' || k === 'until';
    const input = time
      ? h('input', { name: k, type: 'datetime-local', step: 1, value: toLocalInput(filters[k]), 'aria-label': 'started ' + (k === 'since' ? 'at or after' : 'before') + ' (UTC)' })
      : h('input', { name: k, value: filters[k] || '', placeholder: ph, list: 'facet-' + k, size: k === 'q' ? 24 : 12, 'aria-label': 'filter ' + label });
    if (k === 'q') input.dataset.slash = '';
    inputs[k] = input;
    form.appendChild(h('label', null, label, input));
  }
  const sortSel = h('select', { name: 'sort', 'aria-label': 'sort by' },
    SORTS.flatMap(([s]) => [h('option', { value: '-' + s }, sortLabel(s, true)), h('option', { value: s }, sortLabel(s, false))]));
  const group = p.get('group') !== '0';
  const groupBox = h('input', { type: 'checkbox', id: 'group-subagents', checked: group });
  groupBox.addEventListener('change', () => app.go('/runs', { ...base, cursor, group: groupBox.checked ? '' : '0', pick: [...picked] }, { replace: true, state: history.state }));
  sortSel.value = sort;
  const limitSel = h('select', { name: 'limit', 'aria-label': 'rows per page' }, ['25', '50', '100', '200', '500'].map((n) => h('option', { value: n }, n)));
  limitSel.value = limit;
  form.append(h('label', null, 'sort', sortSel), h('label', null, 'per page', limitSel), h('label', { class: 'inline', title: 'show each subagent under its parent' }, groupBox, ' group subagents'),
    h('button', { type: 'submit', class: 'primary' }, 'Apply'),
    h('a', { href: app.href('/runs', { dataset: p.get('dataset') }), 'data-nav': true }, 'Clear'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = { dataset: p.get('dataset') };
    for (const [k] of FILTERS) next[k] = k === 'since' || k === 'until' ? fromLocalInput(inputs[k].value) : inputs[k].value.trim();
    next.sort = sortSel.value === '-started_at' ? '' : sortSel.value;
    next.limit = limitSel.value === '50' ? '' : limitSel.value;
    app.go('/runs', next);
  });
  sortSel.addEventListener('change', () => form.requestSubmit());
  limitSel.addEventListener('change', () => form.requestSubmit());
  app.keys.slash = () => inputs.q.focus();

  const summary = h('div', { class: 'pager', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), h('span', { class: 'muted' }, ' Listing the runs…'));
  const compareBar = h('div', { class: 'pager' });
  const tableBox = h('div');
  root.append(h('h1', null, 'Runs', dataset ? h('span', { class: 'muted' }, ' · ' + dataset) : ' · all Datasets'), form, compareBar, summary, tableBox);
  const started = performance.now();
  let r;
  try {
    r = await api.get('runs', { dataset, ...filters, sort, limit, cursor });
  } catch (e) {
    clear(summary);
    if (e.code === 'stale_page_token') {
      tableBox.appendChild(errorBox(new Error('This page belongs to another snapshot; the listing starts again on its first page.')));
      tableBox.appendChild(h('a', { href: app.href('/runs', base), 'data-nav': true }, 'First page'));
      return;
    }
    tableBox.appendChild(errorBox(e));
    return;
  }
  const ms = performance.now() - started;
  const pageNo = stack.length + 1;
  const first = stack.length * +limit + 1;
  clear(summary).append(
    h('span', null, r.runs.length ? `runs ${int(first)}–${int(first + r.runs.length - 1)} of ${int(r.total)}` : `no runs (of ${int(r.total)} matching)`),
    h('span', { class: 'muted', id: 'runs-ms' }, `page ${pageNo} in ${Math.round(ms)} ms`));
  const prev = h('button', { type: 'button', disabled: !cursor }, '← Previous');
  const next = h('button', { type: 'button', disabled: !r.next_cursor }, 'Next →');
  const firstBtn = h('button', { type: 'button', disabled: !cursor }, 'First');
  prev.addEventListener('click', () => {
    const s = stack.slice(0, -1);
    app.go('/runs', { ...base, cursor: stack[stack.length - 1] || '', pick: [...picked] }, { state: { cursors: s } });
  });
  next.addEventListener('click', () => app.go('/runs', { ...base, cursor: r.next_cursor, pick: [...picked] }, { state: { cursors: [...stack, cursor] } }));
  firstBtn.addEventListener('click', () => app.go('/runs', { ...base, pick: [...picked] }));
  summary.append(firstBtn, prev, next);

  const keyOf = (x) => JSON.stringify([x.dataset, x._file_, x.session_id]);
  const drawCompare = () => {
    clear(compareBar);
    const keys = [...picked].map((s) => JSON.parse(s));
    if (!keys.length) { compareBar.appendChild(h('span', { class: 'muted' }, 'Tick two runs to compare them.')); return; }
    compareBar.appendChild(h('span', null, `${keys.length} picked for Compare`));
    if (keys.length === 2) {
      compareBar.appendChild(h('a', { class: 'button', id: 'compare-picked', 'data-nav': true, href: app.href('/compare', compareParams(keys[0], keys[1])) }, 'Compare the two'));
    }
    const clearBtn = h('button', { type: 'button' }, 'Clear picks');
    clearBtn.addEventListener('click', () => { picked.clear(); syncPicks(); });
    compareBar.appendChild(clearBtn);
  };
  const syncPicks = () => { app.replace({ ...base, cursor, pick: [...picked] }); drawCompare(); for (const cb of tableBox.querySelectorAll('input[type=checkbox]')) cb.checked = picked.has(cb.value); };
  drawCompare();

  const columns = dataset ? COLUMNS : [COLUMNS[0], DATASET_COLUMN, ...COLUMNS.slice(1)];
  const thead = h('tr', null, h('th', { scope: 'col' }, h('span', { class: 'muted' }, 'cmp')),
    columns.map(([text, key, num]) => {
      if (!key) return h('th', { scope: 'col' }, text);
      const cur = sort.replace(/^-/, '') === key;
      const b = h('button', { type: 'button', class: 'sort', title: 'sort by ' + sortLabel(key, true).split(',')[0] }, text + (cur ? (sort.startsWith('-') ? ' ↓' : ' ↑') : ''));
      b.addEventListener('click', () => app.go('/runs', { ...base, sort: cur && sort.startsWith('-') ? key : '-' + key }));
      return h('th', { scope: 'col', class: num ? 'num' : null, 'aria-sort': cur ? (sort.startsWith('-') ? 'descending' : 'ascending') : null }, b);
    }));
  const tbody = h('tbody');
  const trs = (group ? grouped(r.runs) : r.runs).map((run) => {
    const k = keyOf(run);
    const cb = h('input', { type: 'checkbox', value: k, checked: picked.has(k), 'aria-label': 'pick for compare' });
    cb.addEventListener('change', () => {
      if (cb.checked) { picked.add(k); if (picked.size > 2) picked.delete([...picked][0]); } else picked.delete(k);
      syncPicks();
    });
    return h('tr', { class: run.__child ? 'child' : null }, h('td', null, cb), columns.map(([, , num, fn, cls]) => h('td', { class: num ? 'num' : cls || null }, fn(run, app))));
  });
  tbody.append(...trs);
  tableBox.appendChild(h('table', { class: 'grid compact', id: 'runs-table', 'aria-label': 'runs' }, h('thead', null, thead), tbody));
  // Back to this page lands where the reader was.
  if (history.state && history.state.scroll) root.scrollTop = history.state.scroll;
  const sel = new Selection(app, { onOpen: (i) => trs[i].querySelector('a.open').click() });
  sel.setRows(trs);
  facets(app, dataset, form); // after the page: suggestions must not delay it
}

// The time filters are UTC: a datetime-local box shows an RFC 3339 time
// without its zone, and gives it back with Z.
function toLocalInput(v) {
  if (!v) return '';
  const d = new Date(v);
  return isNaN(d) ? '' : d.toISOString().slice(0, 19);
}

function fromLocalInput(v) {
  if (!v) return '';
  return (v.length === 16 ? v + ':00' : v.slice(0, 19)) + 'Z';
}

function compareParams(a, b) {
  return { a_dataset: a[0], a_file: a[1], a_session_id: a[2], b_dataset: b[0], b_file: b[1], b_session_id: b[2] };
}

// facetCache holds the suggestions of each Snapshot and Dataset: paging
// must not scan every run again.
const facetCache = new Map();

// facets fills the filter inputs' suggestions with the values present.
async function facets(app, dataset, form) {
  const ds = dataset ? [app.datasetInfo(dataset)].filter(Boolean) : app.catalog.datasets;
  if (!ds.length) return;
  const cacheKey = app.pinned + '\x00' + dataset;
  if (!facetCache.has(cacheKey)) facetCache.set(cacheKey, facetRows(ds));
  const rows = await facetCache.get(cacheKey);
  if (!rows) { facetCache.delete(cacheKey); return; }
  const lists = {};
  for (const [f, v, n] of rows) (lists[f] = lists[f] || []).push(h('option', { value: v }, `${n} runs`));
  for (const f of ['agent', 'model', 'status', 'format']) form.appendChild(h('datalist', { id: 'facet-' + f }, lists[f] || []));
}

async function facetRows(ds) {
  const cols = { agent: 'agent_name', model: 'agent_model_name', status: 'status', format: 'source_format' };
  const parts = [];
  for (const d of ds) {
    for (const [f, col] of Object.entries(cols)) {
      parts.push(`SELECT '${f}' AS f, ${col} AS v, count(*) AS n FROM ${ident(d.alias)}.runs WHERE ${col} IS NOT NULL GROUP BY 2`);
    }
  }
  try {
    const r = await api.post('query', { sql: `SELECT f, v, sum(n) AS n FROM (${parts.join(' UNION ALL ')}) GROUP BY 1, 2 ORDER BY 1, 3 DESC LIMIT 2000`, max_rows: 2000 });
    return r.rows;
  } catch { return null; } // suggestions only
}
