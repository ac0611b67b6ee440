// Subscribers: search by id prefix.
import { h } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { subscriberSearch } from '../lib/search.js';
import { card, pageHeader } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const search = subscriberSearch({
    signal: ctx.signal,
    testids: { search: 'subscriber-search', row: 'subscriber-row' },
    hint: 'PUT /v1/subscribers/{id} or the SDK creates them.',
    href: (s) => `#/subscribers/${encodeURIComponent(s.id)}`,
    columns: [
      { label: 'Subscriber', class: 'wide', cell: (s) => h('div', {}, h('span', { class: 'strong', 'data-testid': 'subscriber-id' }, s.id), s.anonymous ? h('span', { class: 'muted small' }, ' anonymous') : null) },
      { label: 'Attributes', class: 'wide', cell: (s) => h('code', { class: 'muted small clip' }, Object.keys(s.attributes || {}).length ? JSON.stringify(s.attributes) : '—') },
      { label: 'Time zone', cell: (s) => s.timezone || '—' },
      { label: 'Updated', cell: (s) => relative(s.updatedAt) },
    ],
  });
  main.append(pageHeader('Subscribers', 'The people you send to, by your own ids.'), card(null, search.el, { class: 'flush' }));
  await search.start();
  search.input.focus();
}
