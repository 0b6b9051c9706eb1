// Number, size, time and duration formatting for the views.

const nf = new Intl.NumberFormat('en-US');

export function int(v) {
  return v === null || v === undefined ? '—' : nf.format(v);
}

export function usd(v) {
  if (v === null || v === undefined) return '—';
  if (v === 0) return '$0';
  const sign = v < 0 ? '-' : '';
  v = Math.abs(v);
  return sign + '$' + (v < 0.01 ? v.toFixed(5) : v.toFixed(3));
}

export function bytes(n) {
  if (n === null || n === undefined) return '—';
  if (n < 1024) return n + ' B';
  const u = ['KB', 'MB', 'GB', 'TB'];
  let v = n, i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < u.length - 1);
  return v.toFixed(v < 10 ? 1 : 0) + ' ' + u[i];
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  const neg = ms < 0;
  ms = Math.abs(ms);
  let s;
  if (ms < 1000) s = ms + ' ms';
  else if (ms < 60000) s = (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  else if (ms < 3600000) s = Math.floor(ms / 60000) + ' m ' + Math.round((ms % 60000) / 1000) + ' s';
  else s = Math.floor(ms / 3600000) + ' h ' + Math.round((ms % 3600000) / 60000) + ' m';
  return (neg ? '-' : '') + s;
}

export function time(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$|Z$/, 'Z');
}

export function age(iso, now = Date.now()) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  const s = Math.max(0, Math.round((now - d.getTime()) / 1000));
  if (s < 60) return s + ' s ago';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  return Math.floor(s / 86400) + ' d ago';
}

// signed formats a delta with its sign.
export function signed(v, f = int) {
  if (v === null || v === undefined) return '—';
  return (v > 0 ? '+' : '') + f(v);
}
