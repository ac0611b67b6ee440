// One message: counts, receipts, content, and its deliveries (filtered by status, 100 a page).
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { dateTime, json, number, percent, relative, shortToken, target } from '../lib/format.js';
import { pollUntilSettled } from '../lib/poll.js';
import { DESCRIPTIONS, MESSAGE, allDeliveries, failedDeliveries, label, messageSettled, pendingDeliveries } from '../lib/status.js';
import { card, code, empty, pageHeader, pager, segmented, stat, statusBadge, table } from '../lib/ui.js';
import { deliveryStatus } from '../lib/vocabulary.js';
import { messageTitle } from './messages.js';

const PAGE = 100;

export async function render(main, params, ctx) {
  let { data: message } = await api('GET', `/v1/messages/${encodeURIComponent(params.id)}`, { signal: ctx.signal });
  let filter = '';
  const header = h('div');
  const stats = h('div', { class: 'stats' });
  const tabs = h('div');
  const deliveries = h('div');
  const paging = pager({
    pageSize: PAGE,
    load: (cursor) => api('GET', `/v1/messages/${message.id}/deliveries`, { query: { cursor, limit: PAGE, status: filter }, signal: ctx.signal }),
    render: (rows) => put(deliveries, rows.length ? table([
      { label: 'Device', cell: (d) => h('code', { title: d.deviceToken }, shortToken(d.deviceToken)) },
      { label: 'Subscriber', cell: (d) => h('a', { href: `#/subscribers/${encodeURIComponent(d.subscriberId)}` }, d.subscriberId) },
      { label: 'Status', cell: (d) => h('span', { class: 'chips' }, h('span', { 'data-testid': 'delivery-status' }, statusBadge('deliveryStatus', d.status)),
        d.suppressedReason ? suppressedReason(d.suppressedReason) : null) },
      { label: 'APNs', cell: (d) => (d.lastStatus ? `${d.lastStatus}${d.lastReason ? ` ${d.lastReason}` : ''}` : '—') },
      { label: 'Attempts', class: 'num', cell: (d) => number(d.attemptCount) },
      { label: 'Sent', cell: (d) => (d.sentAt ? relative(d.sentAt) : '—') },
    ], rows, { href: (d) => `#/deliveries/${d.id}`, rowTestid: 'delivery-row' })
      : empty(filter ? `No ${label(filter).toLowerCase()} deliveries` : 'No deliveries yet', MESSAGE.resolving.includes(message.status) ? 'The audience is being resolved.' : null)),
  });

  function draw() {
    const c = message.counts;
    const failed = failedDeliveries(c);
    const content = message.content || {};
    const done = message.completedAt ? ` · completed ${dateTime(message.completedAt)}` : '';
    put(header, pageHeader(messageTitle(message), `${target(message.target)} · created ${dateTime(message.createdAt)}${done}`,
      h('span', { 'data-testid': 'message-status' }, statusBadge('messageStatus', message.status))));
    put(stats,
      stat('Audience', message.audienceSize === null ? '…' : number(message.audienceSize), 'devices', 'stat-audience'),
      stat('Sent', number(c.sent), `devices · ${percent(c.sent, message.audienceSize)}`, 'stat-sent'),
      stat('In flight', number(message.pending ?? pendingDeliveries(c)), null, 'stat-pending'),
      stat('Failed', number(failed), failed ? `${number(c.invalid_token)} invalid tokens` : null, 'stat-failed'),
      c.suppressed ? stat('Suppressed', number(c.suppressed), 'devices · held back by the send policy', 'stat-suppressed') : null,
      stat('Delivered', number(message.receipts?.delivered ?? 0), 'subscribers (receipts)', 'stat-delivered'),
      stat('Opened', number(message.receipts?.opened ?? 0), message.openRate === null || message.openRate === undefined ? 'subscribers' : `subscribers · ${(message.openRate * 100).toFixed(1)}% open rate`, 'stat-opened'));
    put(tabs, segmented([['', `All ${number(allDeliveries(c))}`],
      ...deliveryStatus.map((s) => [s, `${label(s).toLowerCase()} ${number(c[s] ?? 0)}`])], filter, (value) => {
      filter = value;
      paging.go(0);
    }, 'delivery-filter'));
    if (message.error) header.append(h('div', { class: 'notice notice-bad' }, `${message.error.code}: ${message.error.message}`));
    contentBox.replaceChildren(code(json(content)));
  }
  const contentBox = h('div');
  main.append(h('a', { href: '#/messages', class: 'back' }, 'Messages'), header, stats,
    h('div', { class: 'grid-2 wide-left' },
      card('Deliveries', h('div', {}, tabs, deliveries, paging.bar), { class: 'flush' }),
      h('div', { class: 'stack' }, origin(message), card('Content', contentBox), card('Target', code(json(message.target))))));
  draw();
  await paging.go(0);

  // Until the message is final (completed or failed), counts and the shown page follow along.
  pollUntilSettled({
    settled: () => messageSettled(message),
    refresh: async () => {
      ({ data: message } = await api('GET', `/v1/messages/${message.id}`, { signal: ctx.signal }));
      draw();
      await paging.refresh();
    },
    signal: ctx.signal,
  });
}

/** Why the send policy held a delivery back, its words on hover. */
export function suppressedReason(reason) {
  return h('span', { 'data-testid': 'delivery-reason', title: DESCRIPTIONS.suppressedReason[reason] ?? '' },
    statusBadge('suppressedReason', reason));
}

/** Where a workflow's message came from: the workflow, version, run and send step (nothing for POST /v1/messages). */
function origin(message) {
  const w = message.workflow;
  if (!w) return null;
  return card('Sent by a workflow', h('div', { class: 'small', 'data-testid': 'message-workflow' },
    h('a', { href: `#/workflows/${encodeURIComponent(w.workflowKey)}` }, w.workflowKey), ` v${w.version}, step `, h('code', {}, w.step), ' of run ',
    h('a', { href: `#/workflow-runs/${w.runId}`, 'data-testid': 'message-workflow-run' }, h('code', {}, w.runId.slice(0, 8) + '…'))));
}
