// Sign in with an API key; a workspace key then picks one of its tenants.
import { api, session } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { button, errorBox, field, table } from '../lib/ui.js';
import { relative } from '../lib/format.js';

export async function render(root, params, ctx) {
  const notice = session.takeNotice();
  const body = h('div', { class: 'signin-body' });
  const panel = h('div', { class: 'signin-card' },
    h('div', { class: 'brand brand-large' }, h('img', { src: '/dashboard/favicon.svg', alt: '', width: 36, height: 36 }), h('span', {}, 'BuzzKit')),
    notice ? h('div', { class: 'notice notice-warn', role: 'alert', 'data-testid': 'signin-notice' }, notice) : null,
    body);
  root.append(h('div', { class: 'signin' }, panel,
    h('p', { class: 'signin-foot' }, 'The key stays in this browser tab (sessionStorage) and is sent only to this server\'s API.')));
  askForKey(body, ctx);
}

function askForKey(body, ctx) {
  body.parentElement?.classList.remove('signin-card-wide');
  const input = h('input', {
    type: 'password', class: 'input', autocomplete: 'off', spellcheck: 'false', placeholder: 'bk_ws_… or bk_tk_…',
    'data-testid': 'signin-key', 'aria-label': 'API key',
  });
  const problem = h('div');
  const submit = button('Sign in', null, { kind: 'primary', type: 'submit', testid: 'signin-submit' });
  const form = h('form', { class: 'stack', onsubmit: async (event) => {
    event.preventDefault();
    put(problem);
    const key = input.value.trim();
    if (!key) return;
    submit.disabled = true;
    try {
      const { data: info } = await api('GET', '/v1/key', { key, tenant: false });
      if (info.kind === 'client') {
        put(problem, errorBox({ code: 'client_key', message: 'Client (SDK) keys cannot read anything. Sign in with a workspace or tenant key.' }));
        return;
      }
      if (info.kind === 'workspace') {
        chooseTenant(body, key, info, ctx);
        return;
      }
      session.signIn(key, info);
      ctx.done();
    } catch (error) {
      put(problem, errorBox(error.code === 'unauthorized'
        ? { code: 'unauthorized', message: 'This key is unknown or revoked.' } : error));
    } finally {
      submit.disabled = false;
    }
  } },
  h('h1', {}, 'Sign in'),
  h('p', { class: 'muted' }, 'Paste an API key. A workspace key then picks one of its tenants.'),
  field('API key', input), problem, submit);
  put(body, form);
  input.focus();
}

async function chooseTenant(body, key, info, ctx) {
  const pick = (id) => {
    session.signIn(key, info);
    session.setTenant(id);
    ctx.done();
  };
  // The tenants' table needs more room than the key field: the card widens, and its cells wrap.
  body.parentElement?.classList.add('signin-card-wide');
  const manual = h('input', { class: 'input', placeholder: 'tenant id (uuid)', 'data-testid': 'tenant-id', 'aria-label': 'Tenant id' });
  const manualForm = h('form', { class: 'row', onsubmit: (event) => { event.preventDefault(); if (manual.value.trim()) pick(manual.value.trim()); } },
    manual, button('Use', null, { type: 'submit', kind: 'ghost' }));
  const list = h('div');
  put(body, h('div', { class: 'stack' },
    h('h1', {}, 'Choose a tenant'),
    h('p', { class: 'muted' }, 'A workspace key acts on one tenant at a time (the BuzzKit-Tenant header).'),
    list,
    h('details', {}, h('summary', {}, 'Enter a tenant id'), manualForm),
    button('Use another key', () => askForKey(body, ctx), { kind: 'ghost' })));
  if (!info.scopes.includes('tenants:write')) {
    put(list, h('p', { class: 'muted' }, 'This key cannot list tenants (it lacks tenants:write): enter the tenant id.'));
    return;
  }
  try {
    const { data } = await api('GET', '/v1/tenants', { key, tenant: false, query: { limit: 200 }, signal: ctx.signal });
    if (!data.length) { put(list, h('p', { class: 'muted' }, 'This workspace has no tenant yet (POST /v1/tenants).')); return; }
    put(list, table([
      { label: 'Tenant', class: 'wide', cell: (t) => h('div', {}, h('div', { class: 'strong' }, t.name), h('code', { class: 'muted small break' }, t.id)) },
      { label: 'App', cell: (t) => t.apns?.bundleId || '—' },
      { label: 'Created', cell: (t) => relative(t.createdAt) },
      { label: '', class: 'right', cell: (t) => button('Open', () => pick(t.id), { kind: 'primary', testid: 'tenant-open' }) },
    ], data, { rowTestid: 'tenant-row' }));
  } catch (error) {
    put(list, errorBox(error));
  }
}
