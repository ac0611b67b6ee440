// One subscriber: attributes, devices (active or not), topics, and the event timeline newest first.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { dateTime, relative, shortToken } from '../lib/format.js';
import { badge, button, card, empty, pageHeader, table } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const id = params.id;
  const path = `/v1/subscribers/${encodeURIComponent(id)}`;
  const [{ data: subscriber }, { data: devices }, { data: topics }] = await Promise.all([
    api('GET', path, { signal: ctx.signal }),
    api('GET', `${path}/devices`, { query: { limit: 200 }, signal: ctx.signal }),
    api('GET', `${path}/topics`, { query: { limit: 200 }, signal: ctx.signal }),
  ]);
  const attributes = Object.entries(subscriber.attributes || {});
  const timeline = h('ol', { class: 'timeline', 'data-testid': 'timeline' });
  const more = h('div', { class: 'actions' });
  let cursor = null;
  async function loadEvents() {
    const { data, metadata } = await api('GET', `${path}/events`, { query: { cursor, limit: 50 }, signal: ctx.signal });
    if (!data.length && !cursor) timeline.replaceWith(empty('No events yet', 'Events tracked for this subscriber (and its anonymous ids) appear here.'));
    for (const event of data) {
      const reserved = event.name.startsWith('$');
      timeline.append(h('li', { class: ['timeline-item', reserved ? 'reserved' : null], 'data-testid': 'event' },
        h('div', { class: 'timeline-dot' }),
        h('div', { class: 'timeline-body' },
          h('div', { class: 'timeline-head' }, h('code', { class: 'strong', 'data-testid': 'event-name' }, event.name),
            reserved ? badge('reserved', 'info') : null, h('span', { class: 'muted small', title: event.timestamp }, dateTime(event.timestamp))),
          Object.keys(event.data || {}).length ? h('code', { class: 'muted small clip' }, JSON.stringify(event.data)) : null)));
    }
    cursor = metadata.cursor;
    put(more, metadata.hasMore ? button('Older events', loadEvents, { kind: 'ghost', testid: 'events-more' }) : null);
  }
  main.append(
    h('a', { href: '#/subscribers', class: 'back' }, 'Subscribers'),
    pageHeader(subscriber.id, `${subscriber.anonymous ? 'Anonymous · ' : ''}created ${relative(subscriber.createdAt)}`,
      h('a', { class: 'btn btn-ghost', href: `#/live-activities/${encodeURIComponent(id)}`, 'data-testid': 'subscriber-live-activities' }, 'Live Activities')),
    h('div', { class: 'grid-2' },
      h('div', { class: 'stack' },
        card('Profile', h('dl', { class: 'facts', 'data-testid': 'attributes' },
          h('dt', {}, 'Time zone'), h('dd', {}, subscriber.timezone || '—'),
          h('dt', {}, 'Locale'), h('dd', {}, subscriber.locale || '—'),
          attributes.flatMap(([k, v]) => [h('dt', {}, h('code', {}, k)), h('dd', { 'data-testid': 'attribute-value' }, typeof v === 'string' ? v : JSON.stringify(v))]))),
        card('Devices', devices.length ? table([
          { label: 'Token', cell: (d) => h('code', { title: d.token }, shortToken(d.token)) },
          { label: 'Env', cell: (d) => d.environment },
          { label: 'App', cell: (d) => [d.bundleId || '—', d.appVersion ? ` ${d.appVersion}` : ''].join('') },
          { label: 'Permission', cell: (d) => d.permission },
          { label: 'State', cell: (d) => h('span', { 'data-testid': 'device-state', title: d.lastRejectionReason || '' },
            badge(d.active ? 'active' : 'inactive', d.active ? 'good' : 'muted'), d.lastRejectionReason ? h('span', { class: 'muted small' }, ` ${d.lastRejectionReason}`) : null) },
        ], devices, { rowTestid: 'device-row' }) : h('p', { class: 'muted' }, 'No devices.'), { class: 'flush' }),
        card('Topics', topics.length ? h('div', { class: 'chips', 'data-testid': 'topics' }, topics.map((t) => h('span', { class: 'chip', title: t.name || '' }, t.key)))
          : h('p', { class: 'muted' }, 'Not subscribed to any topic.'))),
      card('Events', h('div', {}, timeline, more), { aside: h('span', { class: 'muted small' }, 'newest first') })));
  await loadEvents();
}
