// A workflow's runs, newest first, filtered by status and subscriber.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { button, card, empty, loading, pageHeader, pager, segmented, table } from '../lib/ui.js';
import { runBadge, shortId } from './run.js';

const PAGE = 25;

export async function render(main, params, ctx) {
  const key = params.key;
  const { data: workflow } = await api('GET', `/v1/workflows/${encodeURIComponent(key)}`, { signal: ctx.signal });
  let status = '';
  let subscriberId = '';
  const body = h('div', {}, loading());
  const paging = pager({
    pageSize: PAGE,
    labels: ['Newer', 'Older'],
    load: (cursor) => api('GET', `/v1/workflows/${encodeURIComponent(key)}/runs`,
      { query: { cursor, limit: PAGE, status, subscriberId }, signal: ctx.signal }),
    render: (rows) => put(body, rows.length || paging.page > 0 ? table([
      { label: 'Run', cell: (r) => h('code', { title: r.id, 'data-testid': 'run-id' }, shortId(r.id)) },
      { label: 'Subscriber', class: 'wide', cell: (r) => h('a', { href: `#/subscribers/${encodeURIComponent(r.subscriberId)}` }, r.subscriberId) },
      { label: 'Status', cell: (r) => h('span', { 'data-testid': 'run-status' }, runBadge(r.status)) },
      { label: 'At step', cell: (r) => (r.current ? h('code', {}, r.current) : '—') },
      { label: 'Version', class: 'num', cell: (r) => `v${r.version}` },
      { label: 'Started', cell: (r) => relative(r.startedAt || r.createdAt) },
      { label: 'Ended', cell: (r) => (r.endedAt ? relative(r.endedAt) : '—') },
    ], rows, { href: (r) => `#/workflow-runs/${r.id}`, rowTestid: 'run-row' })
      : empty(status || subscriberId ? 'No runs match' : 'No runs yet',
        status || subscriberId ? 'Change the status or subscriber filter.' : `A run starts when ${workflow.triggerEvent} is tracked, or through POST /v1/workflows/${key}/trigger.`)),
  });
  const subscriber = h('input', { class: 'input', placeholder: 'subscriber id', 'data-testid': 'runs-subscriber' });
  const apply = () => { subscriberId = subscriber.value.trim(); paging.go(0); };
  subscriber.addEventListener('keydown', (event) => { if (event.key === 'Enter') apply(); });
  const filters = h('div', { class: 'toolbar' },
    segmented([['', 'All'], ['running', 'Running'], ['completed', 'Completed'], ['cancelled', 'Cancelled'], ['failed', 'Failed'],
      ['throttled', 'Throttled']],
      '', (value) => { status = value; paging.go(0); }, 'runs-filter'),
    h('div', { class: 'actions' }, subscriber, button('Filter', apply, { kind: 'ghost', testid: 'runs-subscriber-apply' })));
  main.append(h('a', { href: `#/workflows/${encodeURIComponent(key)}`, class: 'back' }, workflow.key),
    pageHeader(`Runs of ${workflow.key}`, `triggered by ${workflow.triggerEvent} · each run keeps the version it started with`),
    card(null, h('div', {}, filters, body, paging.bar), { class: 'flush' }));
  await paging.go(0);
  // Runs move on their own: the first page follows along.
  const timer = setInterval(() => { if (paging.page === 0) paging.refresh().catch(() => {}); }, 3000);
  return () => clearInterval(timer);
}
