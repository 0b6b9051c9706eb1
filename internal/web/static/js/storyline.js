// Storyline: one trajectory by its identity (dataset, _file_, session_id).
// The timeline is a virtual list that fetches pages of steps on demand
// (bodies cut to a preview), so a 100,000-step Storyline costs what its
// visible rows cost; the selected step's detail pairs each tool call with
// its result by id. Find runs on the server. URL: step=, find=.
import * as api from './api.js';
import { h, add, clear, download } from './dom.js';
import { int, usd, duration, time, bytes } from './fmt.js';
import { errorBox, button } from './ui.js';
import { markdown, plain, visible, label, stripAnsi } from './text.js';
import { VirtualList } from './vlist.js';

export const title = 'Storyline';

const PAGE = 100;            // steps per bodies request of the timeline
const PREVIEW_CHARS = 200;   // characters of each body in the timeline
const DETAIL_CHARS = 20000;  // characters of each body in the detail
const LOAD_ALL_MAX = 8 << 20; // "Load all" shows a body up to 8 MB; beyond, download
const ROW_H = 64;            // keep in step with --row in app.css
const MAX_PAGES = 60;        // pages kept in memory (6,000 steps)
const TOOL_ROLES = new Set(['tool', 'environment', 'function', 'observation']);

export async function render(root, app) {
  const p = app.params();
  const key = { dataset: app.dataset(), _file_: p.get('file') || '', session_id: p.get('session_id') || '' };
  if (!key._file_ || !key.session_id) {
    root.appendChild(h('p', null, 'A Storyline is named by its file and session. Open one from ',
      h('a', { href: '/runs', 'data-nav': true }, 'Runs'), ' or ', h('a', { href: '/search', 'data-nav': true }, 'Search'), '.'));
    return;
  }
  const params = { dataset: key.dataset, file: key._file_, session_id: key.session_id };
  root.className = 'fill';
  const t0 = performance.now();
  // The identity and a progress line show at once: a cold open reads the
  // source before it can answer.
  const pending = h('div', { class: 'story-head', id: 'story-pending' },
    h('h1', null, 'Storyline ', h('span', { class: 'muted mono' }, label(key._file_), ' · ', label(key.session_id))),
    h('p', { class: 'muted', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ' Reading the run…'));
  root.appendChild(pending);
  // The run, the first page of steps and the row count are asked for at
  // once: the first rows do not wait for the header.
  const step = p.get('step');
  const firstPage = Math.floor((+step || 0) / PAGE);
  const infoPromise = api.get('storyline', params);
  const pagePromise = fetchPage(params, firstPage);
  const countPromise = infoPromise.then((info) => countRows(params, info.run.step_count || 0));
  pagePromise.catch(() => {});
  countPromise.catch(() => {});
  let info;
  try {
    info = await infoPromise;
  } catch (e) {
    pending.replaceWith(errorBox(e));
    return;
  }
  pending.remove();
  const s = new StorylineView(root, app, key, params, info, t0);
  s.start(p, firstPage, pagePromise, countPromise);
  return () => s.destroy();
}

function fetchPage(params, pg, signal) {
  return api.get('storyline/bodies', { ...params, from: pg * PAGE, limit: PAGE, max_chars: PREVIEW_CHARS }, { signal });
}

// countRows finds the number of step rows: the last step_index plus one.
// Rows are numbered from 0 without gaps, so probing pages of headers from
// the run's step_count (which leaves copied-context rows out) finds the
// end in one request or a few.
async function countRows(params, n) {
  for (let guard = 0; guard < 1000; guard++) {
    const r = await api.get('storyline/steps', { ...params, from: n, limit: 1000 });
    n += r.steps.length;
    if (r.next_from === null || r.next_from === undefined) break;
  }
  return n;
}

class StorylineView {
  constructor(root, app, key, params, info, t0) {
    Object.assign(this, { root, app, key, params, info, t0 });
    this.pages = new Map();   // page number → {steps} (bodies with previews)
    this.loading = new Map(); // page number → {promise, abort}
    this.byId = new Map();    // step_id → step_index, for the pages seen
    this.hits = [];
    this.hitSet = new Set();
    this.hitNext = null;
    this.findText = '';
    this.selected = -1;
    this.detailSeq = 0;
    this.aborter = new AbortController();
  }

  start(p, firstPage, pagePromise, countPromise) {
    this.header();
    const story = h('div', { class: 'story' });
    const listBox = h('div', { id: 'timeline', 'aria-label': 'steps', tabindex: '0' });
    this.detail = h('section', { class: 'detail', id: 'step-detail', 'aria-label': 'selected step', tabindex: '-1' },
      h('p', { class: 'muted' }, 'Select a step (j/k, click) to see its messages, tool calls and results.'));
    story.append(listBox, this.detail);
    this.root.appendChild(story);
    const first = { abort: new AbortController() }; // already under way: dropping it only forgets it
    first.promise = pagePromise.then((r) => this.loaded(firstPage, r, first), (e) => this.failed(firstPage, e, first));
    this.loading.set(firstPage, first);
    // Until the count arrives the list has the run's step_count rows, a
    // lower bound.
    this.list = new VirtualList(listBox, {
      rowHeight: ROW_H, count: this.info.run.step_count || 0,
      renderRow: (i, el) => this.renderRow(i, el),
      onRange: (a, b) => this.want(a, b),
    });
    listBox.addEventListener('click', (e) => {
      const row = e.target.closest('.vrow');
      if (row && row.dataset.index) this.select(+row.dataset.index);
    });
    const k = this.app.keys;
    k.next = () => this.select(Math.min(this.n - 1, this.selected + 1));
    k.prev = () => this.select(Math.max(0, this.selected - 1));
    k.first = () => this.select(0);
    k.last = () => this.select(this.n - 1);
    k.open = () => this.detail.focus();
    k.slash = () => this.findInput.focus();
    k.findNext = () => this.nextHit(1);
    k.findPrev = () => this.nextHit(-1);
    const step = p.get('step');
    const find = p.get('find');
    countPromise.then((n) => {
      if (this.aborter.signal.aborted) return;
      this.list.setCount(n);
      this.list.scroller.dataset.rows = String(n);
      if (step !== null && step !== '' && n > 0) this.select(Math.max(0, Math.min(n - 1, +step)), true);
      if (find) { this.findInput.value = find; this.find(find, step === null); }
    }, (e) => this.app.notice('Could not count the steps: ' + e.message, { error: true }));
  }

  destroy() {
    this.aborter.abort();
    if (this.list) this.list.destroy();
  }

  get n() { return this.list ? this.list.n : 0; }

  // ---- header ------------------------------------------------------------

  header() {
    const { run, links, agents } = this.info;
    const app = this.app;
    const dl = (as, label) => {
      const a = h('a', { href: api.url('storyline/export', { ...this.params, as }), download: '', class: 'download' }, label);
      a.addEventListener('click', (e) => {
        if (!api.hasKeys()) return; // a plain link streams to disk
        e.preventDefault();
        api.blob('GET', a.getAttribute('href')).then((b) => download(b, this.key.session_id + '.' + as + (as === 'atif' ? '.json' : '.jsonl')));
      });
      return a;
    };
    const linkTo = (k, text) => (k ? h('a', { href: app.storylineHref(k), 'data-nav': true }, label(text)) : h('span', { class: 'muted' }, label(text), ' (not in this Snapshot)'));
    const subs = links.subagents || [];
    const head = h('div', { class: 'story-head' },
      h('h1', null, label(run.agent_name || 'Storyline'), ' ', h('span', { class: 'muted mono' }, label(this.key._file_), ' · ', label(this.key.session_id))),
      h('div', { class: 'cards' },
        card('steps', int(run.step_count)), card('tool calls', int(run.tool_call_count)),
        card('prompt tokens', int(run.prompt_tokens)), card('completion tokens', int(run.completion_tokens)),
        card('cost', usd(run.cost_usd)), card('duration', duration(run.duration_ms)),
        card('status', run.status), run.reward !== null && run.reward !== undefined ? card('reward', String(run.reward)) : null,
        card('model', run.agent_model_name || '—'), card('format', run.source_format)),
      h('div', { class: 'links', id: 'story-links' },
        links.parent ? h('span', null, '↑ parent: ', linkTo(links.parent, links.parent.session_id)) : null,
        links.continuation ? h('span', null, '→ continued in: ', linkTo(links.continuation.key, refLabel(links.continuation.ref))) : null,
        subs.length ? h('span', null, 'subagents: ', subs.map((l, i) => [i ? ', ' : '', linkTo(l.key, refLabel(l.ref))])) : null,
        h('span', null, 'download: ', dl('atif', 'ATIF'), ' · ', dl('openai', 'OpenAI messages'), ' · ', dl('canonical', 'canonical events')),
        h('a', { href: app.href('/runs', { dataset: this.key.dataset, pick: JSON.stringify([this.key.dataset, this.key._file_, this.key.session_id]) }), 'data-nav': true, id: 'compare-with', title: 'pick the run to compare this one with' }, 'compare with…')),
      runPanel(run),
      agents.length > 1 || (agents.length === 1 && agents[0].key.session_id !== this.key.session_id) ? this.agentsTable(agents) : null,
      this.toolbar());
    this.root.appendChild(head);
  }

  agentsTable(agents) {
    const sum = (f) => agents.reduce((acc, a) => (a[f] === null || a[f] === undefined ? acc : (acc ?? 0) + a[f]), null);
    const rows = agents.map((a) => {
      const me = a.key.session_id === this.key.session_id;
      return h('tr', { 'aria-current': me ? 'true' : null },
        h('td', null, me ? h('strong', null, label(a.agent_name || a.key.session_id)) : h('a', { href: this.app.storylineHref(a.key), 'data-nav': true, class: 'agent-link' }, label(a.agent_name || a.key.session_id)),
          a.parent_session_id ? h('span', { class: 'muted' }, ' (subagent)') : null),
        h('td', { class: 'mono cell' }, label(a.key.session_id)),
        h('td', null, a.agent_model_name || '—'), h('td', null, a.status),
        h('td', { class: 'num' }, int(a.step_count)), h('td', { class: 'num' }, int(a.tool_call_count)),
        h('td', { class: 'num' }, int(a.prompt_tokens)), h('td', { class: 'num' }, int(a.completion_tokens)), h('td', { class: 'num' }, usd(a.cost_usd)));
    });
    const total = h('tr', null, h('th', { scope: 'row' }, 'total'), h('td'), h('td'), h('td'),
      h('td', { class: 'num' }, int(sum('step_count'))), h('td', { class: 'num' }, int(sum('tool_call_count'))),
      h('td', { class: 'num' }, int(sum('prompt_tokens'))), h('td', { class: 'num' }, int(sum('completion_tokens'))), h('td', { class: 'num' }, usd(sum('cost_usd'))));
    return h('details', { open: agents.length <= 6, id: 'agents' }, h('summary', null, `Agents of this run (${agents.length}) with their totals`),
      h('table', { class: 'grid' },
        h('thead', null, h('tr', null, ['agent', 'session_id', 'model', 'status', 'steps', 'tool calls', 'prompt tok', 'compl. tok', 'cost'].map((x, i) => h('th', { scope: 'col', class: i >= 4 ? 'num' : null }, x)))),
        h('tbody', null, rows), h('tfoot', null, total)));
  }

  toolbar() {
    this.findInput = h('input', { type: 'search', id: 'find', placeholder: 'find in this Storyline', 'aria-label': 'find in this Storyline', size: 28 });
    this.findInput.dataset.slash = '';
    this.findStatus = h('span', { class: 'muted', id: 'find-status', role: 'status' });
    const form = h('form', { class: 'toolbar', role: 'search' },
      h('label', null, 'find', this.findInput),
      h('button', { type: 'submit' }, 'Find'),
      button('↑', 'previous hit (N)', () => this.nextHit(-1)), button('↓', 'next hit (n)', () => this.nextHit(1)),
      this.findStatus);
    form.addEventListener('submit', (e) => { e.preventDefault(); this.find(this.findInput.value.trim(), true); });
    const jump = h('input', { type: 'number', min: 0, id: 'jump', 'aria-label': 'step index', size: 8, placeholder: 'step #' });
    const jf = h('form', { class: 'toolbar' }, h('label', null, 'jump to step', jump), h('button', { type: 'submit' }, 'Go'));
    jf.addEventListener('submit', (e) => { e.preventDefault(); if (jump.value !== '') this.select(Math.max(0, Math.min(this.n - 1, +jump.value)), true); });
    return h('div', { class: 'toolbar' }, form, jf);
  }

  // ---- pages ---------------------------------------------------------------

  // want loads the pages of the rows on screen once scrolling rests, and
  // drops the requests of pages scrolled past: a fast scroll through
  // 100,000 steps asks only for where it stops.
  want(first, last) {
    clearTimeout(this.wantTimer);
    this.wantTimer = setTimeout(() => {
      const lo = Math.floor(first / PAGE), hi = Math.floor(last / PAGE);
      for (const [pg, req] of this.loading) if (pg < lo - 1 || pg > hi + 1) { req.abort.abort(); this.loading.delete(pg); }
      for (let pg = lo; pg <= hi; pg++) this.page(pg);
    }, 60);
  }

  page(pg) {
    if (this.pages.has(pg) || this.loading.has(pg)) return;
    const req = { abort: new AbortController() };
    this.aborter.signal.addEventListener('abort', () => req.abort.abort(), { once: true });
    req.promise = fetchPage(this.params, pg, req.abort.signal).then((r) => this.loaded(pg, r, req), (e) => this.failed(pg, e, req));
    this.loading.set(pg, req);
  }

  loaded(pg, r, req) {
    if (this.loading.get(pg) === req) this.loading.delete(pg);
    const byIndex = new Map(r.steps.map((s) => [s.step_index, s]));
    for (const s of r.steps) this.byId.set(s.step_id, s.step_index);
    this.pages.set(pg, byIndex);
    if (this.pages.size > MAX_PAGES) this.pages.delete(this.pages.keys().next().value);
    if (this.list) this.list.refresh(pg * PAGE, pg * PAGE + PAGE - 1);
    if (!this.firstPainted) {
      this.firstPainted = true;
      performance.mark('pchronicle:storyline-first-rows');
      this.root.dataset.firstRowsMs = String(Math.round(performance.now() - this.t0));
    }
    return byIndex;
  }

  failed(pg, e, req) {
    if (this.loading.get(pg) === req) this.loading.delete(pg);
    if (e.name !== 'AbortError') this.app.notice('Could not load steps: ' + e.message, { error: true });
  }

  step(i) {
    const pg = this.pages.get(Math.floor(i / PAGE));
    return pg ? pg.get(i) : undefined;
  }

  renderRow(i, el) {
    clear(el);
    el.dataset.index = String(i);
    el.id = 'step-row-' + i;
    el.className = 'vrow' + (this.hitSet.has(i) ? ' hit' : '');
    el.setAttribute('aria-selected', i === this.selected ? 'true' : 'false');
    const s = this.step(i);
    if (!s) {
      el.append(h('div', { class: 'l1' }, h('span', { class: 'muted' }, '#' + i), h('span', { class: 'muted' }, 'loading…')));
      return;
    }
    const prev = this.step(i - 1);
    const dt = prev && prev.timestamp && s.timestamp ? new Date(s.timestamp) - new Date(prev.timestamp) : null;
    el.append(
      h('div', { class: 'l1' },
        h('span', { class: 'muted mono' }, '#' + i),
        h('span', { class: 'role role-' + s.source }, s.source),
        s.message_kind !== 'text' ? h('span', { class: 'chip' }, s.message_kind) : null,
        s.is_copied_context ? h('span', { class: 'chip', title: 'repeats earlier context; not counted' }, 'copied') : null,
        s.has_error ? h('span', { class: 'chip err' }, 'error') : null,
        h('span', { class: 'muted' }, s.timestamp ? time(s.timestamp).slice(11) : ''),
        dt !== null ? h('span', { class: 'muted', title: 'since the previous step' }, '+' + duration(dt)) : null,
        s.prompt_tokens !== null || s.completion_tokens !== null ? h('span', { title: 'prompt / completion tokens' }, '↑' + int(s.prompt_tokens) + ' ↓' + int(s.completion_tokens)) : null,
        s.cost_usd !== null ? h('span', null, usd(s.cost_usd)) : null),
      h('div', { class: 'l2' }, visible(stripAnsi(previewOf(s)))),
      h('div', { class: 'l3' }, h('span', { class: 'chips' },
        s.calls.map((c) => h('span', { class: 'chip ' + statusClass(c) }, '⚙ ' + c.function_name + ' ' + statusMark(c))),
        s.results_of.map((c) => h('span', { class: 'chip ' + (c.result_link === 'orphan' ? 'warn' : '') }, (c.result_link === 'orphan' ? 'orphan result ' : '↩ ') + c.function_name)))));
  }

  // ---- selection and detail ---------------------------------------------------

  select(i, center = false) {
    if (i < 0 || i >= this.n) return;
    const old = this.selected;
    this.selected = i;
    this.list.refresh(old, old);
    this.list.scrollIntoView(i, center);
    this.list.refresh(i, i);
    this.list.scroller.setAttribute('aria-activedescendant', 'step-row-' + i);
    this.app.replace({ ...this.params, step: i, find: this.findText || '' });
    this.showDetail(i);
  }

  async showDetail(i) {
    const seq = ++this.detailSeq;
    clear(this.detail).appendChild(h('p', { class: 'muted' }, 'Loading step ' + i + '…'));
    let r;
    try {
      r = await api.get('storyline/bodies', { ...this.params, from: i, limit: 1, max_chars: DETAIL_CHARS }, { signal: this.aborter.signal });
    } catch (e) {
      if (seq === this.detailSeq && e.name !== 'AbortError') clear(this.detail).appendChild(errorBox(e));
      return;
    }
    if (seq !== this.detailSeq) return;
    const s = r.steps[0];
    clear(this.detail);
    if (!s) { this.detail.appendChild(h('p', null, 'No step ' + i + '.')); return; }
    this.detail.dataset.step = String(i);
    const q = this.findText;
    add(this.detail,
      h('h2', null, 'Step ' + i + ' ', h('span', { class: 'role role-' + s.source }, s.source), ' ', h('span', { class: 'muted' }, s.message_kind + ' · id ' + s.step_id)),
      h('dl', { class: 'kv' },
        s.timestamp ? [h('dt', null, 'time'), h('dd', null, time(s.timestamp))] : null,
        s.model_name ? [h('dt', null, 'model'), h('dd', null, s.model_name)] : null,
        [h('dt', null, 'tokens'), h('dd', null, `prompt ${int(s.prompt_tokens)} · completion ${int(s.completion_tokens)} · cached ${int(s.cached_tokens)} · reasoning ${int(s.reasoning_tokens)}`)],
        s.cost_usd !== null ? [h('dt', null, 'cost'), h('dd', null, usd(s.cost_usd))] : null,
        s.is_copied_context ? [h('dt', null, 'copied'), h('dd', null, 'repeats earlier context (not counted in totals)')] : null),
      this.body('message', 'Message', s.message, s, q),
      s.reasoning ? h('details', { class: 'reasoning' }, h('summary', null, 'Reasoning (' + bytes(s.reasoning.bytes) + ')'), this.body('reasoning', null, s.reasoning, s, q)) : null,
      this.body('observation', 'Observation', s.observation, s, q),
      s.calls.length ? h('h3', null, 'Tool calls (' + s.calls.length + ')') : null,
      this.callsWithSubagents(s, q),
      s.results_of.length ? h('h3', null, 'Results of earlier calls (' + s.results_of.length + ')') : null,
      s.results_of.map((c) => this.callBox(c, s, q, true)),
      s.extra ? h('details', null, h('summary', null, 'extra'), h('pre', { class: 'body-text' }, pretty(s.extra))) : null);
    if (!s.message && !s.reasoning && !s.observation && !s.calls.length && !s.results_of.length) {
      this.detail.appendChild(h('p', { class: 'muted empty-note' }, 'This step records no message, reasoning, observation or tool call.'));
    }
  }

  // body shows one text cut to a preview, with its true size, Load all and
  // Download. callIndex names a call's arguments or result.
  body(field, heading, t, s, q, callIndex) {
    if (!t) return null;
    // Messages and reasoning of people and agents are Markdown; the rest
    // (a tool's message too) is what a program printed or read, shown as
    // it is, monospaced.
    const md = field === 'reasoning' || (field === 'message' && !TOOL_ROLES.has(s.source));
    // Arguments cut to a preview are not JSON: they show as they are.
    const show = (v, whole) => (md ? markdown(v, q) : plain(field === 'arguments' && whole ? pretty(v) : v, q));
    const pre = h(md ? 'div' : 'pre', { class: md ? 'body-md' : 'body-text', 'data-field': field }, show(t.value, !t.truncated));
    if (md) {
      const raw = h('button', { type: 'button', class: 'link raw-toggle', title: 'show the text as it is, without Markdown' }, 'raw');
      raw.addEventListener('click', () => {
        const now = pre.classList.toggle('raw');
        raw.textContent = now ? 'formatted' : 'raw';
        clear(pre).append(...(now ? plain(pre.dataset.full ?? t.value, q) : markdown(pre.dataset.full ?? t.value, q)));
      });
      heading = h('h3', null, heading || '', ' ', raw);
    } else if (heading) heading = h('h3', null, heading);
    const out = h('div', { class: 'body' }, heading, pre);
    if (t.truncated) {
      const note = h('div', { class: 'size-note' }, `showing the first ${int(t.value.length)} characters of ${bytes(t.bytes)}`);
      const dlHref = api.url('storyline/text', { ...this.params, step: s.step_index, field, call_index: callIndex });
      if (t.bytes <= LOAD_ALL_MAX) {
        note.appendChild(button('Load all', 'show the whole ' + field, async () => {
          try {
            // The one body alone: the step's other bodies may be far bigger.
            const full = await (await api.blob('GET', dlHref)).text();
            if (md) pre.dataset.full = full;
            clear(pre).append(...(pre.classList.contains('raw') ? plain(full, q) : show(full, true)));
            note.remove();
          } catch (e) { note.appendChild(errorBox(e)); }
        }));
      }
      const a = h('a', { href: dlHref, download: '' }, 'Download');
      a.addEventListener('click', (e) => {
        if (!api.hasKeys()) return;
        e.preventDefault();
        api.blob('GET', dlHref).then((b) => download(b, `step${s.step_index}-${field}.txt`));
      });
      note.appendChild(a);
      out.insertBefore(note, pre); // the size first: the reader sees a preview is a preview
    }
    return out;
  }

  // callsWithSubagents renders the step's calls, each call that started a
  // subagent with a link to it: the subagent references this step records
  // go to its calls in order when there is one per call, else all to the
  // one call, else they are listed after the calls.
  callsWithSubagents(s, q) {
    const subs = (this.info.links.subagents || []).filter((l) => l.key && l.ref && typeof l.ref === 'object' && l.ref.step_id === s.step_id);
    const link = (l) => h('a', { href: this.app.storylineHref(l.key), 'data-nav': true, class: 'subagent-link' }, '→ subagent ', label(refLabel(l.ref)));
    const boxes = s.calls.map((c) => this.callBox(c, s, q, false));
    if (!subs.length) return boxes;
    if (subs.length === boxes.length) boxes.forEach((b, i) => b.insertBefore(h('div', { class: 'links' }, link(subs[i])), b.children[1] || null));
    else if (boxes.length === 1) boxes[0].insertBefore(h('div', { class: 'links' }, subs.map(link)), boxes[0].children[1] || null);
    else boxes.push(h('div', { class: 'links' }, 'subagents started here: ', subs.map(link)));
    return boxes;
  }

  callBox(c, s, q, isResultHere) {
    const orphanResult = c.result_link === 'orphan';
    const noResult = c.result_status === 'missing' && c.result_link === 'none';
    const box = h('div', { class: 'call' + (orphanResult || noResult ? ' orphan' : '') + (c.result_status === 'error' ? ' error' : ''), 'data-call': c.tool_call_id });
    const title = h('h4', null, (isResultHere ? '↩ result of ' : '⚙ ') + c.function_name,
      h('span', { class: 'muted mono' }, 'id ' + (c.tool_call_id || '—')),
      h('span', { class: 'chip ' + statusClass(c) }, c.result_status), h('span', { class: 'muted' }, 'paired by ' + c.result_link));
    box.appendChild(title);
    if (orphanResult) box.appendChild(h('div', { class: 'size-note orphan-note' }, 'orphan: this result has no call in the file'));
    // A call the run ended on (a final finish, a step stopped by a limit, a
    // cut-off run) has no result: the note stands in for it.
    if (noResult || (!c.result && !orphanResult)) box.appendChild(h('div', { class: 'size-note orphan-note' }, 'orphan: no result was recorded for this call'));
    if (isResultHere && !orphanResult) {
      box.appendChild(h('div', { class: 'links' }, button('← the call, step ' + (this.byId.has(c.step_id) ? this.byId.get(c.step_id) : '?'), 'go to the step that made this call', () => this.goToStepId(c.step_id, s.step_index, -1), { class: 'goto-call' })));
    }
    if (!isResultHere) {
      if (!orphanResult) {
        add(box, c.arguments ? this.body('arguments', 'Arguments' + (c.arguments_valid ? '' : ' (not valid JSON)'), c.arguments, s, q, c.call_index)
          : h('div', { class: 'size-note' }, 'no arguments were recorded'));
      }
      if (c.result_step_id && c.result_step_id !== s.step_id) {
        box.appendChild(h('div', { class: 'links' }, button('→ result in step ' + (this.byId.has(c.result_step_id) ? this.byId.get(c.result_step_id) : 'later'), 'go to the step that carries the result', () => this.goToStepId(c.result_step_id, s.step_index, 1), { class: 'goto-result' })));
      }
    }
    add(box, this.body('result', 'Result', c.result, s, q, c.call_index));
    return box;
  }

  // goToStepId selects the step with step_id id, looking from step from in
  // direction dir through header pages when it is not among those seen.
  async goToStepId(id, from, dir) {
    if (this.byId.has(id)) { this.select(this.byId.get(id), true); return; }
    let at = dir > 0 ? from + 1 : Math.max(0, from - 1000);
    for (let tries = 0; tries < 20 && at >= 0 && at < this.n; tries++) {
      const r = await api.get('storyline/steps', { ...this.params, from: at, limit: 1000 });
      for (const st of r.steps) this.byId.set(st.step_id, st.step_index);
      if (this.byId.has(id)) { this.select(this.byId.get(id), true); return; }
      if (dir > 0) { if (r.next_from === null) break; at = r.next_from; } else { if (at === 0) break; at = Math.max(0, at - 1000); }
    }
    this.app.notice('Step ' + id + ' was not found in this Storyline.', { error: true });
  }

  // ---- find ------------------------------------------------------------------------

  async find(text, jump) {
    this.findText = text;
    this.hits = [];
    this.hitSet = new Set();
    this.hitNext = null;
    if (!text) { this.findStatus.textContent = ''; this.list.refresh(0, this.n); this.app.replace({ ...this.params, step: this.selected >= 0 ? this.selected : '' }); return; }
    this.findStatus.textContent = 'finding…';
    try {
      await this.moreHits();
    } catch (e) {
      this.findStatus.textContent = e.message;
      return;
    }
    this.list.refresh(0, this.n);
    this.app.replace({ ...this.params, step: this.selected >= 0 ? this.selected : '', find: text });
    this.updateFindStatus();
    if (jump && this.hits.length) this.nextHit(1);
  }

  async moreHits() {
    const r = await api.get('storyline/find', { ...this.params, q: this.findText, from: this.hitNext || 0, limit: 1000 });
    for (const i of r.steps) { this.hits.push(i); this.hitSet.add(i); }
    this.hitNext = r.next_from;
  }

  updateFindStatus() {
    const pos = this.hits.indexOf(this.selected);
    const more = this.hitNext !== null && this.hitNext !== undefined ? '+' : '';
    this.findStatus.textContent = this.hits.length
      ? (pos >= 0 ? `${pos + 1} of ${this.hits.length}${more} steps` : `${this.hits.length}${more} steps match`)
      : 'no step matches';
  }

  async nextHit(dir) {
    if (!this.hits.length) return;
    let target;
    if (dir > 0) {
      target = this.hits.find((i) => i > this.selected);
      if (target === undefined && this.hitNext !== null && this.hitNext !== undefined) {
        await this.moreHits();
        this.list.refresh(0, this.n);
        target = this.hits.find((i) => i > this.selected);
      }
      if (target === undefined) target = this.hits[0]; // wrap
    } else {
      const before = this.hits.filter((i) => i < this.selected);
      target = before.length ? before[before.length - 1] : this.hits[this.hits.length - 1];
    }
    this.select(target, true);
    this.updateFindStatus();
  }
}

// runPanel shows what an evaluator reads first, from the run row: the
// task and its target, every score with its explanation, and what ended
// the run (a limit, an error, an exit status). Producers name these
// differently; the panel shows the ones the run has.
function runPanel(run) {
  const extra = obj(run.extra), scores = obj(run.scores);
  const info = obj(extra.info);
  const rows = [];
  const row = (k, v, cls) => {
    if (v === undefined || v === null || v === '' || (typeof v === 'object' && !Object.keys(v).length)) return;
    rows.push(h('dt', null, k), h('dd', { class: cls || null }, typeof v === 'string' ? h('pre', { class: 'run-text' }, plain(v)) : h('pre', { class: 'run-text' }, plain(JSON.stringify(v, null, 2)))));
  };
  row('task', extra.task ?? extra.instruction ?? extra.input ?? extra.problem_statement);
  row('issue', extra.issue);
  row('target', extra.target);
  if (scores && Object.keys(scores).length) {
    rows.push(h('dt', null, 'scores'), h('dd', null, h('table', { class: 'grid scores', id: 'run-scores' },
      h('thead', null, h('tr', null, ['scorer', 'value', 'answer', 'explanation'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, Object.entries(scores).map(([name, sc]) => {
        const o = obj(sc);
        const v = typeof sc === 'object' && sc !== null ? o.value : sc;
        return h('tr', null, h('th', { scope: 'row' }, label(name)), h('td', { class: 'mono' }, plain(typeof v === 'string' ? v : JSON.stringify(v ?? null))),
          h('td', { class: 'mono' }, o.answer != null ? plain(String(o.answer)) : '—'), h('td', null, o.explanation != null ? plain(String(o.explanation)) : '—'));
      })))));
  }
  row('score details', extra.score_details);
  row('ended by limit', extra.limit, 'ended');
  row('error', extra.error, 'ended');
  row('exit status', info.exit_status ?? extra.exit_status, 'ended');
  row('submission', info.submission);
  row('patch', extra.git_patch);
  if (!rows.length) return null;
  const ended = extra.limit || extra.error || info.exit_status;
  return h('details', { id: 'run-panel', open: innerHeight >= 720 }, h('summary', null, 'Run: task, target, scores' + (ended ? ' and what ended it' : '')), h('dl', { class: 'kv run-kv' }, rows));
}

function obj(v) {
  if (typeof v === 'string') { try { v = JSON.parse(v); } catch { return {}; } }
  return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
}

function card(k, v) {
  return h('div', { class: 'card' }, h('div', { class: 'k' }, k), h('div', { class: 'v' }, v));
}

function refLabel(ref) {
  if (!ref) return '?';
  if (typeof ref === 'string') return ref;
  return ref.trajectory_path || ref.child_session_id || ref.session_id || ref.trajectory_id || JSON.stringify(ref);
}

function previewOf(s) {
  const t = (s.message && s.message.value) || (s.observation && s.observation.value) || (s.reasoning && s.reasoning.value) || '';
  if (t) return t.replace(/\s+/g, ' ');
  if (s.calls.length) return s.calls.map((c) => c.function_name + '(' + ((c.arguments && c.arguments.value) || '').replace(/\s+/g, ' ') + ')').join('; ');
  if (s.results_of.length) return s.results_of.map((c) => ((c.result && c.result.value) || '').replace(/\s+/g, ' ')).join('; ');
  return '';
}

function statusClass(c) {
  return c.result_status === 'error' ? 'err' : c.result_status === 'missing' ? 'warn' : 'ok';
}

function statusMark(c) {
  return c.result_status === 'error' ? '✗' : c.result_status === 'missing' ? '…' : '✓';
}

function pretty(v) {
  try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
}
