// Compare: two Storylines side by side, steps aligned by the server (role,
// tool names and arguments), with token, cost and outcome deltas. URL:
// a_dataset, a_file, a_session_id, b_… and row= (the selected row).
import * as api from './api.js';
import { h, clear } from './dom.js';
import { int, usd, duration, signed } from './fmt.js';
import { errorBox, Selection } from './ui.js';

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
  const list = h('div', { id: 'compare-rows', role: 'table', 'aria-label': 'aligned steps' },
    h('div', { class: 'cmp-row head', role: 'row' }, ['', 'A', 'B', 'Δ tokens'].map((x) => h('span', { role: 'columnheader' }, x))));
  root.appendChild(list);
  const sel = new Selection(app, {
    onOpen: (i, row) => { const l = row.querySelector('a'); if (l) l.click(); },
    onSelect: (i) => app.replace({ ...query, row: i }),
  });
  const rows = [];
  const add = (page) => {
    for (const row of page.rows) {
      const el = cmpRow(app, row, a, b);
      list.appendChild(el);
      rows.push(el);
    }
    sel.setRows(rows);
  };
  add(r);
  let next = r.next_from;
  const more = h('button', { type: 'button', hidden: next === null }, 'More rows');
  more.addEventListener('click', async () => {
    const pg = await api.get('compare', { ...query, from: next, limit: ROWS });
    add(pg);
    next = pg.next_from;
    more.hidden = next === null;
  });
  root.appendChild(h('div', { class: 'pager' }, more, h('span', { class: 'muted' }, `${int(r.total_rows)} aligned rows`)));
  const want = +(p.get('row') || (r.first_divergence >= 0 ? r.first_divergence : 0));
  if (want < rows.length) sel.select(want);
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

function cmpRow(app, row, a, b) {
  const side = (s, key) => {
    if (!s) return h('span', { class: 'muted' }, '—');
    return h('span', { class: 'truncate' },
      h('a', { href: app.storylineHref(key, { step: s.step_index }), 'data-nav': true }, '#' + s.step_index), ' ',
      h('span', { class: 'role role-' + s.source }, s.source), ' ',
      s.tools.length ? h('span', { class: 'chips' }, s.tools.map((t) => h('span', { class: 'chip' + (s.has_error ? ' err' : '') }, '⚙ ' + t))) : null, ' ',
      h('span', { class: 'muted' }, s.preview));
  };
  const tok = (s) => (s ? (s.prompt_tokens || 0) + (s.completion_tokens || 0) : null);
  let dt = '';
  if (row.a && row.b && (tok(row.a) || tok(row.b))) dt = signed(tok(row.b) - tok(row.a));
  return h('div', { class: 'cmp-row ' + row.op, role: 'row' },
    h('span', { role: 'cell', class: 'op' }, row.op.replace('_', ' ') + (row.differs ? ': ' + row.differs.join(', ') : '')),
    h('span', { role: 'cell' }, side(row.a, a)), h('span', { role: 'cell' }, side(row.b, b)), h('span', { role: 'cell', class: 'num' }, dt));
}
