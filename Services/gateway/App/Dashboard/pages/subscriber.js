// One subscriber: attributes, devices (active or not), topics, notification preferences (changed
// from here with source dashboard) and their history, and the event timeline newest first.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { dateTime, relative, shortToken } from '../lib/format.js';
import { choice, historyLines } from '../lib/policy.js';
import { badge, button, card, empty, errorBox, loading, pageHeader, pager, statusBadge, table } from '../lib/ui.js';

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
          : h('p', { class: 'muted' }, 'Not subscribed to any topic.')),
        ...preferences(path, ctx)),
      card('Events', h('div', {}, timeline, more), { aside: h('span', { class: 'muted small' }, 'newest first') })));
  await loadEvents();
}

/**
 * The subscriber's preferences (the global switch and one per category, a category they never
 * chose showing its default) changed from here (recorded with source dashboard), and the history
 * of every change, newest first. Each loads on its own: the rest of the page does not wait.
 */
function preferences(path, ctx) {
  const box = h('div', { 'data-testid': 'preferences' }, loading());
  const historyBody = h('div', {}, loading());
  const history = pager({
    pageSize: 20,
    labels: ['Newer', 'Older'],
    load: (cursor) => api('GET', `${path}/preferences/history`, { query: { cursor, limit: 20 }, signal: ctx.signal }),
    render: (entries) => put(historyBody, entries.length ? table([
      { label: 'When', cell: (e) => h('span', { title: e.at }, dateTime(e.at)) },
      { label: 'Source', cell: (e) => h('span', { 'data-testid': 'history-source' }, statusBadge('preferenceSource', e.source)) },
      { label: 'Changes', class: 'wide', cell: (e) => h('div', { class: 'chips', 'data-testid': 'history-changes' }, historyLines(e).map((line) =>
        h('span', { class: 'chip' }, h('code', {}, line.member), ` ${line.from} → ${line.to}`))) },
    ], entries, { rowTestid: 'history-row' }) : h('p', { class: 'muted pad-notice' }, 'No changes yet: every category follows its default.')),
  });
  const status = h('div');
  let busy = false;

  async function change(body) {
    if (busy) return;
    busy = true;
    put(status);
    box.querySelectorAll('input').forEach((input) => { input.disabled = true; });
    try {
      const { data } = await api('PUT', `${path}/preferences`, { body: { ...body, source: 'dashboard' }, signal: ctx.signal });
      draw(data);
      await history.go(0);
    } catch (error) {
      if (error.name === 'AbortError') return;
      put(status, errorBox(error));
      await load();
    } finally {
      busy = false;
    }
  }

  function draw(prefs) {
    const all = h('input', { type: 'checkbox', class: 'switch', checked: prefs.all, 'data-testid': 'preference-all',
      onchange: () => change({ all: all.checked }) });
    put(box,
      h('label', { class: 'pref-row pref-all' }, h('span', { class: 'pref-text' }, h('span', { class: 'strong' }, 'All notifications'),
        h('span', { class: 'muted small' }, prefs.all ? 'On: each category below decides' : 'Off: the subscriber unsubscribed from everything but critical categories')), all),
      prefs.effective.length ? prefs.effective.map((category) => {
        const c = choice(category, prefs.categories);
        const input = h('input', { type: 'checkbox', class: 'switch', checked: c.enabled, disabled: c.locked, 'data-testid': 'preference-switch',
          'aria-label': category.name, onchange: () => change({ categories: { [category.key]: input.checked } }) });
        return h('label', { class: 'pref-row', 'data-testid': 'preference-row', 'data-key': category.key },
          h('span', { class: 'pref-text' },
            h('span', {}, h('span', { class: 'strong' }, category.name), ' ', h('code', { class: 'muted small' }, category.key),
              category.critical ? [' ', badge('critical', 'warn')] : null),
            h('span', { class: 'muted small', 'data-testid': 'preference-note' }, c.note,
              category.enabled ? '' : ' · held back now')),
          input);
      }) : h('p', { class: 'muted' }, 'The tenant has no categories yet.'),
      status);
  }

  async function load() {
    try {
      const { data } = await api('GET', `${path}/preferences`, { signal: ctx.signal });
      draw(data);
    } catch (error) {
      if (error.name !== 'AbortError') put(box, errorBox(error));
    }
  }

  load();
  history.go(0).catch((error) => { if (error.name !== 'AbortError') put(historyBody, errorBox(error)); });
  return [
    card('Notification preferences', box, { aside: h('span', { class: 'muted small' }, 'changes are recorded as dashboard') }),
    card('Preference history', h('div', {}, historyBody, history.bar), { class: 'flush', aside: h('span', { class: 'muted small' }, 'newest first') }),
  ];
}
