// Saved segments: the list with each one's live count.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { number, relative } from '../lib/format.js';
import { button, card, empty, icons, loading, pageHeader, pager, table } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const list = h('div', {}, loading());
  main.append(pageHeader('Segments', 'Named audience expressions, counted live and usable as a send target.',
    button('New segment', () => { location.hash = '#/segments/new'; }, { kind: 'primary', icon: icons.plus, testid: 'segment-new' })),
  card(null, list, { class: 'flush' }));
  const body = h('div');
  const paging = pager({
    pageSize: 50,
    load: (cursor) => api('GET', '/v1/segments', { query: { cursor, limit: 50 }, signal: ctx.signal }),
    render: (rows) => {
      if (!rows.length && paging.page === 0) {
        put(body, empty('No segments yet', 'A segment is an expression such as plan == "pro" and did("app.opened", within: "7d").',
          button('New segment', () => { location.hash = '#/segments/new'; }, { kind: 'primary' })));
        return;
      }
      put(body, table([
        { label: 'Segment', cell: (s) => h('div', {}, h('div', { class: 'strong', 'data-testid': 'segment-name' }, s.name), h('code', { class: 'muted small' }, s.key)) },
        { label: 'Expression', class: 'wide', cell: (s) => h('code', { class: 'expr-inline' }, s.where) },
        { label: 'Subscribers', class: 'num', cell: (s) => count(s.key, ctx) },
        { label: 'Updated', cell: (s) => relative(s.updatedAt) },
      ], rows, { href: (s) => `#/segments/${encodeURIComponent(s.key)}`, rowTestid: 'segment-row' }));
    },
  });
  put(list, body, paging.bar);
  await paging.go(0);
}

function count(key, ctx) {
  const el = h('span', { class: 'muted' }, '…');
  api('GET', `/v1/segments/${encodeURIComponent(key)}/count`, { signal: ctx.signal })
    .then(({ data }) => { el.className = ''; el.textContent = number(data.count); })
    .catch(() => { el.textContent = '—'; });
  return el;
}
