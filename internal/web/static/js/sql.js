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
  const suggest = h('ul', { id: 'sql-suggest', class: 'suggest', role: 'listbox', 'aria-label': 'completions', hidden: true });
  const browser = h('details', { id: 'sql-schema', class: 'schema' }, h('summary', null, 'Schema: relations and their columns'), h('p', { class: 'muted' }, 'Loading…'));
  root.append(h('h1', null, 'SQL'), tables, browser, editor, suggest, h('div', { class: 'toolbar' }, run, rowsSel, csv, json, h('span', { class: 'muted' }, 'Ctrl/⌘+Enter runs · Tab completes')), out);
  app.keys.slash = () => editor.focus();
  const completer = new Completer(editor, suggest);
  schemaOf(app).then((sc) => { completer.schema = sc; fillBrowser(browser, sc, editor); }, (e) => { clear(browser).append(h('summary', null, 'Schema'), errorBox(e)); });

  const go = () => app.go('/sql', { dataset: p.get('dataset'), sql: editor.value, max_rows: rowsSel.value === '1000' ? '' : rowsSel.value });
  run.addEventListener('click', go);
  editor.addEventListener('keydown', (e) => {
    if (completer.key(e)) return;
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
  const pos = errorPosition(e.message || '', text);
  if (pos) {
    box.appendChild(h('p', { class: 'muted', id: 'sql-error-pos' }, `at line ${pos.line}, column ${pos.col + 1}`));
    editor.focus();
    editor.setSelectionRange(pos.offset, Math.min(text.length, pos.offset + 1));
  }
  return box;
}

// errorPosition maps DuckDB's "LINE n: <text>" and the caret under it to
// an offset in the statement. DuckDB shows a long line as a window around
// the error, cut with "..." on either side: the window is found in the
// line to place the caret.
export function errorPosition(msg, text) {
  const m = /LINE (\d+): ([^\n]*)\n( *)\^/.exec(msg);
  if (!m) return null;
  const line = +m[1];
  const lines = text.split('\n');
  const src = lines[line - 1];
  if (src === undefined) return null;
  let shown = m[2];
  let caret = m[3].length - ('LINE ' + m[1] + ': ').length;
  if (shown.startsWith('...')) { shown = shown.slice(3); caret -= 3; }
  if (shown.endsWith('...')) shown = shown.slice(0, -3);
  let base = src.indexOf(shown);
  if (base < 0) base = src.replace(/\t/g, ' ').indexOf(shown); // DuckDB shows tabs as spaces
  const col = Math.max(0, Math.min(src.length, (base < 0 ? 0 : base) + caret));
  let off = 0;
  for (let i = 0; i < line - 1; i++) off += lines[i].length + 1;
  return { line, col, offset: Math.min(text.length, off + col) };
}

// schemaCache holds each Snapshot's relations and columns.
const schemaCache = new Map();

// schemaOf lists the relations of every mounted Dataset with their columns
// and types: [{dataset, relation, columns: [[name, type]]}].
function schemaOf(app) {
  const key = app.pinned;
  if (!schemaCache.has(key)) {
    // The mounted relations and their types from DuckDB, what they mean
    // from the server's documented schema.
    const docs = api.get('schema').then((r) => new Map(r.relations.map((rel) => [rel.name, rel])), () => new Map());
    const p = Promise.all([api.post('query', { sql: 'SHOW ALL TABLES', max_rows: 1000 }), docs]).then(([r, doc]) => r.rows.map((row) => {
      const d = doc.get(row[2]);
      const meaning = new Map(((d && d.columns) || []).map((c) => [c.name, c.description]));
      return { dataset: row[1], relation: row[2], description: (d && d.description) || '',
        columns: (row[3] || []).map((n, i) => [n, (row[4] || [])[i] || '', meaning.get(n) || '']) };
    }));
    p.catch(() => schemaCache.delete(key));
    schemaCache.set(key, p);
  }
  return schemaCache.get(key);
}

// fillBrowser lists the schema; a click on a name inserts it at the caret.
function fillBrowser(box, sc, editor) {
  clear(box).appendChild(h('summary', null, 'Schema: relations and their columns'));
  const insert = (t) => { editor.focus(); editor.setRangeText(t, editor.selectionStart, editor.selectionEnd, 'end'); };
  const byDs = new Map();
  for (const t of sc) { if (!byDs.has(t.dataset)) byDs.set(t.dataset, []); byDs.get(t.dataset).push(t); }
  for (const [ds, rels] of byDs) {
    box.appendChild(h('div', { class: 'schema-ds' }, h('strong', null, ds), ' ',
      rels.map((t) => {
        const name = h('button', { type: 'button', class: 'link', title: 'insert ' + ds + '.' + t.relation }, t.relation);
        name.addEventListener('click', () => insert(ds + '.' + t.relation));
        return h('details', { class: 'schema-rel', 'data-relation': t.relation }, h('summary', { title: t.description || null }, name, h('span', { class: 'muted' }, ` (${t.columns.length} columns)`)),
          t.description ? h('p', { class: 'muted schema-desc' }, t.description) : null,
          h('table', { class: 'grid' }, h('tbody', null, t.columns.map(([c, ty, meaning]) => {
            const b = h('button', { type: 'button', class: 'link mono' }, c);
            b.addEventListener('click', () => insert(c));
            return h('tr', null, h('td', null, b), h('td', { class: 'muted mono' }, ty.toLowerCase()), h('td', { class: 'schema-desc' }, meaning));
          }))));
      })));
  }
}

// Completer suggests Datasets, relations and columns for the word before
// the caret: after "ds." the relations of ds, after "rel." its columns.
// Tab or Enter takes the highlighted one, arrows move, Esc closes.
class Completer {
  constructor(editor, list) {
    Object.assign(this, { editor, list, schema: [], items: [], active: 0 });
    editor.addEventListener('input', () => this.update());
    editor.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    list.addEventListener('mousedown', (e) => {
      const li = e.target.closest('li[data-i]');
      if (li) { e.preventDefault(); this.accept(+li.dataset.i); }
    });
  }

  word() {
    const before = this.editor.value.slice(0, this.editor.selectionStart);
    const m = /([A-Za-z_][\w]*\.)?([A-Za-z_]\w*)?$/.exec(before);
    return { qual: m && m[1] ? m[1].slice(0, -1).toLowerCase() : '', prefix: (m && m[2]) || '' };
  }

  candidates(qual, prefix) {
    const sc = this.schema;
    const set = new Set();
    if (qual) {
      for (const t of sc) if (t.dataset.toLowerCase() === qual) set.add(t.relation);
      for (const t of sc) if (t.relation.toLowerCase() === qual) t.columns.forEach(([c]) => set.add(c));
    } else {
      for (const t of sc) { set.add(t.dataset); set.add(t.relation); }
      const text = this.editor.value.toLowerCase();
      for (const t of sc) if (text.includes(t.relation)) t.columns.forEach(([c]) => set.add(c));
    }
    const p = prefix.toLowerCase();
    return [...set].filter((x) => x.toLowerCase().startsWith(p) && x.toLowerCase() !== p).sort().slice(0, 10);
  }

  update() {
    const { qual, prefix } = this.word();
    if (!prefix && !qual) { this.close(); return; }
    this.items = this.candidates(qual, prefix);
    this.prefix = prefix;
    this.active = 0;
    if (!this.items.length) { this.close(); return; }
    this.draw();
  }

  draw() {
    clear(this.list).append(...this.items.map((x, i) => h('li', { role: 'option', 'data-i': i, 'aria-selected': i === this.active ? 'true' : 'false' }, x)));
    this.list.hidden = false;
  }

  close() { this.list.hidden = true; this.items = []; }

  accept(i) {
    const x = this.items[i];
    if (x === undefined) return;
    const at = this.editor.selectionStart;
    this.editor.setRangeText(x, at - this.prefix.length, at, 'end');
    this.close();
  }

  // key handles a key in the editor while suggestions show; true: taken.
  key(e) {
    if (this.list.hidden || !this.items.length || e.ctrlKey || e.metaKey || e.altKey) return false;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      this.active = (this.active + (e.key === 'ArrowDown' ? 1 : this.items.length - 1)) % this.items.length;
      this.draw();
    } else if (e.key === 'Tab' || e.key === 'Enter') {
      this.accept(this.active);
    } else if (e.key === 'Escape') {
      this.close();
    } else return false;
    e.preventDefault();
    e.stopPropagation();
    return true;
  }
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
