// The public API, called with the signed-in key. The key lives in sessionStorage only: never in a
// URL, a cookie or a log. A 401 from any call signs the page out with a message saying why.

const KEY = 'bk.key';
const INFO = 'bk.keyInfo';
const TENANT = 'bk.tenant';
const NOTICE = 'bk.notice';

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  get info() {
    try { return JSON.parse(sessionStorage.getItem(INFO) || 'null'); } catch { return null; }
  },
  get tenant() { return sessionStorage.getItem(TENANT); },
  get signedIn() { return Boolean(this.key && this.info); },
  get ready() { return this.signedIn && Boolean(this.tenant); },
  get isWorkspace() { return this.info?.kind === 'workspace'; },
  has(scope) { return Boolean(this.info?.scopes?.includes(scope)); },
  signIn(key, info) {
    sessionStorage.setItem(KEY, key);
    sessionStorage.setItem(INFO, JSON.stringify(info));
    if (info.tenantId) sessionStorage.setItem(TENANT, info.tenantId);
    else sessionStorage.removeItem(TENANT);
  },
  setTenant(id) { sessionStorage.setItem(TENANT, id); },
  /** Forgets the key; `notice` is shown on the sign-in page. */
  signOut(notice) {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(INFO);
    sessionStorage.removeItem(TENANT);
    if (notice) sessionStorage.setItem(NOTICE, notice);
    window.dispatchEvent(new CustomEvent('bk:signedout'));
  },
  takeNotice() {
    const notice = sessionStorage.getItem(NOTICE);
    sessionStorage.removeItem(NOTICE);
    return notice;
  },
};

export const REVOKED_NOTICE = 'You were signed out: this API key was revoked or is no longer valid. Sign in with another key.';

/** An error envelope (or a failure to reach the API). */
export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = error?.code || 'network_error';
    this.details = error?.details ?? null;
  }

  /** The field issues of a validation_failed error: [{path, message, line?, column?}]. */
  get issues() { return Array.isArray(this.details) ? this.details : []; }
}

/**
 * Calls the API. Returns {data, metadata}; throws ApiError.
 * options: body (JSON), query (object; empty values left out), key (sign-in check with a key
 * not yet stored), tenant (false: no BuzzKit-Tenant header), idempotencyKey, signal.
 */
export async function api(method, path, options = {}) {
  const key = options.key ?? session.key;
  const headers = { Accept: 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  const tenant = options.tenant === false ? null : (options.tenantId ?? session.tenant);
  if (tenant && (options.key ? options.kind === 'workspace' : session.isWorkspace)) headers['BuzzKit-Tenant'] = tenant;
  if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
  let body;
  if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let url = path;
  if (options.query) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query)) {
      if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
    }
    const text = params.toString();
    if (text) url += `?${text}`;
  }
  let response;
  try {
    response = await fetch(url, {
      method, headers, body, signal: options.signal, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer',
    });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, { code: 'network_error', message: 'The BuzzKit API cannot be reached.' });
  }
  let envelope = null;
  try { envelope = await response.json(); } catch { envelope = null; }
  if (!envelope || typeof envelope !== 'object') {
    throw new ApiError(response.status, { code: 'invalid_response', message: `The API answered HTTP ${response.status}.` });
  }
  if (!envelope.success) {
    const error = new ApiError(response.status, envelope.error);
    if (error.code === 'unauthorized' && !options.key && session.key) session.signOut(REVOKED_NOTICE);
    throw error;
  }
  return { data: envelope.data, metadata: envelope.metadata || {} };
}

/** A fresh random idempotency key. */
export function newIdempotencyKey() {
  return `dash-${crypto.randomUUID()}`;
}
