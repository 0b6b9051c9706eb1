// SQL console: read-only DuckDB SQL over the pinned Snapshot. Ctrl/Cmd+
// Enter runs; errors show inline at their position when DuckDB gives one;
// the pruning and routing report says what was read; rows that carry a
// Storyline's identity link to it. URL: sql= (it runs on load).
import * as api from './api.js';
import { h, clear, download } from './dom.js';
import { int } from './fmt.js';
import { errorBox, cell } from './ui.js';

export const title = 'SQL';

const PAGE = 100;
const EXAMPLE = 'SELECT _file_, session_id, agent_name, step_count, tool_call_count, prompt_tokens, status\nFROM runs\nORDER BY started_at DESC\nLIMIT 100';

export async function render(root, app) {
  const p = app.params();
  const text = p.get('sql') || '';
  const maxRows = p.get('max_rows') || '1000';
  const editor = h('textarea', { class: 'sql-editor', id: 'sql-editor', spellcheck: 'false', 'aria-label': 'SQL', value: text || EXAMPLE });
  editor.dataset.slash = '';
  const rowsSel = h('select', { 'aria-label': 'most rows' }, ['100', '1000', '10000'].map((n) => h('option', { value: n }, n + ' rows')));
  rowsSel.value = ['100', '1000', '10000'].includes(maxRows) ? maxRows : '1000';
  const run = h('button', { type: 'button', class: 'primary', id: 'sql-run', title: 'Ctrl/⌘+Enter' }, 'Run');
  const csv = h('button', { type: 'button', disabled: true }, 'Download CSV');
  const json = h('button', { type: 'button', disabled: true }, 'Download JSON');
  const out = h('div', { id: 'sql-out' });
  const tables = h('p', { class: 'muted' }, 'Relations: sources, runs, steps, tool_calls, events, projections',
    app.catalog.datasets.length > 1 ? ' — qualify them by Dataset: ' + app.catalog.datasets.map((d) => d.alias + '.runs').join(', ') : '', '. Read-only: one SELECT, VALUES, DESCRIBE or EXPLAIN.');
  root.append(h('h1', null, 'SQL'), tables, editor, h('div', { class: 'toolbar' }, run, rowsSel, csv, json, h('span', { class: 'muted' }, 'Ctrl/⌘+Enter runs')), out);
  app.keys.slash = () => editor.focus();

  const go = () => app.go('/sql', { dataset: p.get('dataset'), sql: editor.value, max_rows: rowsSel.value === '1000' ? '' : rowsSel.value });
  run.addEventListener('click', go);
  editor.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); go(); }
    if (e.key === 'Tab' && !e.shiftKey) { // indent instead of leaving the editor
      e.preventDefault();
      editor.setRangeText('  ', editor.selectionStart, editor.selectionEnd, 'end');
    }
  });
  if (!text) { editor.focus(); return; }

  const body = { sql: text, max_rows: +rowsSel.value };
  out.appendChild(h('p', { class: 'muted', role: 'status' }, 'Running…'));
  let r;
  try {
    r = await api.post('query', body);
  } catch (e) {
    clear(out).appendChild(sqlError(e, editor, text));
    return;
  }
  clear(out);
  csv.disabled = json.disabled = false;
  csv.addEventListener('click', async () => {
    try { download(await api.blob('POST', api.url('query'), { ...body, format: 'csv' }), 'query.csv'); } catch (e) { out.prepend(errorBox(e)); }
  });
  json.addEventListener('click', () => {
    const objs = r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c.name, row[i]])));
    download(new Blob([JSON.stringify({ columns: r.columns, rows: objs, truncated: r.truncated, snapshot_id: r.snapshot_id }, null, 2)], { type: 'application/json' }), 'query.json');
  });
  out.append(
    h('p', { id: 'sql-summary', role: 'status' }, `${int(r.row_count)} rows in ${r.elapsed_ms.toFixed(1)} ms`,
      r.truncated ? h('strong', { class: 'status-error', id: 'sql-truncated' }, ` · truncated at ${int(r.row_count)} rows (the query has more)`) : ''),
    report(r));
  const pager = h('div', { class: 'pager' });
  const box = h('div');
  out.append(pager, box);
  let page = 0;
  const pages = Math.max(1, Math.ceil(r.rows.length / PAGE));
  const draw = () => {
    clear(box).appendChild(resultTable(app, r, page * PAGE, Math.min(r.rows.length, (page + 1) * PAGE)));
    clear(pager);
    if (pages > 1) {
      const prev = h('button', { type: 'button', disabled: page === 0 }, '← Previous');
      const next = h('button', { type: 'button', disabled: page >= pages - 1 }, 'Next →');
      prev.addEventListener('click', () => { page--; draw(); });
      next.addEventListener('click', () => { page++; draw(); });
      pager.append(prev, h('span', null, `rows ${int(page * PAGE + 1)}–${int(Math.min(r.rows.length, (page + 1) * PAGE))} of ${int(r.rows.length)}`), next);
    }
  };
  draw();
}

// sqlError shows a rejected or failed query; DuckDB's "LINE n:" and caret
// give a position, which is selected in the editor.
function sqlError(e, editor, text) {
  const box = h('div', null, errorBox(e));
  const m = /LINE (\d+):[^\n]*\n(\s*)\^/.exec(e.message || '');
  if (m) {
    const line = +m[1];
    const lines = text.split('\n');
    // DuckDB prints "LINE n: " then the line; the caret's column counts from there.
    const col = Math.max(0, m[2].length - ('LINE ' + m[1] + ': ').length);
    let off = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) off += lines[i].length + 1;
    off = Math.min(text.length, off + col);
    box.appendChild(h('p', { class: 'muted', id: 'sql-error-pos' }, `at line ${line}, column ${col + 1}`));
    editor.focus();
    editor.setSelectionRange(off, Math.min(text.length, off + 1));
  }
  return box;
}

function report(r) {
  const pr = r.pruning || [];
  const rt = r.source_routing || {};
  return h('details', { class: 'report', id: 'sql-report' },
    h('summary', null, 'Pruning and routing: ', pr.map((x) => `${x.dataset}.${x.relation} read ${x.resolved ? x.resolved.length : 0} of ${x.considered} sources (${x.skipped} skipped)`).join('; ') || 'no trajectory relation read',
      ' · routing ', rt.outcome || '—'),
    h('ul', null, pr.map((x) => h('li', null, `${x.dataset}.${x.relation}: considered ${x.considered}, skipped ${x.skipped}, read: `,
      h('span', { class: 'mono' }, (x.resolved || []).slice(0, 50).join(', ') + ((x.resolved || []).length > 50 ? ' …' : '')))),
    rt.reason ? h('li', null, 'routing: ' + rt.reason) : null));
}

function resultTable(app, r, from, to) {
  const names = r.columns.map((c) => c.name);
  const fi = names.indexOf('_file_'), si = names.indexOf('session_id'), di = names.indexOf('dataset');
  const linked = fi >= 0 && si >= 0;
  const si2 = names.indexOf('step_index');
  const numeric = r.columns.map((c) => /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|DOUBLE|FLOAT|REAL|DECIMAL.*)$/.test(c.type));
  const head = h('tr', null, linked ? h('th', { scope: 'col' }, '') : null,
    r.columns.map((c) => h('th', { scope: 'col', title: c.type }, c.name, h('span', { class: 'muted' }, ' ' + c.type.toLowerCase()))));
  const body = h('tbody');
  for (let i = from; i < to; i++) {
    const row = r.rows[i];
    let open = null;
    if (linked && typeof row[fi] === 'string' && typeof row[si] === 'string') {
      const key = { dataset: di >= 0 && row[di] ? row[di] : app.dataset(), _file_: row[fi], session_id: row[si] };
      open = h('a', { href: app.storylineHref(key, si2 >= 0 && row[si2] !== null ? { step: row[si2] } : null), 'data-nav': true, class: 'open' }, 'open');
    }
    body.appendChild(h('tr', null, linked ? h('td', null, open) : null,
      row.map((v, j) => h('td', { class: numeric[j] ? 'num' : 'cell', title: typeof v === 'string' && v.length > 60 ? v.slice(0, 2000) : null }, cell(v)))));
  }
  return h('table', { class: 'grid', id: 'sql-result' }, h('thead', null, head), body);
}
