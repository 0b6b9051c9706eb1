// The Explorer's shell: routing (every view's state is in its URL), the
// pinned Snapshot and its "new snapshot" notice, the Dataset selector,
// theme and keyboard.
import * as api from './api.js';
import { h, clear } from './dom.js';
import { age } from './fmt.js';
import { errorBox } from './ui.js';
import * as catalog from './catalog.js';
import * as runs from './runs.js';
import * as storyline from './storyline.js';
import * as compare from './compare.js';
import * as search from './search.js';
import * as sql from './sql.js';
import * as settings from './settings.js';

const views = {
  '/': catalog, '/catalog': catalog, '/runs': runs, '/storyline': storyline,
  '/compare': compare, '/search': search, '/sql': sql, '/settings': settings,
};

const THEME = 'pchronicle.theme';
const POLL_MS = 5000;

// app is what every view gets: the pinned catalog, the URL state and the
// keyboard hooks it may set.
const app = {
  // directory: this server serves a Directory (docs/web.md, "Directory
  // mode"): keys from Settings, no pinned Snapshot.
  directory: (document.querySelector('meta[name="pchronicle-mode"]') || {}).content === 'directory',
  catalog: null,
  pinned: '',
  keys: {},
  main: null,

  params() { return new URLSearchParams(location.search); },

  // dataset is the Dataset the URL names, else the default one, else ''
  // (every Dataset, where a view allows it).
  dataset() {
    const q = this.params();
    const p = q.get('dataset') || q.get('a_dataset'); // Compare names its Datasets per side
    if (p) return p;
    if (!this.catalog) return '';
    return this.catalog.default_dataset || (this.catalog.datasets.length === 1 ? this.catalog.datasets[0].name : '');
  },

  datasetInfo(name) {
    return ((this.catalog && this.catalog.datasets) || []).find((d) => d.name === name);
  },

  // href is a link to path with params (empty values dropped).
  href(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v === undefined || v === null || v === '') continue;
      if (Array.isArray(v)) v.forEach((x) => q.append(k, x)); else q.set(k, String(v));
    }
    const s = q.toString();
    return path + (s ? '?' + s : '');
  },

  go(path, params, opts = {}) {
    const u = this.href(path, params);
    if (!opts.replace) keepScroll();
    if (opts.replace) history.replaceState(opts.state || null, '', u);
    else history.pushState(opts.state || null, '', u);
    render();
  },

  // replace records view state in the URL without rendering again.
  replace(params, state) {
    history.replaceState(state === undefined ? history.state : state, '', this.href(location.pathname, params));
  },

  notice(message, opts = {}) { showNotice(message, opts); },
  setTheme(t) { setTheme(t); },

  storylineHref(key, extra) {
    return this.href('/storyline', { dataset: key.dataset, file: key._file_, session_id: key.session_id, ...extra });
  },
};

let cleanup = null;
let renderSeq = 0;

async function render() {
  const seq = ++renderSeq;
  // Opening a view is the reader's move: it shows the newest Snapshot.
  // Only the view on screen keeps the one it was opened on.
  if (newer) {
    try { await adopt(); } catch { /* keep the pinned one; the view will say what failed */ }
    if (seq !== renderSeq) return;
  }
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  app.keys = {};
  const view = views[location.pathname] || null;
  const main = app.main;
  clear(main);
  main.className = '';
  for (const a of document.querySelectorAll('.views a')) {
    const mine = view && (a.dataset.view === (view === catalog ? 'catalog' : location.pathname.slice(1)));
    if (mine) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  syncDatasetSelect();
  if (!view) {
    main.appendChild(h('div', null, h('h1', null, 'Not found'), h('p', null, 'No view at ', h('code', null, location.pathname), '. ',
      h('a', { href: '/', 'data-nav': true }, 'Open the Catalog'))));
    return;
  }
  document.title = view.title + ' · pchronicle';
  try {
    const c = await view.render(main, app);
    if (seq === renderSeq) cleanup = c || null; else if (c) c();
  } catch (e) {
    if (seq !== renderSeq) return;
    main.appendChild(errorBox(e));
  }
}

// ---- Snapshot pinning and the notice -------------------------------------

let newer = '';

function showNotice(message, { error = false, action = null } = {}) {
  const n = document.getElementById('notice');
  clear(n);
  n.className = 'notice' + (error ? ' error' : '');
  n.appendChild(h('span', null, message));
  if (action) n.appendChild(h('button', { type: 'button', on: { click: action.run } }, action.label));
  n.appendChild(h('button', { type: 'button', 'aria-label': 'Dismiss', on: { click: () => { n.hidden = true; } } }, '×'));
  n.hidden = false;
}

function announceNewer(id, builtAt) {
  // A Directory answers each request from a worker over the Datasets the
  // caller may see at that moment: there is no Snapshot to pin.
  if (app.directory) return;
  if (!id || id === app.pinned || id === newer) return;
  newer = id;
  showNotice(`A new snapshot is available (${id.slice(0, 12)}${builtAt ? ', built ' + age(builtAt) : ''}). ` +
    `This page keeps showing snapshot ${app.pinned.slice(0, 12)} until you switch.`, {
    action: { label: 'Show the new snapshot', run: () => switchSnapshot() },
  });
}

async function switchSnapshot() {
  await adopt();
  render();
}

async function loadCatalog() {
  const c = await api.get('catalog', null, { quiet: true });
  app.catalog = c;
  app.pinned = c.snapshot_id;
  const badge = document.getElementById('snapshot-badge');
  if (app.directory) {
    badge.textContent = 'Directory · ' + (api.hasKeys() ? 'your Datasets' : 'public Datasets');
    badge.title = 'This server serves a Directory: Settings → Keys holds your keys';
  } else {
    badge.textContent = 'snapshot ' + c.snapshot_id.slice(0, 12);
    badge.title = 'Snapshot ' + c.snapshot_id + ', built ' + c.created_at;
  }
  fillDatasetSelect();
  return c;
}

// adopt switches the page to the server's current Snapshot: when the
// reader opens a view, and after the Catalog's Refresh.
async function adopt() {
  await loadCatalog();
  newer = '';
  document.getElementById('notice').hidden = true;
}
app.adopt = adopt;

async function poll() {
  if (document.hidden || !app.pinned) return;
  try {
    const c = await api.get('catalog', null, { etag: app.pinned, quiet: true });
    if (c && c.snapshot_id !== app.pinned) announceNewer(c.snapshot_id, c.created_at);
  } catch { /* the server may be restarting: the next poll tries again */ }
}

// ---- Dataset selector -----------------------------------------------------

function fillDatasetSelect() {
  const sel = document.getElementById('dataset-select');
  clear(sel);
  const ds = app.catalog.datasets;
  if (ds.length > 1) sel.appendChild(h('option', { value: '' }, 'All Datasets'));
  for (const d of ds) sel.appendChild(h('option', { value: d.name }, d.name));
  syncDatasetSelect();
}

function syncDatasetSelect() {
  const sel = document.getElementById('dataset-select');
  if (!app.catalog) return;
  sel.value = app.dataset();
}

function onDatasetChange(e) {
  const p = app.params();
  const keep = {};
  // A Dataset change keeps the view and its query text, not its position.
  for (const k of ['q', 'sql']) if (p.get(k)) keep[k] = p.get(k);
  app.go(location.pathname === '/storyline' ? '/runs' : location.pathname, { ...keep, dataset: e.target.value });
}

// ---- Theme ------------------------------------------------------------------

function applyTheme() {
  let t = '';
  try { t = localStorage.getItem(THEME) || ''; } catch { /* private mode */ }
  if (t) document.documentElement.dataset.theme = t; else delete document.documentElement.dataset.theme;
  const b = document.getElementById('theme-toggle');
  b.setAttribute('aria-label', 'Color theme: ' + (t || 'system') + ' (click to change)');
  b.title = 'Theme: ' + (t || 'system');
}

function setTheme(t) {
  try { if (t) localStorage.setItem(THEME, t); else localStorage.removeItem(THEME); } catch { /* ignore */ }
  applyTheme();
}

function cycleTheme() {
  let t = '';
  try { t = localStorage.getItem(THEME) || ''; } catch { /* ignore */ }
  setTheme({ '': 'dark', dark: 'light', light: '' }[t]);
}

// ---- Keyboard ---------------------------------------------------------------

let lastG = 0;

function typing(el) {
  return el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable);
}

function onKey(e) {
  const help = document.getElementById('help');
  if (e.key === 'Escape') {
    if (!help.hidden) { closeHelp(); e.preventDefault(); return; }
    if (typing(document.activeElement)) { document.activeElement.blur(); app.main.focus(); e.preventDefault(); return; }
    if (app.keys.escape) { app.keys.escape(); e.preventDefault(); }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
  const k = app.keys;
  const run = (fn) => { if (fn) { e.preventDefault(); fn(); } };
  switch (e.key) {
    case '?': e.preventDefault(); openHelp(); return;
    case '/': run(k.slash); return;
    case 'j': run(k.next); return;
    case 'k': run(k.prev); return;
    case 'G': run(k.last); return;
    case 'n': run(k.findNext); return;
    case 'N': run(k.findPrev); return;
    case 'Enter': if (e.target === document.body || e.target === app.main || e.target.dataset.row !== undefined) run(k.open); return;
    case 'g':
      if (Date.now() - lastG < 800) { lastG = 0; run(k.first); } else { lastG = Date.now(); }
      return;
  }
}

let helpReturn = null;
function openHelp() {
  const help = document.getElementById('help');
  helpReturn = document.activeElement;
  help.hidden = false;
  document.getElementById('help-close').focus();
}
function closeHelp() {
  document.getElementById('help').hidden = true;
  if (helpReturn && helpReturn.focus) helpReturn.focus();
}

// ---- Start --------------------------------------------------------------------

function onClick(e) {
  const a = e.target.closest('a[data-nav]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const u = new URL(a.href, location.href);
  if (u.origin !== location.origin) return;
  e.preventDefault();
  keepScroll();
  history.pushState(null, '', u.pathname + u.search);
  render();
}

// keepScroll records the view's scroll position in its history entry, so
// that Back lands where the reader was (docs/web.md).
function keepScroll() {
  if (app.main) history.replaceState({ ...(history.state || {}), scroll: app.main.scrollTop }, '');
}

async function start() {
  app.main = document.getElementById('view');
  applyTheme();
  document.getElementById('theme-toggle').addEventListener('click', cycleTheme);
  document.getElementById('help-button').addEventListener('click', openHelp);
  document.getElementById('help-close').addEventListener('click', closeHelp);
  document.getElementById('dataset-select').addEventListener('change', onDatasetChange);
  document.addEventListener('keydown', onKey);
  document.addEventListener('click', onClick);
  window.addEventListener('popstate', render);
  api.onSnapshot((id) => { if (app.pinned && id !== app.pinned) announceNewer(id, null); });
  api.onUnauthorized(onUnauthorized);
  try {
    await loadCatalog();
  } catch (e) {
    if (e instanceof api.ApiError && e.status === 401) {
      // No Dataset without keys: the Keys page is where to go.
      app.catalog = { datasets: [], default_dataset: null, snapshot_id: '' };
      fillDatasetSelect();
      render();
      return;
    }
    clear(app.main).appendChild(errorBox(e));
    if (e instanceof api.ApiError && e.code === 'not_ready') setTimeout(start, 1000);
    return;
  }
  // A Directory's answers come from a new worker each: polling would start
  // one every few seconds for nothing to pin.
  if (!app.directory) setInterval(poll, POLL_MS);
  render();
}

// onUnauthorized leads a 401 to Settings → Keys, saying why.
function onUnauthorized(e) {
  showNotice((api.hasKeys() ? 'The server refused these keys: ' : 'This needs your Directory keys: ') + e.message, { error: true });
  if (location.pathname !== '/settings') app.go('/settings', { need: 'keys', back: location.pathname + location.search }, { replace: false });
}

start();
