// Word-level text difference for Compare: the words only in A are marked
// deleted, the words only in B inserted, built as elements and text nodes.
import { h } from './dom.js';
import { visible, stripAnsi } from './text.js';

// MAX_CELLS bounds the alignment table (tokens of A × tokens of B) after
// the common start and end are set aside; beyond it the middle is one
// replaced block, which is still right, only coarser.
const MAX_CELLS = 4_000_000;

function tokens(s) {
  return stripAnsi(s).match(/\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) || [];
}

// ops returns the edit script of a into b: [op, text] with op '=', '-', '+'.
export function ops(a, b) {
  const x = tokens(a), y = tokens(b);
  let pre = 0;
  while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre++;
  let suf = 0;
  while (suf < x.length - pre && suf < y.length - pre && x[x.length - 1 - suf] === y[y.length - 1 - suf]) suf++;
  const xs = x.slice(pre, x.length - suf), ys = y.slice(pre, y.length - suf);
  const out = [];
  const push = (op, t) => {
    if (!t) return;
    const last = out[out.length - 1];
    if (last && last[0] === op) last[1] += t; else out.push([op, t]);
  };
  push('=', x.slice(0, pre).join(''));
  if ((xs.length + 1) * (ys.length + 1) > MAX_CELLS) {
    push('-', xs.join(''));
    push('+', ys.join(''));
  } else {
    // Longest common subsequence of tokens, from the end, then walked from
    // the start.
    const n = xs.length, m = ys.length, w = m + 1;
    const L = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        L[i * w + j] = xs[i] === ys[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n && j < m) {
      if (xs[i] === ys[j]) { push('=', xs[i]); i++; j++; } else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) { push('-', xs[i]); i++; } else { push('+', ys[j]); j++; }
    }
    for (; i < n; i++) push('-', xs[i]);
    for (; j < m; j++) push('+', ys[j]);
  }
  push('=', x.slice(x.length - suf).join(''));
  return out;
}

// sides renders the difference as two node lists: A with its deleted
// words marked, B with its inserted words marked.
export function sides(a, b) {
  const A = [], B = [];
  for (const [op, t] of ops(a, b)) {
    if (op === '=') { A.push(...visible(t)); B.push(...visible(t)); } else if (op === '-') A.push(h('del', null, visible(t))); else B.push(h('ins', null, visible(t)));
  }
  return { a: A, b: B };
}
