// DOM helpers. Everything a trajectory holds is hostile input: it reaches
// the page only as text nodes (textContent), never as markup, and no URL
// is ever built from it except as an encoded query parameter of our own
// routes. See docs/web.md "Security".

// h creates an element: attrs sets attributes and properties (on: {event:
// handler}), children are nodes, strings (text nodes), arrays or null.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'on') {
        for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      } else if (k === 'class') {
        el.className = v;
      } else if (k === 'dataset') {
        Object.assign(el.dataset, v);
      } else if (k === 'value' || k === 'checked' || k === 'selected') {
        el[k] = v;
      } else if (k === 'href') {
        el.setAttribute('href', safeHref(v));
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

// add appends children to el as h does (null skipped, arrays flattened,
// strings as text).
export function add(el, ...children) {
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// safeHref admits only this origin's paths and blob: URLs the page made:
// a javascript: or data: URL can never become a link.
function safeHref(v) {
  const s = String(v);
  if (s.startsWith('/') && !s.startsWith('//')) return s;
  if (s.startsWith('blob:' + location.origin + '/')) return s;
  return '#';
}

// clear removes every child of el.
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// highlight returns text with every case-insensitive occurrence of needle
// wrapped in <mark> — built from text nodes, so the text stays text.
export function highlight(str, needle) {
  const out = [];
  if (!needle) return [String(str)];
  const s = String(str), low = s.toLowerCase(), n = needle.toLowerCase();
  let i = 0;
  for (;;) {
    const j = low.indexOf(n, i);
    if (j < 0 || n.length === 0) break;
    if (j > i) out.push(s.slice(i, j));
    out.push(h('mark', null, s.slice(j, j + n.length)));
    i = j + n.length;
  }
  out.push(s.slice(i));
  return out;
}

// download saves a Blob under name.
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
