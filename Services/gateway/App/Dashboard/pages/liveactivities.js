// Live Activities: pick a subscriber (search by id prefix, or type an id) to see their activities
// and push-to-start tokens and send an update.
import { api } from '../lib/api.js';
import { debounce, h, icon, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { button, card, empty, icons, loading, pageHeader, pager, table } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const search = h('input', {
    class: 'input', type: 'search', placeholder: 'Search by subscriber id prefix',
    'data-testid': 'la-subscriber-search', 'aria-label': 'Search subscribers',
  });
  const open = () => {
    const id = search.value.trim();
    if (id) location.hash = `#/live-activities/${encodeURIComponent(id)}`;
  };
  search.addEventListener('keydown', (event) => { if (event.key === 'Enter') open(); });
  const body = h('div', {}, loading());
  let prefix = '';
  const paging = pager({
    pageSize: 50,
    load: (cursor) => api('GET', '/v1/subscribers', { query: { cursor, limit: 50, prefix }, signal: ctx.signal }),
    render: (rows) => put(body, rows.length || paging.page > 0 ? table([
      { label: 'Subscriber', class: 'wide', cell: (s) => h('span', { class: 'strong', 'data-testid': 'la-subscriber-id' }, s.id) },
      { label: 'Time zone', cell: (s) => s.timezone || '—' },
      { label: 'Updated', cell: (s) => relative(s.updatedAt) },
    ], rows, { href: (s) => `#/live-activities/${encodeURIComponent(s.id)}`, rowTestid: 'la-subscriber-row' })
      : empty(prefix ? `No subscriber id starts with “${prefix}”` : 'No subscribers yet',
        'Live Activity tokens are registered for a subscriber by the SDK (or PUT /v1/subscribers/{id}/live-activities/{activityId}).')),
  });
  search.addEventListener('input', debounce(() => { prefix = search.value.trim(); paging.go(0); }, 250));
  main.append(pageHeader('Live Activities', 'A subscriber’s activities and push-to-start tokens; start, update or end an activity.'),
    card(null, h('div', {},
      h('div', { class: 'search' }, icon(icons.search), search,
        button('Open', open, { kind: 'ghost', testid: 'la-subscriber-open' })),
      body, paging.bar), { class: 'flush' }));
  await paging.go(0);
  search.focus();
}
