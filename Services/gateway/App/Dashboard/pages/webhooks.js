// Outbound webhooks: the tenant's endpoints, create one (its secret shown once, with a copy button).
import { api, session } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { badge, button, card, empty, errorBox, field, icons, loading, pageHeader, pager, table } from '../lib/ui.js';
import { EVENT_TYPES, secretPanel, stateBadge } from './webhook.js';

export async function render(main, params, ctx) {
  const secretBox = h('div');
  const listBody = h('div', {}, loading());
  const paging = pager({
    pageSize: 50,
    load: (cursor) => api('GET', '/v1/webhooks', { query: { cursor, limit: 50 }, signal: ctx.signal }),
    render: (rows) => put(listBody, rows.length ? table([
      { label: 'Endpoint', class: 'wide', cell: (w) => h('div', {}, h('code', { class: 'break strong', 'data-testid': 'webhook-url' }, w.url),
        w.description ? h('div', { class: 'muted small' }, w.description) : null) },
      { label: 'Events', cell: (w) => h('div', { class: 'chips' }, w.events.map((e) => h('span', { class: 'chip' }, e))) },
      { label: 'State', cell: (w) => stateBadge(w) },
      { label: 'Last success', cell: (w) => (w.lastSuccessAt ? relative(w.lastSuccessAt) : 'never') },
      { label: 'Created', cell: (w) => relative(w.createdAt) },
    ], rows, { rowTestid: 'webhook-row', href: (w) => `#/webhooks/${w.id}` })
      : empty('No endpoints yet', 'Create one to receive signed events: receipts, removed devices and, once wired, deliveries and runs.')),
  });
  const writable = session.has('webhooks:write');
  main.append(
    pageHeader('Webhooks', 'Signed HTTP requests to your backend (Standard Webhooks). A secret is shown once, when the endpoint is created or its secret rotated.'),
    secretBox,
    writable ? card('Create an endpoint', createForm(async (created) => {
      put(secretBox, secretPanel(created, `Endpoint created. Copy its signing secret now: it is shown only this once.`, () => put(secretBox)));
      await paging.refresh();
    })) : null,
    card('Endpoints', h('div', {}, listBody, paging.bar), { class: 'flush' }));
  await paging.go(0);
}

function createForm(oncreated) {
  const url = h('input', { class: 'input', placeholder: 'https://api.example.com/buzzkit/webhooks', 'data-testid': 'webhook-create-url' });
  const description = h('input', { class: 'input', placeholder: 'Production backend', 'data-testid': 'webhook-create-description' });
  const events = h('div', { class: 'checks', 'data-testid': 'webhook-create-events' }, EVENT_TYPES.map(([type, note]) => h('label', { class: 'check', title: note },
    h('input', { type: 'checkbox', value: type, checked: type !== 'delivery.sent' }), h('code', {}, type))));
  const problem = h('div');
  const submit = button('Create endpoint', null, { kind: 'primary', type: 'submit', testid: 'webhook-create', icon: icons.plus });
  const form = h('form', { class: 'key-form', onsubmit: async (event) => {
    event.preventDefault();
    put(problem);
    submit.disabled = true;
    const body = { url: url.value.trim(), events: [...events.querySelectorAll('input:checked')].map((input) => input.value) };
    if (description.value.trim()) body.description = description.value.trim();
    try {
      const { data } = await api('POST', '/v1/webhooks', { body });
      url.value = '';
      description.value = '';
      await oncreated(data);
    } catch (error) {
      put(problem, errorBox(error));
    } finally {
      submit.disabled = false;
    }
  } }, field('URL', url, 'https:// and a public address (the operator may allow private ones)'), field('Description', description),
  field('Events', events, 'delivery.sent is opt-in and batched (up to 100 deliveries a request)', { class: 'field-scopes' }), problem,
  h('div', { class: 'actions' }, submit));
  return form;
}
