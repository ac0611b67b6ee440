// One endpoint: its state and health, rotate its secret (shown once), send a test, enable or
// disable, delete, its attempts with the answers, and replay its events since a moment.
import { api, session } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { dateTime, number, relative } from '../lib/format.js';
import { badge, button, card, code, confirmButton, copyButton, empty, errorBox, field, pageHeader, pager, table } from '../lib/ui.js';

export const EVENT_TYPES = [
  ['message.completed', 'A message whose every delivery ended, with its counts'],
  ['delivery.failed', 'A delivery that failed (with APNs\'s reason)'],
  ['delivery.sent', 'Deliveries APNs accepted: opt-in, batched up to 100'],
  ['device.unregistered', 'A device that gets no more pushes'],
  ['receipt.delivered', 'The first delivered receipt of a message for a subscriber'],
  ['receipt.opened', 'The first opened receipt of a message for a subscriber'],
  ['workflow_run.completed', 'A workflow run that completed'],
  ['workflow_run.failed', 'A workflow run that failed'],
  ['workflow_run.cancelled', 'A workflow run that was cancelled'],
  ['live_activity.ended', 'A Live Activity that ended'],
];

const OUTCOME_TONES = { delivered: 'good', retrying: 'warn', failed: 'bad', lost: 'warn', disabled: 'bad' };

export function stateBadge(w) {
  if (w.enabled) return w.failingSince ? badge('failing', 'warn') : badge('active', 'good');
  return badge(w.disabledReason === 'failing' ? 'disabled: failing' : 'disabled', 'bad');
}

export function secretPanel(created, message, close) {
  let secret = created.secret;
  const value = h('code', { class: 'secret', 'data-testid': 'webhook-secret' }, secret);
  return h('div', { class: 'notice notice-good secret-panel', 'data-testid': 'webhook-secret-panel' },
    h('div', { class: 'stack' },
      h('strong', {}, message),
      h('div', { class: 'row' }, value, copyButton(() => secret)),
      h('span', { class: 'small' }, 'Verify each request with any Standard Webhooks library: webhook-id, webhook-timestamp and webhook-signature headers.'),
      h('div', { class: 'actions' }, button('Done', () => { secret = ''; value.textContent = ''; close(); }, { kind: 'ghost', testid: 'webhook-secret-done' }))));
}

export async function render(main, params, ctx) {
  const id = params.id;
  const writable = session.has('webhooks:write');
  const header = h('div');
  const secretBox = h('div');
  const notice = h('div');
  const detailsBox = h('div');
  const attemptsBody = h('div');
  let endpoint = null;

  async function load() {
    ({ data: endpoint } = await api('GET', `/v1/webhooks/${encodeURIComponent(id)}`, { signal: ctx.signal }));
    put(header, pageHeader('Webhook endpoint', endpoint.url, stateBadge(endpoint)));
    put(detailsBox, details(endpoint));
  }

  const attempts = pager({
    pageSize: 20, labels: ['Newer', 'Older'],
    load: (cursor) => api('GET', `/v1/webhooks/${encodeURIComponent(id)}/attempts`, { query: { cursor, limit: 20 }, signal: ctx.signal }),
    render: (rows) => put(attemptsBody, rows.length ? table([
      { label: 'When', cell: (a) => h('span', { title: a.attemptedAt }, dateTime(a.attemptedAt)) },
      { label: 'Event', cell: (a) => h('div', {}, h('code', {}, a.eventType), a.webhookId ? h('div', { class: 'muted small' }, h('code', { 'data-testid': 'attempt-webhook-id' }, a.webhookId)) : null) },
      { label: 'Outcome', cell: (a) => h('div', {}, badge(a.outcome, OUTCOME_TONES[a.outcome]), a.attempt ? h('div', { class: 'muted small' }, `attempt ${a.attempt}`) : null) },
      { label: 'HTTP', cell: (a) => (a.httpStatus ? badge(String(a.httpStatus), a.httpStatus < 300 ? 'good' : 'bad') : '—') },
      { label: 'Latency', cell: (a) => (a.latencyMs === null ? '—' : `${number(a.latencyMs)} ms`) },
      { label: 'Answer / error', class: 'wide', cell: (a) => h('div', { class: 'stack' },
        a.error ? h('div', { class: 'bad small', 'data-testid': 'attempt-error' }, a.error) : null,
        a.response ? code(a.response, { class: 'wrap', testid: 'attempt-response' }) : null,
        a.nextAttemptAt ? h('div', { class: 'muted small' }, `next attempt ${dateTime(a.nextAttemptAt)}`) : null) },
    ], rows, { rowTestid: 'webhook-attempt' }) : empty('No attempts yet', 'Send a test to see one.')),
  });

  async function act(fn) {
    put(notice);
    try { await fn(); } catch (error) { put(notice, errorBox(error)); }
  }

  const actions = writable ? h('div', { class: 'actions' },
    button('Send a test', () => act(async () => {
      const { data } = await api('POST', `/v1/webhooks/${id}/test`);
      put(notice, h('div', { class: 'notice notice-good', 'data-testid': 'webhook-test-queued' }, 'Test queued: webhook-id ', h('code', {}, data.webhookId), '. Its attempt appears below.'));
      setTimeout(() => attempts.go(0).catch(() => {}), 1500);
    }), { kind: 'primary', testid: 'webhook-test' }),
    button('Refresh attempts', () => act(() => attempts.go(0)), { kind: 'ghost', testid: 'webhook-refresh' }),
    confirmButton('Rotate secret', 'Confirm rotation', () => act(async () => {
      const { data } = await api('POST', `/v1/webhooks/${id}/rotate-secret`);
      put(secretBox, secretPanel(data, 'Secret rotated. Copy the new one now: it is shown only this once. The previous one keeps signing beside it for 24 hours.', () => put(secretBox)));
      await load();
    }), { kind: 'ghost', testid: 'webhook-rotate' }),
    button('Enable / disable', () => act(async () => {
      await api('PATCH', `/v1/webhooks/${id}`, { body: { enabled: !endpoint.enabled } });
      await load();
    }), { kind: 'ghost', testid: 'webhook-toggle' }),
    confirmButton('Delete', 'Confirm delete', () => act(async () => {
      await api('DELETE', `/v1/webhooks/${id}`);
      location.hash = '#/webhooks';
    }), { testid: 'webhook-delete' })) : null;

  const since = h('input', { class: 'input', type: 'datetime-local', step: 1, 'data-testid': 'webhook-replay-since' });
  const replay = writable ? card('Replay', h('form', { class: 'row', onsubmit: (event) => {
    event.preventDefault();
    act(async () => {
      const moment = since.value ? new Date(since.value) : new Date(Date.now() - 3600 * 1000);
      const { data } = await api('POST', `/v1/webhooks/${id}/replay`, { body: { since: moment.toISOString() } });
      put(notice, h('div', { class: 'notice notice-good', 'data-testid': 'webhook-replayed' }, `${number(data.queued)} events queued again with their original webhook-ids.`));
      setTimeout(() => attempts.go(0).catch(() => {}), 1500);
    });
  } }, field('Events made since (your local time; empty: the last hour)', since), h('div', { class: 'actions' }, button('Replay', null, { type: 'submit', testid: 'webhook-replay' })))) : null;

  await load();
  main.append(h('a', { href: '#/webhooks', class: 'back' }, 'Webhooks'), header, secretBox, actions, notice,
    h('div', { class: 'grid-2 wide-right' }, card('Endpoint', detailsBox), replay ?? h('div')),
    card('Attempts', h('div', {}, attemptsBody, attempts.bar), { class: 'flush' }));
  await attempts.go(0);
}

function details(w) {
  const facts = [
    ['URL', h('code', { class: 'break' }, w.url)], ['Description', w.description ?? '—'],
    ['Events', h('div', { class: 'chips' }, w.events.map((e) => h('span', { class: 'chip' }, e)))],
    ['State', stateBadge(w)], ['Disabled', w.disabledAt ? `${dateTime(w.disabledAt)} (${w.disabledReason})` : '—'],
    ['Failing since', w.failingSince ? dateTime(w.failingSince) : '—'],
    ['Last success', w.lastSuccessAt ? relative(w.lastSuccessAt) : 'never'], ['Last failure', w.lastFailureAt ? relative(w.lastFailureAt) : 'never'],
    ['Previous secret signs until', w.previousSecretExpiresAt ? dateTime(w.previousSecretExpiresAt) : '—'],
    ['Id', h('code', {}, w.id)], ['Created', dateTime(w.createdAt)],
  ];
  return h('dl', { class: 'facts', 'data-testid': 'webhook-facts' }, facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}
