// Widgets shared by the views: error boxes, tables, keyboard selection.
import { ApiError } from './api.js';
import { h } from './dom.js';

export function errorBox(e) {
  const msg = e instanceof ApiError ? `${e.code}: ${e.message}` : String(e && e.message ? e.message : e);
  return h('div', { class: 'error-box', role: 'alert' }, msg);
}

// cell renders one value of a result row as text.
export function cell(v) {
  if (v === null || v === undefined) return h('span', { class: 'null' }, 'NULL');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// Selection is keyboard selection over a list of row elements: j/k move it,
// gg/G jump to the ends, Enter opens the selected row.
export class Selection {
  constructor(app, { onOpen, onSelect } = {}) {
    this.rows = [];
    this.index = -1;
    this.onOpen = onOpen;
    this.onSelect = onSelect;
    Object.assign(app.keys, {
      next: () => this.move(1), prev: () => this.move(-1),
      first: () => this.select(0), last: () => this.select(this.rows.length - 1),
      open: () => { if (this.index >= 0 && this.onOpen) this.onOpen(this.index, this.rows[this.index]); },
    });
  }

  setRows(rows) {
    this.rows = rows;
    rows.forEach((r, i) => {
      r.dataset.row = String(i);
      r.setAttribute('aria-selected', 'false');
      r.addEventListener('click', (e) => { if (!e.target.closest('a,button,input')) this.select(i); });
    });
    this.index = -1;
  }

  move(d) {
    if (!this.rows.length) return;
    this.select(Math.max(0, Math.min(this.rows.length - 1, this.index < 0 ? 0 : this.index + d)));
  }

  select(i) {
    if (i < 0 || i >= this.rows.length) return;
    if (this.index >= 0 && this.rows[this.index]) this.rows[this.index].setAttribute('aria-selected', 'false');
    this.index = i;
    const r = this.rows[i];
    r.setAttribute('aria-selected', 'true');
    r.scrollIntoView({ block: 'nearest' });
    if (this.onSelect) this.onSelect(i, r);
  }
}

// table renders a grid: columns [{label, num, render(row)}].
export function table(columns, rows) {
  const t = h('table', { class: 'grid' },
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)))),
  );
  const body = h('tbody');
  for (const r of rows) body.appendChild(h('tr', null, columns.map((c) => h('td', { class: c.num ? 'num' : c.cls || null }, c.render(r)))));
  t.appendChild(body);
  return t;
}

// button is a labelled button that runs fn; attrs adds attributes (class,
// id).
export function button(label, titleText, fn, attrs) {
  const b = h('button', { type: 'button', title: titleText, 'aria-label': titleText, ...attrs }, label);
  b.addEventListener('click', fn);
  return b;
}
