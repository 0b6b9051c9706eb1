// Readable trajectory text, built only from elements and text nodes: a
// Markdown subset for messages (raw HTML in them stays text), plain text
// for observations and results, and for both: ANSI escape sequences
// stripped, bidirectional and invisible characters shown as visible marks
// (a right-to-left override cannot reverse what follows it), and inline
// images (data: URLs, image content parts) replaced by a placeholder with
// their type and size and a download of their bytes. See docs/web.md
// "Transcripts".
import { h, highlight, download } from './dom.js';
import { bytes } from './fmt.js';

// ANSI: CSI sequences (colors, cursor moves), OSC sequences (titles,
// hyperlinks) and the two-byte escapes.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

// stripAnsi removes terminal escape sequences.
export function stripAnsi(s) {
  return String(s).replace(ANSI, '');
}

// INVISIBLE are the characters shown as marks: bidirectional controls,
// zero-width spaces and joiners that change nothing visible but what is
// read (ZWJ and ZWNJ stay: emoji and scripts need them), the byte-order
// mark, the soft hyphen, and C0 controls other than tab and newline.
const INVISIBLE = /[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad\u180e\x00-\x08\x0b-\x1f\x7f]/g;

// NAMES are the marks' labels for the common ones.
const NAMES = {
  '\u202e': 'RLO', '\u202d': 'LRO', '\u202a': 'LRE', '\u202b': 'RLE', '\u202c': 'PDF',
  '\u2066': 'LRI', '\u2067': 'RLI', '\u2068': 'FSI', '\u2069': 'PDI', '\u200e': 'LRM', '\u200f': 'RLM',
  '\u061c': 'ALM', '\u200b': 'ZWSP', '\ufeff': 'BOM', '\u00ad': 'SHY', '\u2060': 'WJ', '\x1b': 'ESC', '\r': 'CR',
};

function mark(ch) {
  const cp = ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
  return h('span', { class: 'invisible', title: 'U+' + cp + ' (an invisible character)' }, '⟨' + (NAMES[ch] || 'U+' + cp) + '⟩');
}

// visible returns s as nodes with invisible characters as marks and each
// occurrence of needle marked.
export function visible(s, needle) {
  const str = String(s);
  const out = [];
  let i = 0;
  INVISIBLE.lastIndex = 0;
  for (let m; (m = INVISIBLE.exec(str));) {
    // A CR before a LF is a line end, not a hidden character.
    if (m[0] === '\r' && str[m.index + 1] === '\n') continue;
    if (m.index > i) out.push(...highlight(str.slice(i, m.index), needle));
    out.push(mark(m[0]));
    i = m.index + 1;
  }
  if (i < str.length || out.length === 0) out.push(...highlight(str.slice(i), needle));
  return out;
}

// label is one short value (a file name, a session id, an agent name) as
// an isolated span: its direction cannot leak into the text around it, and
// its invisible characters show.
export function label(s, cls) {
  return h('bdi', { class: 'label' + (cls ? ' ' + cls : '') }, visible(s == null ? '' : s));
}

// DATA_URL finds inline images in text: a data: URL of an image type.
const DATA_URL = /data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]{16,})/gi;

// plain renders a body as text: ANSI stripped, invisibles shown, images as
// placeholders.
export function plain(s, needle) {
  return withImages(stripAnsi(s), (t) => visible(t, needle));
}

function withImages(s, render) {
  const out = [];
  let i = 0;
  DATA_URL.lastIndex = 0;
  for (let m; (m = DATA_URL.exec(s));) {
    if (m.index > i) out.push(...render(s.slice(i, m.index)));
    out.push(imagePlaceholder(m[1].toLowerCase(), m[2].replace(/\s+/g, '')));
    i = m.index + m[0].length;
  }
  if (i < s.length || out.length === 0) out.push(...render(s.slice(i)));
  return out;
}

// imagePlaceholder stands for an image: its type, its size and a download
// of its bytes. The page never displays it: an image from a trajectory is
// as hostile as its text.
export function imagePlaceholder(type, b64) {
  const size = b64 ? Math.floor(b64.replace(/=+$/, '').length * 3 / 4) : null;
  const box = h('span', { class: 'image-ph', role: 'img', 'aria-label': 'image ' + (type || '') },
    'image', type ? ' · ' + type : '', size !== null ? ' · ' + bytes(size) : '');
  if (b64) {
    const b = h('button', { type: 'button', class: 'link' }, 'download');
    b.addEventListener('click', () => {
      try {
        const bin = atob(b64);
        const buf = new Uint8Array(bin.length);
        for (let k = 0; k < bin.length; k++) buf[k] = bin.charCodeAt(k);
        download(new Blob([buf], { type: 'application/octet-stream' }), 'image.' + ((type || '').split('/')[1] || 'bin').replace(/[^a-z0-9]/g, ''));
      } catch (e) {
        b.textContent = 'not valid base64';
        b.disabled = true;
      }
    });
    box.append(' ', b);
  }
  return box;
}

// ---- Markdown --------------------------------------------------------------

// markdown renders a message: content parts (a JSON array of {type, text}
// or image parts, as the OpenAI and Anthropic APIs write them) part by
// part, and text as a Markdown subset: headings, paragraphs with their line
// breaks, lists, quotes, rules, fenced code (monospaced), pipe tables
// (monospaced), inline code, strong, emphasis, links (their target shown as
// text, never followed) and images (placeholders).
export function markdown(s, needle) {
  // Past MARKDOWN_MAX a text is shown plain: the inline patterns cost more
  // than linear time on hostile input (many unmatched backticks).
  if (String(s).length > MARKDOWN_MAX) return plain(s, needle);
  const parts = contentParts(s);
  if (parts) return parts.map((p) => part(p, needle));
  return blocks(stripAnsi(s).replace(/\r\n/g, '\n').split('\n'), needle);
}

function contentParts(s) {
  const t = String(s).trimStart();
  if (!t.startsWith('[{') && !t.startsWith('{"type"')) return null;
  let v;
  try { v = JSON.parse(t); } catch { return null; }
  if (!Array.isArray(v)) v = [v];
  if (!v.length || !v.every((p) => p && typeof p === 'object' && typeof p.type === 'string')) return null;
  return v;
}

function part(p, needle) {
  const text = typeof p.text === 'string' ? p.text : typeof p.content === 'string' ? p.content : null;
  if (text !== null && /text|thinking|reasoning/.test(p.type)) return h('div', { class: 'md-part' }, markdown(text, needle));
  if (/image/.test(p.type)) {
    const src = p.image_url && typeof p.image_url === 'object' ? p.image_url.url : p.image_url || (p.source && (p.source.data || p.source.url)) || '';
    const m = /^data:(image\/[a-z0-9.+-]+);base64,(.*)$/is.exec(String(src));
    const type = m ? m[1] : (p.source && p.source.media_type) || p.mime_type || '';
    const b64 = m ? m[2] : p.source && p.source.type === 'base64' ? p.source.data : '';
    return h('div', { class: 'md-part' }, imagePlaceholder(type, b64), !m && src && !b64 ? h('span', { class: 'muted' }, ' ', visible(String(src).slice(0, 200))) : null);
  }
  return h('div', { class: 'md-part' }, h('span', { class: 'chip' }, p.type), ' ', h('pre', { class: 'md-code' }, plain(JSON.stringify(p, null, 2), needle)));
}

const MARKDOWN_MAX = 200_000;

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const TABLE = /^\s*\|.*\|\s*$/;

function blocks(lines, needle) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence); i++) body.push(lines[i]);
      i++;
      out.push(h('pre', { class: 'md-code', 'data-lang': m[2] || null }, h('code', null, plain(body.join('\n'), needle))));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      out.push(h('div', { class: 'md-h md-h' + m[1].length, role: 'heading', 'aria-level': String(Math.min(6, m[1].length + 3)) }, inline(m[2], needle)));
      i++;
      continue;
    }
    if (RULE.test(line)) { out.push(h('hr')); i++; continue; }
    if (QUOTE.test(line)) {
      const body = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) body.push(m[1]);
      out.push(h('blockquote', null, blocks(body, needle)));
      continue;
    }
    if (TABLE.test(line) && i + 1 < lines.length && /^\s*\|?[\s:|-]+\|[\s:|-]*$/.test(lines[i + 1])) {
      const body = [];
      for (; i < lines.length && TABLE.test(lines[i]); i++) body.push(lines[i]);
      out.push(h('pre', { class: 'md-code md-table' }, plain(body.join('\n'), needle)));
      continue;
    }
    // A list starts at an item indented less than four spaces (more is
    // code, shown as a paragraph): each block must consume its first line.
    if ((m = ITEM.exec(line)) && m[1].length < 4) {
      const ordered = /\d/.test(m[2]);
      const list = h(ordered ? 'ol' : 'ul');
      let li = null;
      for (; i < lines.length; i++) {
        const l = lines[i];
        if ((m = ITEM.exec(l)) && /\d/.test(m[2]) === ordered && m[1].length < 4) {
          li = h('li', null, inline(m[3], needle));
          list.appendChild(li);
        } else if (l.trim() && /^\s+/.test(l) && li) {
          li.append('\n', ...inline(l.trim(), needle));
        } else break;
      }
      out.push(list);
      continue;
    }
    const para = [];
    for (; i < lines.length && lines[i].trim() && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) && !QUOTE.test(lines[i]) && !(para.length && ITEM.test(lines[i])); i++) para.push(lines[i]);
    out.push(h('p', { class: 'md-p' }, inline(para.join('\n'), needle)));
  }
  return out;
}

// INLINE matches, in order: code spans (on one line, bounded, so that a
// line of unmatched backticks costs linear time), images, links, strong,
// emphasis.
const INLINE = /(`+)([^`\n]|[^`\n][^\n]{0,1000}?[^`\n])\1(?!`)|!\[([^\]\n]*)\]\(([^)\s]*)[^)\n]*\)|\[([^\]\n]+)\]\(([^)\s]+)[^)\n]*\)|\*\*(?=\S)([^*\n]*?\S)\*\*|(?<![\w])__(?=\S)([^_\n]*?\S)__(?![\w])|\*(?=[^\s*])([^*\n]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\w])/g;

function inline(s, needle) {
  const text = (t) => withImages(t, (u) => visible(u, needle));
  const out = [];
  let i = 0;
  INLINE.lastIndex = 0;
  for (let m; (m = INLINE.exec(s));) {
    if (m.index > i) out.push(...text(s.slice(i, m.index)));
    if (m[1] !== undefined) out.push(h('code', { class: 'md-inline' }, visible(m[2], needle)));
    else if (m[4] !== undefined) out.push(markdownImage(m[3], m[4], needle));
    else if (m[5] !== undefined) out.push(h('span', { class: 'md-link' }, visible(m[5], needle)), h('span', { class: 'md-url muted' }, ' (', visible(m[6], needle), ')'));
    else if (m[7] !== undefined || m[8] !== undefined) out.push(h('strong', null, visible(m[7] ?? m[8], needle)));
    else out.push(h('em', null, visible(m[9] ?? m[10], needle)));
    i = m.index + m[0].length;
  }
  if (i < s.length || out.length === 0) out.push(...text(s.slice(i)));
  return out;
}

// markdownImage is the placeholder of ![alt](target): the bytes of a data:
// URL, else the target as text.
function markdownImage(alt, target, needle) {
  const m = /^data:(image\/[a-z0-9.+-]+);base64,(.*)$/is.exec(target);
  const ph = m ? imagePlaceholder(m[1].toLowerCase(), m[2]) : h('span', { class: 'image-ph', role: 'img', 'aria-label': 'image' }, 'image · ', visible(target, needle));
  if (alt) ph.insertBefore(h('span', null, '“', visible(alt, needle), '”'), ph.firstChild.nextSibling);
  return ph;
}
