// The console's REST client (api/openapi.yaml): bearer token from sessionStorage, errors as
// ApiError with the API's {error: {code, message, details}}, keyset paging with cursors.

const TOKEN_KEY = 'kiln.token';
// Relative, so the console also works behind a reverse proxy under a path prefix.
const BASE = 'api/v1';

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}
export function setToken(t) {
  sessionStorage.setItem(TOKEN_KEY, t);
}
export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

let unauthorizedHandler = null;
// Called when kilnd answers 401 to the signed-in token (revoked or expired): sign out.
export function onUnauthorized(fn) {
  unauthorizedHandler = fn;
}

export function qs(params) {
  const parts = [];
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

// api('/pods?limit=10') -> parsed JSON; throws ApiError. opts: {method, body, token}, or
// {raw, contentType} to send a text body as it is (a bundle's YAML).
export async function api(path, opts = {}) {
  const token = opts.token || getToken();
  const headers = { Accept: 'application/json', Authorization: `Bearer ${token}` };
  const init = { method: opts.method || 'GET', headers, cache: 'no-store' };
  if (opts.raw !== undefined) {
    headers['Content-Type'] = opts.contentType || 'text/plain';
    init.body = opts.raw;
  } else if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(BASE + path, init);
  } catch (e) {
    throw new ApiError(0, 'unreachable', `kilnd does not answer (${e.message})`);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = (data && data.error) || {};
    if (res.status === 401 && !opts.token && unauthorizedHandler) unauthorizedHandler();
    throw new ApiError(res.status, err.code || `http_${res.status}`, err.message || res.statusText || `HTTP ${res.status}`, err.details);
  }
  return data;
}

// Every item of a paginated list, following next_cursor. onPage(itemsSoFar) reports progress.
export async function fetchAll(path, params = {}, { limit = 1000, onPage, isCancelled } = {}) {
  const items = [];
  let cursor = '';
  for (;;) {
    const page = await api(path + qs({ ...params, limit, cursor }));
    for (const it of page.items) items.push(it);
    if (onPage) onPage(items);
    if (!page.next_cursor || (isCancelled && isCancelled())) return items;
    cursor = page.next_cursor;
  }
}

// The signed-in token: {token_id, name, role, host} (GET /whoami). Throws ApiError for a bad
// token, and for agent and enrol tokens, which cannot use the console.
export const CONSOLE_ROLES = ['viewer', 'operator', 'admin'];
export async function whoami(token) {
  const me = await api('/whoami', { token });
  if (!me || !CONSOLE_ROLES.includes(me.role)) {
    throw new ApiError(403, 'not_a_console_token', `A ${me && me.role ? me.role : 'non-user'} token cannot use the console.`);
  }
  return me;
}
