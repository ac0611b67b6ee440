// Workspace administration: tenants, keys with their scopes, create (the secret shown once), revoke.
import { api, session } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { badge, button, card, confirmButton, copyButton, empty, errorBox, field, icons, loading, pageHeader, pager, table } from '../lib/ui.js';

const SCOPES = {
  workspace: ['tenants:write', 'keys:write', 'messages:send', 'messages:read', 'events:write', 'subscribers:read', 'subscribers:write', 'workflows:read', 'workflows:write', 'webhooks:read', 'webhooks:write'],
  tenant: ['messages:send', 'messages:read', 'events:write', 'subscribers:read', 'subscribers:write', 'workflows:read', 'workflows:write', 'webhooks:read', 'webhooks:write'],
  client: ['events:write'],
};

export async function render(main, params, ctx) {
  if (!session.isWorkspace || !session.has('keys:write')) {
    main.append(pageHeader('Keys'), empty('Workspace keys only', 'Sign in with a workspace key holding keys:write to manage keys.'));
    return;
  }
  let tenants = [];
  if (session.has('tenants:write')) {
    ({ data: tenants } = await api('GET', '/v1/tenants', { tenant: false, query: { limit: 200 }, signal: ctx.signal }));
  }
  const tenantName = (id) => tenants.find((t) => t.id === id)?.name ?? id;
  const secretBox = h('div');
  const keysBody = h('div', {}, loading());
  const paging = pager({
    pageSize: 50,
    load: (cursor) => api('GET', '/v1/api-keys', { tenant: false, query: { cursor, limit: 50 }, signal: ctx.signal }),
    render: (rows) => put(keysBody, table([
      { label: 'Key', cell: (k) => h('div', {}, h('div', { class: 'strong', 'data-testid': 'key-name' }, k.name), h('code', { class: 'muted small' }, `${k.prefix}…`)) },
      { label: 'Kind', cell: (k) => badge(k.kind, k.kind === 'workspace' ? 'info' : 'muted') },
      { label: 'Tenant', cell: (k) => (k.tenantId ? tenantName(k.tenantId) : 'all tenants') },
      { label: 'Scopes', class: 'wide', cell: (k) => h('div', { class: 'chips' }, k.scopes.map((scope) => h('span', { class: 'chip' }, scope))) },
      { label: 'Last used', cell: (k) => (k.lastUsedAt ? relative(k.lastUsedAt) : 'never') },
      { label: 'Status', cell: (k) => (k.revokedAt ? badge('revoked') : badge('active')) },
      { label: '', class: 'right', cell: (k) => (k.revokedAt || k.id === session.info.id ? (k.id === session.info.id ? h('span', { class: 'muted small' }, 'this key') : '')
        : confirmButton('Revoke', 'Confirm revoke', async () => {
          await api('DELETE', `/v1/api-keys/${k.id}`, { tenant: false });
          await paging.refresh();
        }, { testid: 'key-revoke' })) },
    ], rows, { rowTestid: 'key-row' })),
  });

  const form = createForm(tenants, async (created) => {
    put(secretBox, secretPanel(created, () => put(secretBox)));
    await paging.refresh();
  });

  main.append(
    pageHeader('Keys', 'API keys of this workspace. A secret is shown once, when the key is created.'),
    secretBox,
    card('Create a key', form),
    card('API keys', h('div', {}, keysBody, paging.bar), { class: 'flush' }),
    tenants.length ? card('Tenants', table([
      { label: 'Tenant', cell: (t) => h('div', {}, h('div', { class: 'strong' }, t.name), h('code', { class: 'muted small' }, t.id)) },
      { label: 'Bundle id', cell: (t) => t.apns?.bundleId || '—' },
      { label: 'APNs', cell: (t) => (t.apns?.privateKeyConfigured ? badge(t.apns.environment, 'good') : badge('no key', 'warn')) },
      { label: 'Quiet hours', cell: (t) => (t.quietHours ? `${t.quietHours.start}–${t.quietHours.end}` : '—') },
      { label: 'Created', cell: (t) => relative(t.createdAt) },
    ], tenants, { rowTestid: 'keys-tenant-row' }), { class: 'flush' }) : null);
  await paging.go(0);
}

function createForm(tenants, oncreated) {
  const name = h('input', { class: 'input', placeholder: 'Backend (production)', 'data-testid': 'key-create-name' });
  const kind = h('select', { class: 'input', 'data-testid': 'key-create-kind' },
    h('option', { value: 'tenant' }, 'Tenant key (one tenant)'), h('option', { value: 'workspace' }, 'Workspace key (every tenant)'),
    h('option', { value: 'client' }, 'Client key (SDK, events only)'));
  const tenant = h('select', { class: 'input', 'data-testid': 'key-create-tenant' },
    tenants.map((t) => h('option', { value: t.id, selected: t.id === session.tenant }, t.name)));
  if (!tenants.length) tenant.append(h('option', { value: session.tenant }, session.tenant));
  const scopes = h('div', { class: 'checks' });
  const drawScopes = () => {
    const allowed = SCOPES[kind.value].filter((scope) => session.has(scope));
    put(scopes, allowed.map((scope) => h('label', { class: 'check' },
      h('input', { type: 'checkbox', value: scope, checked: kind.value !== 'workspace' || !scope.endsWith(':write') || scope === 'subscribers:write' }),
      h('code', {}, scope))));
    tenantField.hidden = kind.value === 'workspace';
  };
  const tenantField = field('Tenant', tenant);
  kind.addEventListener('change', drawScopes);
  const problem = h('div');
  const submit = button('Create key', null, { kind: 'primary', type: 'submit', testid: 'key-create', icon: icons.plus });
  const form = h('form', { class: 'key-form', onsubmit: async (event) => {
    event.preventDefault();
    put(problem);
    submit.disabled = true;
    const body = { name: name.value.trim(), kind: kind.value,
      scopes: [...scopes.querySelectorAll('input:checked')].map((input) => input.value) };
    if (kind.value !== 'workspace') body.tenantId = tenant.value;
    try {
      const { data } = await api('POST', '/v1/api-keys', { tenant: false, body });
      form.reset();
      drawScopes();
      await oncreated(data);
    } catch (error) {
      put(problem, errorBox(error));
    } finally {
      submit.disabled = false;
    }
  } }, field('Name', name), field('Kind', kind), tenantField, field('Scopes', scopes, null, { class: 'field-scopes' }), problem,
  h('div', { class: 'actions' }, submit));
  drawScopes();
  return form;
}

function secretPanel(created, close) {
  let secret = created.secret;
  const value = h('code', { class: 'secret', 'data-testid': 'key-secret' }, secret);
  return h('div', { class: 'notice notice-good secret-panel', 'data-testid': 'key-secret-panel' },
    h('div', { class: 'stack' },
      h('strong', {}, `Key “${created.name}” created. Copy its secret now: it is shown only this once.`),
      h('div', { class: 'row' }, value, copyButton(() => secret)),
      h('div', { class: 'actions' }, button('Done', () => { secret = ''; value.textContent = ''; close(); }, { kind: 'ghost', testid: 'key-secret-done' }))));
}
