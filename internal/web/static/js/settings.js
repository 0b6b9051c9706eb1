// Settings: Directory keys (kept in this browser's localStorage and sent
// as X-Catalog-Access-Key / X-Catalog-Secret-Key on API requests) and the
// color theme.
import { ACCESS_KEY, SECRET_KEY } from './api.js';
import { h } from './dom.js';

export const title = 'Settings';

function get(k) { try { return localStorage.getItem(k) || ''; } catch { return ''; } }

export function render(root, app) {
  const ak = h('input', { type: 'text', id: 'access-key', autocomplete: 'off', spellcheck: 'false', value: get(ACCESS_KEY) });
  const sk = h('input', { type: 'password', id: 'secret-key', autocomplete: 'off', value: get(SECRET_KEY) });
  const status = h('p', { role: 'status', class: 'muted' });
  const form = h('form', { class: 'settings', 'aria-labelledby': 'keys-h' },
    h('h2', { id: 'keys-h' }, 'Keys'),
    h('p', { class: 'muted' }, 'A server that serves a Directory of catalogs asks for keys for the Datasets that are not public. ' +
      'They are kept in this browser only (localStorage) and sent with every API request of this page. Without keys, public Datasets stay browsable.'),
    h('label', null, 'Access key', ak),
    h('label', null, 'Secret key', sk),
    h('div', { class: 'toolbar' }, h('button', { type: 'submit', class: 'primary' }, 'Save keys'), h('button', { type: 'button', id: 'clear-keys' }, 'Forget keys')),
    status);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    try {
      for (const [k, inp] of [[ACCESS_KEY, ak], [SECRET_KEY, sk]]) {
        if (inp.value.trim()) localStorage.setItem(k, inp.value.trim()); else localStorage.removeItem(k);
      }
      status.textContent = 'Saved.';
    } catch (err) { status.textContent = 'This browser does not allow storing keys: ' + err.message; return; }
    // The Datasets these keys see: the selector and the views use them now.
    app.adopt().then(() => {
      const n = app.catalog.datasets.length;
      status.textContent = `Saved: ${n} Dataset${n === 1 ? '' : 's'} visible with these keys.`;
      const back = app.params().get('back');
      if (back && back.startsWith('/') && !back.startsWith('//')) status.append(' ', h('a', { href: back, 'data-nav': true, id: 'keys-back' }, 'Back to where you were'));
    }, (err) => { status.textContent = 'Saved, but the server refused them: ' + err.message; });
  });
  form.querySelector('#clear-keys').addEventListener('click', () => {
    try { localStorage.removeItem(ACCESS_KEY); localStorage.removeItem(SECRET_KEY); } catch { /* nothing stored */ }
    ak.value = sk.value = '';
    status.textContent = 'Keys forgotten.';
    app.adopt().catch(() => { /* no public Dataset: the Catalog will say so */ });
  });
  let theme = '';
  try { theme = localStorage.getItem('pchronicle.theme') || ''; } catch { /* ignore */ }
  const themeSel = h('select', { id: 'theme-select', 'aria-label': 'color theme' },
    h('option', { value: '' }, 'system'), h('option', { value: 'light' }, 'light'), h('option', { value: 'dark' }, 'dark'));
  themeSel.value = theme;
  themeSel.addEventListener('change', () => app.setTheme(themeSel.value));
  root.append(h('h1', null, 'Settings'), form, h('section', { class: 'settings' }, h('h2', null, 'Theme'), h('label', null, 'Color theme ', themeSel)));
}
