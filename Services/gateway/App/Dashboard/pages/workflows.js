// Workflows: the list, each with its trigger, current version and whether it is enabled.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { badge, button, card, empty, icons, loading, pageHeader, pager, table } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const body = h('div', {}, loading());
  const paging = pager({
    pageSize: 50,
    load: (cursor) => api('GET', '/v1/workflows', { query: { cursor, limit: 50 }, signal: ctx.signal }),
    render: (rows) => put(body, rows.length || paging.page > 0 ? table([
      { label: 'Workflow', class: 'wide', cell: (w) => h('span', { class: 'strong', 'data-testid': 'workflow-key' }, w.key) },
      { label: 'Trigger', cell: (w) => h('code', {}, w.triggerEvent) },
      { label: 'Version', class: 'num', cell: (w) => `v${w.version}` },
      { label: 'State', cell: (w) => badge(w.enabled ? 'enabled' : 'disabled', w.enabled ? 'good' : 'muted') },
      { label: 'Updated', cell: (w) => relative(w.updatedAt) },
    ], rows, { href: (w) => `#/workflows/${encodeURIComponent(w.key)}`, rowTestid: 'workflow-row' })
      : empty('No workflows yet', 'A workflow reacts to an event: wait, branch on what the subscriber did, send.',
        button('New workflow', () => { location.hash = '#/workflows/new'; }, { kind: 'primary' }))),
  });
  main.append(pageHeader('Workflows', 'Journeys started by an event: waits, branches and sends, each run recorded step by step.',
    button('New workflow', () => { location.hash = '#/workflows/new'; }, { kind: 'primary', icon: icons.plus, testid: 'workflow-new' })),
  card(null, h('div', {}, body, paging.bar), { class: 'flush' }));
  await paging.go(0);
}
