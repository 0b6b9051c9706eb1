// Compare: two Storylines side by side, steps aligned by the server (role,
// tool names and arguments), with token, cost and outcome deltas. URL:
// a_dataset, a_file, a_session_id, b_… and row= (the selected row).
import * as api from './api.js';
import { h, clear } from './dom.js';
import { int, usd, duration, signed } from './fmt.js';
import { errorBox, button } from './ui.js';
import { visible } from './text.js';
import { sides } from './diff.js';

export const title = 'Compare';

const ROWS = 500;

function sideOf(p, s, app) {
  return { dataset: p.get(s + '_dataset') || app.dataset(), _file_: p.get(s + '_file') || '', session_id: p.get(s + '_session_id') || '' };
}

export async function render(root, app) {
  const p = app.params();
  const a = sideOf(p, 'a', app), b = sideOf(p, 'b', app);
  root.appendChild(h('h1', null, 'Compare'));
  root.appendChild(picker(app, a, b));
  if (!a._file_ || !a.session_id || !b._file_ || !b.session_id) {
    root.appendChild(h('p', { class: 'muted' }, 'Pick two Storylines: tick two runs in ', h('a', { href: '/runs', 'data-nav': true }, 'Runs'),
      ' (a Storyline\'s "compare with…" link picks it there), or fill in both sides above.'));
    return;
  }
  const query = { a_dataset: a.dataset, a_file: a._file_, a_session_id: a.session_id, b_dataset: b.dataset, b_file: b._file_, b_session_id: b.session_id };
  const status = h('p', { class: 'muted', role: 'status' }, 'Aligning the steps…');
  root.appendChild(status);
  let r;
  try {
    r = await api.get('compare', { ...query, from: 0, limit: ROWS });
  } catch (e) {
    status.replaceWith(errorBox(e));
    return;
  }
  status.remove();
  root.appendChild(summary(app, r));
  new CompareView(root, app, query, a, b, r).start(+(p.get('row') ?? -1));
}

// CompareView is the aligned rows, paged from the server, with a selection
// that can skip to the next change, a "changed only" filter, and the
// selected row's text difference.
class CompareView {
  constructor(root, app, query, a, b, first) {
    Object.assign(this, { root, app, query, a, b, first });
    this.rows = [];   // row elements, in order
    this.data = [];   // the rows as the server sent them
    this.next = first.next_from;
    this.index = -1;
    this.detailSeq = 0;
  }

  start(wantRow) {
    const r = this.first;
    this.changedOnly = h('input', { type: 'checkbox', id: 'changed-only' });
    this.changedOnly.addEventListener('change', () => {
      this.list.classList.toggle('changed-only', this.changedOnly.checked);
      if (this.index >= 0 && this.hidden(this.index)) this.step(1, true);
    });
    this.position = h('span', { class: 'muted', id: 'change-pos', role: 'status' });
    const bar = h('div', { class: 'toolbar cmp-bar' },
      button('← previous change', 'previous change (N)', () => this.step(-1, true), { id: 'prev-change' }),
      button('next change →', 'next change (n)', () => this.step(1, true), { id: 'next-change' }),
      r.first_divergence >= 0 ? button('first divergence (row ' + r.first_divergence + ')', 'go to the first row that differs', () => this.goTo(r.first_divergence), { id: 'first-divergence' }) : null,
      h('label', { class: 'inline' }, this.changedOnly, ' changed only'),
      this.position);
    this.list = h('div', { id: 'compare-rows', role: 'table', 'aria-label': 'aligned steps', tabindex: '0' },
      h('div', { class: 'cmp-row head', role: 'row' }, ['', 'A', 'B', 'Δ tokens'].map((x) => h('span', { role: 'columnheader' }, x))));
    this.list.addEventListener('click', (e) => {
      const row = e.target.closest('.cmp-row[data-row]');
      if (row && !e.target.closest('a')) this.select(+row.dataset.row);
    });
    this.more = h('button', { type: 'button', hidden: this.next === null }, 'More rows');
    this.more.addEventListener('click', () => this.loadMore().catch((e) => this.app.notice(e.message, { error: true })));
    this.detail = h('section', { id: 'compare-detail', class: 'cmp-detail', 'aria-label': 'difference of the selected row' },
      h('p', { class: 'muted' }, 'Select a row to see the difference of its text.'));
    this.root.append(bar, this.list, h('div', { class: 'pager' }, this.more, h('span', { class: 'muted' }, `${int(r.total_rows)} aligned rows`)), this.detail);
    this.add(r);
    const k = this.app.keys;
    k.next = () => this.step(1, false);
    k.prev = () => this.step(-1, false);
    k.first = () => this.select(0);
    k.last = () => this.select(this.rows.length - 1);
    k.findNext = () => this.step(1, true);
    k.findPrev = () => this.step(-1, true);
    k.open = () => { const l = this.rows[this.index] && this.rows[this.index].querySelector('a'); if (l) l.click(); };
    const want = wantRow >= 0 ? wantRow : Math.max(0, r.first_divergence);
    this.goTo(want).catch((e) => this.app.notice(e.message, { error: true }));
  }

  add(page) {
    for (const row of page.rows) {
      const el = cmpRow(this.app, row, this.a, this.b);
      el.dataset.row = String(this.rows.length);
      el.setAttribute('aria-selected', 'false');
      this.list.appendChild(el);
      this.rows.push(el);
      this.data.push(row);
    }
    this.next = page.next_from;
    this.more.hidden = this.next === null;
    this.updatePosition();
  }

  async loadMore() {
    if (this.next === null) return false;
    this.add(await api.get('compare', { ...this.query, from: this.next, limit: ROWS }));
    return true;
  }

  // goTo selects row i, loading the pages up to it: the first divergence
  // may lie far past the first page.
  async goTo(i) {
    while (i >= this.rows.length && await this.loadMore()) { /* next page */ }
    if (i < this.rows.length) this.select(i);
  }

  hidden(i) { return this.changedOnly.checked && this.data[i].op === 'same'; }

  // step moves to the next (dir 1) or previous (-1) visible row, or with
  // changes to the next row that is not the same on both sides, loading
  // pages as it goes.
  async step(dir, changes) {
    let i = this.index;
    for (;;) {
      i += dir;
      if (i < 0) return;
      if (i >= this.rows.length && !(await this.loadMore())) return;
      if (this.hidden(i) || (changes && this.data[i].op === 'same')) continue;
      this.select(i);
      return;
    }
  }

  select(i) {
    if (i < 0 || i >= this.rows.length) return;
    if (this.index >= 0) this.rows[this.index].setAttribute('aria-selected', 'false');
    this.index = i;
    const el = this.rows[i];
    el.setAttribute('aria-selected', 'true');
    el.scrollIntoView({ block: 'nearest' });
    this.app.replace({ ...this.query, row: i });
    this.updatePosition();
    this.showDetail(i);
  }

  updatePosition() {
    const changes = this.data.reduce((n, r) => n + (r.op === 'same' ? 0 : 1), 0);
    const at = this.index >= 0 && this.data[this.index].op !== 'same' ? this.data.slice(0, this.index + 1).filter((r) => r.op !== 'same').length : 0;
    this.position.textContent = (at ? `change ${at} of ${changes}` : `${changes} changes`) + (this.next !== null ? ' in the rows loaded' : '');
  }

  // showDetail shows the selected row's text on both sides, word by word.
  async showDetail(i) {
    const seq = ++this.detailSeq;
    const row = this.data[i];
    clear(this.detail).appendChild(h('p', { class: 'muted' }, 'Loading row ' + i + '…'));
    const body = (side, key) => (side ? api.get('storyline/bodies', { dataset: key.dataset, file: key._file_, session_id: key.session_id, from: side.step_index, limit: 1, max_chars: DETAIL_CHARS })
      .then((res) => stepText(res.steps[0])) : Promise.resolve(''));
    let ta, tb;
    try {
      [ta, tb] = await Promise.all([body(row.a, this.a), body(row.b, this.b)]);
    } catch (e) {
      if (seq === this.detailSeq) clear(this.detail).appendChild(errorBox(e));
      return;
    }
    if (seq !== this.detailSeq) return;
    const d = sides(ta, tb);
    const col = (label, side, nodes) => h('div', { class: 'cmp-side' }, h('h3', null, label, side ? ' · step ' + side.step_index : ' · no step'), h('pre', { class: 'body-text diff' }, nodes));
    clear(this.detail).append(
      h('h2', null, 'Row ' + i + ' ', h('span', { class: 'chip' }, row.op.replace('_', ' ')), row.differs ? h('span', { class: 'muted' }, ' ' + row.differs.join(', ')) : null),
      h('div', { class: 'cmp-sides', id: 'compare-sides' }, col('A', row.a, d.a), col('B', row.b, d.b)));
    this.detail.dataset.row = String(i);
  }
}

const DETAIL_CHARS = 20000;

// stepText is what a step says, as one text to compare: message,
// reasoning, observation, each call with its arguments and result.
function stepText(s) {
  if (!s) return '';
  const v = (t) => (t && t.value) || '';
  const parts = [];
  if (s.message) parts.push(v(s.message));
  if (s.reasoning) parts.push('[reasoning] ' + v(s.reasoning));
  if (s.observation) parts.push('[observation] ' + v(s.observation));
  for (const c of s.calls || []) parts.push('[call ' + c.function_name + '] ' + v(c.arguments) + (c.result ? '\n[result] ' + v(c.result) : ''));
  for (const c of s.results_of || []) parts.push('[result of ' + c.function_name + '] ' + v(c.result));
  return parts.join('\n\n');
}

function picker(app, a, b) {
  const f = h('form', { class: 'toolbar', 'aria-label': 'pick Storylines' });
  const inputs = {};
  for (const [s, v] of [['a', a], ['b', b]]) {
    for (const [k, label, val] of [['file', 'file', v._file_], ['session_id', 'session', v.session_id]]) {
      const inp = h('input', { name: s + '_' + k, value: val, size: k === 'file' ? 34 : 22, 'aria-label': s.toUpperCase() + ' ' + label });
      inputs[s + '_' + k] = inp;
      f.appendChild(h('label', null, s.toUpperCase() + ' ' + label, inp));
    }
  }
  const swap = h('button', { type: 'button', title: 'swap A and B' }, '⇄');
  swap.addEventListener('click', () => app.go('/compare', { a_dataset: b.dataset, a_file: b._file_, a_session_id: b.session_id, b_dataset: a.dataset, b_file: a._file_, b_session_id: a.session_id }));
  f.append(h('button', { type: 'submit', class: 'primary' }, 'Compare'), swap);
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    app.go('/compare', { a_dataset: a.dataset, b_dataset: b.dataset, ...Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value.trim()])) });
  });
  return f;
}

function summary(app, r) {
  const d = r.delta;
  const line = (label, fa, fb, fd, f = int) => h('tr', null, h('th', { scope: 'row' }, label), h('td', { class: 'num' }, f(fa)), h('td', { class: 'num' }, f(fb)),
    h('td', { class: 'num ' + (typeof fd === 'number' ? (fd > 0 ? 'delta-pos' : fd < 0 ? 'delta-neg' : '') : '') }, typeof fd === 'number' ? signed(fd, f) : fd));
  const name = (s) => h('a', { href: app.storylineHref(s.key), 'data-nav': true }, s.key._file_ + ' · ' + s.key.session_id);
  const reward = (v) => (v === null || v === undefined ? '—' : String(v));
  const c = r.counts;
  return h('section', { 'aria-label': 'summary' },
    h('table', { class: 'grid', id: 'compare-summary' },
      h('thead', null, h('tr', null, h('th'), h('th', { scope: 'col' }, 'A ', name(r.a)), h('th', { scope: 'col' }, 'B ', name(r.b)), h('th', { scope: 'col', class: 'num' }, 'B − A'))),
      h('tbody', null,
        h('tr', null, h('th', { scope: 'row' }, 'agent / model'), h('td', null, (r.a.agent_name || '—') + ' / ' + (r.a.agent_model_name || '—')), h('td', null, (r.b.agent_name || '—') + ' / ' + (r.b.agent_model_name || '—')), h('td')),
        h('tr', null, h('th', { scope: 'row' }, 'status'), h('td', null, r.a.status), h('td', null, r.b.status), h('td', { class: 'num' }, d.same_status ? 'same' : 'differs')),
        line('reward', r.a.reward, r.b.reward, d.reward, reward),
        line('steps', r.a.step_count, r.b.step_count, d.step_count),
        line('tool calls', r.a.tool_call_count, r.b.tool_call_count, d.tool_call_count),
        line('tool errors', r.a.tool_errors, r.b.tool_errors, d.tool_errors),
        line('prompt tokens', r.a.prompt_tokens, r.b.prompt_tokens, d.prompt_tokens),
        line('completion tokens', r.a.completion_tokens, r.b.completion_tokens, d.completion_tokens),
        line('cost', r.a.cost_usd, r.b.cost_usd, d.cost_usd, usd),
        line('duration', r.a.duration_ms, r.b.duration_ms, d.duration_ms, duration))),
    h('p', { id: 'compare-counts' }, `${int(c.same)} same · ${int(c.changed)} changed · ${int(c.a_only)} only in A · ${int(c.b_only)} only in B`,
      r.first_divergence >= 0 ? ` · first divergence at row ${r.first_divergence}` : ' · the step sequences are identical',
      r.a.truncated || r.b.truncated ? h('strong', null, ' · only the first steps of a long Storyline were aligned') : null));
}

// cmpRow is one aligned row: a changed row shows its previews' word
// difference, every cell clips its text so columns never overlap.
function cmpRow(app, row, a, b) {
  const d = row.op === 'changed' && row.a && row.b ? sides(row.a.preview || '', row.b.preview || '') : null;
  const side = (s, key, text) => {
    if (!s) return h('span', { class: 'muted' }, '—');
    return h('span', { class: 'truncate' },
      h('a', { href: app.storylineHref(key, { step: s.step_index }), 'data-nav': true }, '#' + s.step_index), ' ',
      h('span', { class: 'role role-' + s.source }, s.source), ' ',
      s.tools.length ? h('span', { class: 'chips' }, s.tools.map((t) => h('span', { class: 'chip' + (s.has_error ? ' err' : '') }, '⚙ ', visible(t)))) : null, ' ',
      h('span', { class: 'preview' }, text || visible(s.preview || '')));
  };
  const tok = (s) => (s ? (s.prompt_tokens || 0) + (s.completion_tokens || 0) : null);
  let dt = '';
  if (row.a && row.b && (tok(row.a) || tok(row.b))) dt = signed(tok(row.b) - tok(row.a));
  const op = row.op.replace('_', ' ') + (row.differs ? ': ' + row.differs.join(', ') : '');
  return h('div', { class: 'cmp-row ' + row.op, role: 'row' },
    h('span', { role: 'cell', class: 'op truncate', title: op }, op),
    h('span', { role: 'cell', class: 'side' }, side(row.a, a, d && d.a)), h('span', { role: 'cell', class: 'side' }, side(row.b, b, d && d.b)), h('span', { role: 'cell', class: 'num' }, dt));
}
