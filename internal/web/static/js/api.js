// The page's one way to the server: same-origin fetches of /api/ routes,
// with the Directory keys from Settings sent as headers when set.

export const ACCESS_KEY = 'pchronicle.catalog.access_key';
export const SECRET_KEY = 'pchronicle.catalog.secret_key';

// ApiError is a failed request with the server's {code, message}.
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || 'HTTP ' + status);
    this.status = status;
    this.code = (body && body.code) || 'http_' + status;
    this.requestId = body && body.request_id;
    this.body = body;
  }
}

function storedKey(name) {
  try { return localStorage.getItem(name) || ''; } catch { return ''; }
}

// authHeaders are the Directory key headers (empty without keys).
export function authHeaders() {
  const h = {};
  const ak = storedKey(ACCESS_KEY), sk = storedKey(SECRET_KEY);
  if (ak) h['X-Catalog-Access-Key'] = ak;
  if (sk) h['X-Catalog-Secret-Key'] = sk;
  return h;
}

// url builds /api/<path>?<params>, dropping empty parameters; an array
// value repeats its parameter.
export function url(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else q.set(k, String(v));
  }
  const s = q.toString();
  return '/api/' + path + (s ? '?' + s : '');
}

// unauthorized observers are told of every 401: a Directory wants keys.
const unauthorized = new Set();
export function onUnauthorized(fn) { unauthorized.add(fn); return () => unauthorized.delete(fn); }

// observers are told the snapshot_id of every answer (the page pins one).
const observers = new Set();
export function onSnapshot(fn) { observers.add(fn); return () => observers.delete(fn); }

// get fetches JSON; opts.etag sends If-None-Match and returns null on 304.
export async function get(path, params, opts = {}) {
  return request('GET', url(path, params), undefined, opts);
}

export async function post(path, body, opts = {}) {
  return request('POST', url(path), body, opts);
}

async function request(method, u, body, opts) {
  const headers = { Accept: 'application/json', ...authHeaders() };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (opts.etag) headers['If-None-Match'] = '"' + opts.etag + '"';
  const res = await fetch(u, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    signal: opts.signal, credentials: 'same-origin', cache: 'no-store',
  });
  if (res.status === 304) return null;
  let data = null;
  const ctype = res.headers.get('Content-Type') || '';
  if (ctype.includes('json')) data = await res.json();
  if (!res.ok) {
    const e = new ApiError(res.status, data);
    if (res.status === 401) unauthorized.forEach((fn) => fn(e));
    throw e;
  }
  if (data && data.snapshot_id && !opts.quiet) observers.forEach((fn) => fn(data.snapshot_id));
  return data;
}

// blob fetches a download (CSV, an export) as a Blob, with the key headers.
export async function blob(method, u, body) {
  const headers = { ...authHeaders() };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(u, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  if (!res.ok) {
    let data = null;
    try { data = await res.json(); } catch { /* not JSON */ }
    const e = new ApiError(res.status, data);
    if (res.status === 401) unauthorized.forEach((fn) => fn(e));
    throw e;
  }
  return res.blob();
}

// hasKeys says whether Settings holds Directory keys.
export function hasKeys() { return storedKey(ACCESS_KEY) !== '' || storedKey(SECRET_KEY) !== ''; }
