// One delivery with every APNs attempt: the exact payload bytes, headers, status, reason, apns-id, latency.
import { api } from '../lib/api.js';
import { h } from '../lib/dom.js';
import { bytes, dateTime, json, number } from '../lib/format.js';
import { DESCRIPTIONS } from '../lib/status.js';
import { badge, card, code, copyButton, pageHeader, statusBadge, table } from '../lib/ui.js';
import { suppressedReason } from './message.js';

export async function render(main, params, ctx) {
  const { data } = await api('GET', `/v1/deliveries/${encodeURIComponent(params.id)}`, { signal: ctx.signal });
  const d = data.delivery;
  const facts = [
    ['Status', statusBadge('deliveryStatus', d.status)],
    d.suppressedReason ? ['Suppressed because', h('div', {}, suppressedReason(d.suppressedReason),
      h('div', { class: 'muted small' }, DESCRIPTIONS.suppressedReason[d.suppressedReason] ?? ''))] : null,
    ['Device token', h('code', { class: 'break' }, d.deviceToken)],
    ['Subscriber', h('a', { href: `#/subscribers/${encodeURIComponent(d.subscriberId)}` }, d.subscriberId)],
    ['Environment', d.environment], ['apns-id', h('code', {}, d.apnsId ?? '—')], ['Attempts', number(d.attemptCount)],
    ['Error', d.errorCode ?? '—'], ['Created', dateTime(d.createdAt)], ['Sent', dateTime(d.sentAt)],
    ['Delivered (receipt)', dateTime(data.receipts?.delivered)], ['Opened (receipt)', dateTime(data.receipts?.opened)],
  ];
  main.append(
    h('a', { href: `#/messages/${d.messageId}`, class: 'back' }, 'Message'),
    pageHeader('Delivery', d.id),
    h('div', { class: 'grid-2 wide-right' },
      card('Delivery', h('dl', { class: 'facts' }, facts.filter(Boolean).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]))),
      h('div', { class: 'stack' }, data.attempts.length ? data.attempts.map(attempt)
        : card('Attempts', h('p', { class: 'muted' }, d.suppressedReason
          ? 'None: the send policy held this push back, no request went to APNs.' : 'Not attempted yet.')))));
}

function attempt(a) {
  const headers = Object.entries(a.headers || {});
  return card(`Attempt ${a.attempt}`, h('div', { class: 'stack', 'data-testid': 'attempt' },
    h('div', { class: 'chips' },
      badge(`HTTP ${a.status || 'no answer'}`, a.status === 200 ? 'good' : 'bad'),
      a.reason ? badge(a.reason, 'bad') : null,
      h('span', { class: 'chip' }, `${number(a.latencyMs)} ms`),
      h('span', { class: 'chip' }, dateTime(a.at)),
      a.apnsId ? h('span', { class: 'chip' }, 'apns-id ', h('code', { 'data-testid': 'attempt-apns-id' }, a.apnsId)) : null),
    a.error ? h('div', { class: 'notice notice-bad' }, a.error) : null,
    h('div', { class: 'subhead' }, h('h3', {}, 'Payload'), h('span', { class: 'muted small' }, bytes(new TextEncoder().encode(a.payload).length), ' exactly as sent'),
      copyButton(() => a.payload)),
    code(a.payload, { testid: 'attempt-payload', class: 'wrap' }),
    h('details', {}, h('summary', {}, 'Formatted'), code(pretty(a.payload))),
    h('div', { class: 'subhead' }, h('h3', {}, 'Headers')),
    table([{ label: 'Header', cell: ([k]) => h('code', {}, k) }, { label: 'Value', class: 'wide', cell: ([, v]) => h('code', { class: 'break' }, String(v)) }],
      headers)), { aside: badge(a.status === 200 ? 'accepted' : 'rejected', a.status === 200 ? 'good' : 'bad') });
}

function pretty(text) {
  try { return json(JSON.parse(text)); } catch { return text; }
}
