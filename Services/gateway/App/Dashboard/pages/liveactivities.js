// Live Activities: pick a subscriber (search by id prefix, or type an id) to see their activities
// and push-to-start tokens and send an update.
import { h } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { subscriberSearch } from '../lib/search.js';
import { card, pageHeader } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const search = subscriberSearch({
    signal: ctx.signal,
    testids: { search: 'la-subscriber-search', row: 'la-subscriber-row' },
    hint: 'Live Activity tokens are registered for a subscriber by the SDK (or PUT /v1/subscribers/{id}/live-activities/{activityId}).',
    href: (s) => `#/live-activities/${encodeURIComponent(s.id)}`,
    open: (id) => { location.hash = `#/live-activities/${encodeURIComponent(id)}`; },
    openLabel: 'Open',
    openTestid: 'la-subscriber-open',
    columns: [
      { label: 'Subscriber', class: 'wide', cell: (s) => h('span', { class: 'strong', 'data-testid': 'la-subscriber-id' }, s.id) },
      { label: 'Time zone', cell: (s) => s.timezone || '—' },
      { label: 'Updated', cell: (s) => relative(s.updatedAt) },
    ],
  });
  main.append(pageHeader('Live Activities', 'A subscriber’s activities and push-to-start tokens; start, update or end an activity.'),
    card(null, search.el, { class: 'flush' }));
  await search.start();
  search.input.focus();
}
