// Every message, newest first, with where it stands.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { number, relative, target } from '../lib/format.js';
import { badge, button, card, empty, icons, loading, pageHeader, pager, segmented, table } from '../lib/ui.js';

/** A message's headline by kind: a push's title or body; a workflow's local plan (its notification's title) or cancel. */
export function messageTitle(m) {
  const c = m.content || {};
  if (m.kind === 'local_plan') return `Local plan: ${c.local?.title || c.local?.body || c.local?.id || ''}`;
  if (m.kind === 'local_cancel') return `Local cancel of run ${c.cancel?.runId || ''}`;
  if (m.kind === 'live_activity') return `Live Activity ${c.liveActivity?.event || ''}`;
  return c.title || c.body || (c.action?.name ? `action ${c.action.name}` : 'silent push');
}

/** Nothing more happens to it: every delivery decided (completed) or the send failed. */
export const isFinal = (m) => m.status === 'completed' || m.status === 'failed';

/** The badge tone of a message's status (completed is done and well). */
export const statusTone = (status) => (status === 'completed' ? 'good' : undefined);

export async function render(main, params, ctx) {
  const body = h('div', {}, loading());
  let shown = [];
  let status = '';
  const paging = pager({
    pageSize: 25,
    labels: ['Newer', 'Older'],
    load: (cursor) => api('GET', '/v1/messages', { query: { cursor, limit: 25, status }, signal: ctx.signal }),
    render: (rows) => {
      shown = rows;
      if (!rows.length && paging.page === 0) {
        put(body, status ? empty(`No ${status.replace('_', ' ')} messages`) : empty('No messages yet', 'Messages sent from the Send page or POST /v1/messages appear here.',
          button('Send a message', () => { location.hash = '#/send'; }, { kind: 'primary', icon: icons.send })));
        return;
      }
      put(body, table([
        { label: 'Message', class: 'wide', cell: (m) => h('div', {},
          h('div', { class: 'strong clip', 'data-testid': 'message-title' }, messageTitle(m)),
          m.content?.body && m.content?.title ? h('div', { class: 'muted small clip' }, m.content.body) : null) },
        { label: 'Audience', cell: (m) => h('div', {}, h('div', { class: 'clip' }, target(m.target)),
          h('div', { class: 'muted small' }, m.audienceSize === null ? 'resolving…' : `${number(m.audienceSize)} device${m.audienceSize === 1 ? '' : 's'}`)) },
        { label: 'Status', cell: (m) => badge(m.status, statusTone(m.status)) },
        { label: unit('Sent', 'devices'), class: 'num', cell: (m) => number(m.counts.sent) },
        { label: unit('Failed', 'devices'), class: 'num', cell: (m) => number(m.counts.failed + m.counts.invalid_token + m.counts.expired) },
        { label: unit('Delivered', 'subscribers'), class: 'num', cell: (m) => number(m.receipts.delivered) },
        { label: unit('Opened', 'subscribers'), class: 'num', cell: (m) => number(m.receipts.opened) },
        { label: 'Created', cell: (m) => relative(m.createdAt) },
      ], rows, { href: (m) => `#/messages/${m.id}`, rowTestid: 'message-row' }));
    },
  });
  main.append(pageHeader('Messages', 'Every push sent, newest first.',
    button('New message', () => { location.hash = '#/send'; }, { kind: 'primary', icon: icons.send })),
  card(null, h('div', {}, segmented([['', 'All'], ['queued', 'Queued'], ['fanning_out', 'Fanning out'], ['fanned_out', 'Fanned out'],
    ['completed', 'Completed'], ['failed', 'Failed']], '', (value) => { status = value; paging.go(0); }, 'message-filter'), body, paging.bar), { class: 'flush' }));
  await paging.go(0);
  // The first page follows the progress of sends still in flight (nothing is re-read once all settled).
  const timer = setInterval(() => {
    if (paging.page === 0 && shown.some((m) => !isFinal(m))) paging.refresh().catch(() => {});
  }, 3000);
  return () => clearInterval(timer);
}

/** A column label with the unit it counts under it (deliveries count devices, receipts subscribers). */
function unit(label, what) {
  return h('span', { class: 'th-unit' }, label, h('span', { class: 'th-note' }, what));
}
