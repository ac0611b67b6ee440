// Subscribers: search by id prefix.
import { api } from '../lib/api.js';
import { debounce, h, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { card, empty, icons, loading, pageHeader, pager, table } from '../lib/ui.js';
import { icon } from '../lib/dom.js';

export async function render(main, params, ctx) {
  const search = h('input', { class: 'input', type: 'search', placeholder: 'Search by subscriber id prefix', 'data-testid': 'subscriber-search', 'aria-label': 'Search subscribers' });
  const body = h('div', {}, loading());
  let prefix = '';
  const paging = pager({
    pageSize: 50,
    load: (cursor) => api('GET', '/v1/subscribers', { query: { cursor, limit: 50, prefix }, signal: ctx.signal }),
    render: (rows) => put(body, rows.length || paging.page > 0 ? table([
      { label: 'Subscriber', class: 'wide', cell: (s) => h('div', {}, h('span', { class: 'strong', 'data-testid': 'subscriber-id' }, s.id), s.anonymous ? h('span', { class: 'muted small' }, ' anonymous') : null) },
      { label: 'Attributes', class: 'wide', cell: (s) => h('code', { class: 'muted small clip' }, Object.keys(s.attributes || {}).length ? JSON.stringify(s.attributes) : '—') },
      { label: 'Time zone', cell: (s) => s.timezone || '—' },
      { label: 'Updated', cell: (s) => relative(s.updatedAt) },
    ], rows, { href: (s) => `#/subscribers/${encodeURIComponent(s.id)}`, rowTestid: 'subscriber-row' })
      : empty(prefix ? `No subscriber id starts with “${prefix}”` : 'No subscribers yet', prefix ? null : 'PUT /v1/subscribers/{id} or the SDK creates them.')),
  });
  search.addEventListener('input', debounce(() => { prefix = search.value.trim(); paging.go(0); }, 250));
  main.append(pageHeader('Subscribers', 'The people you send to, by your own ids.'),
    card(null, h('div', {}, h('div', { class: 'search' }, icon(icons.search), search), body, paging.bar), { class: 'flush' }));
  await paging.go(0);
  search.focus();
}
