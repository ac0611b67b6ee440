// The overview: sends over the last 24 hours and 7 days with the sent → delivered → opened funnel,
// sends over time, events per hour, delivery failures by reason, and how long data is kept.
import { api, session } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { bars, funnel, ranking } from '../lib/chart.js';
import { dateTime, duration, number, percent, relative } from '../lib/format.js';
import { failedDeliveries } from '../lib/status.js';
import { badge, card, empty, errorBox, loading, pageHeader, segmented, stat, statusBadge, table } from '../lib/ui.js';

const hourTick = (at, long) => {
  const d = new Date(at);
  return long ? d.toLocaleString('en-GB', { weekday: 'short', hour: '2-digit', minute: '2-digit' }) : `${String(d.getHours()).padStart(2, '0')}:00`;
};
const dayTick = (at) => new Date(at).toLocaleDateString('en-GB', { weekday: 'short', day: '2-digit' });

export async function render(main, params, ctx) {
  main.append(pageHeader('Overview', 'How your pushes are doing.'));
  const canMessages = session.has('messages:read');
  const canEvents = session.has('subscribers:read');
  const canRetention = session.has('settings:read');
  const windows = h('div', { class: 'grid-2' });
  const sends = h('div');
  const events = h('div');
  const failures = h('div');
  const retention = h('div');
  main.append(windows);
  if (canMessages) main.append(h('div', { class: 'grid-2 wide-left' }, sends, failures));
  if (canEvents) main.append(events);
  if (canRetention) main.append(retention);
  if (!canMessages && !canEvents) main.append(empty('Nothing to show', 'This key can read neither messages nor subscribers.'));

  const load = (window) => api('GET', '/v1/stats/messages', { query: { window }, signal: ctx.signal });
  const tasks = [];
  if (canMessages) {
    put(windows, loading());
    tasks.push(Promise.all([load('24h'), load('7d')]).then(([day, week]) => {
      put(windows, windowCard('Last 24 hours', day.data, 'funnel-24h'), windowCard('Last 7 days', week.data, 'funnel-7d'));
      const series = { '24h': day.data, '7d': week.data };
      const drawSeries = (key) => put(chartBox, bars(series[key].series.map((p) => ({ at: p.at, value: p.sent, value2: p.failed })), {
        label: 'sent deliveries over time', tick: key === '24h' ? hourTick : dayTick, every: key === '24h' ? 3 : 1, testid: 'sends-chart',
      }));
      const chartBox = h('div');
      put(sends, card('Sends', chartBox, { aside: segmented([['24h', '24 h'], ['7d', '7 days']], '24h', drawSeries, 'sends-window') }));
      drawSeries('24h');
      const rows = week.data.failures.map((f) => ({ label: f.reason, value: f.count, note: statusBadge('deliveryStatus', f.status) }));
      put(failures, card('Delivery failures by reason', rows.length ? ranking(rows, { tone: 'bad', testid: 'failures' })
        : h('p', { class: 'muted', 'data-testid': 'failures' }, 'No failed deliveries in the last 7 days.'), { aside: h('span', { class: 'muted small' }, 'last 7 days') }));
    }).catch((error) => { if (error.name !== 'AbortError') put(windows, errorBox(error)); }));
  }
  if (canEvents) {
    put(events, loading());
    tasks.push(api('GET', '/v1/stats/events', { signal: ctx.signal }).then(({ data }) => {
      const names = data.names.slice(0, 8).map((n) => ({ label: n.name, value: n.count, note: n.reserved ? badge('reserved', 'info') : null }));
      put(events, h('div', { class: 'grid-2 wide-left' },
        card('Events per hour', bars(data.hours.map((p) => ({ at: p.at, value: p.count })), { label: 'events per hour', tick: hourTick, every: 3, testid: 'events-chart' }),
          { aside: h('span', { class: 'muted small', 'data-testid': 'events-total' }, `${number(data.total)} in 24 h`) }),
        card('Top events', names.length ? ranking(names, { testid: 'event-names' }) : h('p', { class: 'muted' }, 'No events in the last 24 hours.'))));
    }).catch((error) => { if (error.name !== 'AbortError') put(events, errorBox(error)); }));
  }
  if (canRetention) {
    put(retention, loading());
    tasks.push(api('GET', '/v1/retention', { signal: ctx.signal }).then(({ data }) => put(retention, retentionCard(data.tables)))
      .catch((error) => { if (error.name !== 'AbortError') put(retention, errorBox(error)); }));
  }
  await Promise.all(tasks);
}

const retentionNames = {
  events: 'Events', messages: 'Messages and their deliveries', workflow_runs: 'Finished workflow runs', webhook_attempts: 'Webhook attempts',
  idempotency_records: 'Idempotency keys',
};

// How long the deployment keeps each kind of data and the oldest it holds (the owners' last
// retention passes), and what is kept past its time.
function retentionCard(tables) {
  const note = h('p', { class: 'muted small', 'data-testid': 'retention-ledger' },
    'A week holding a send or a workflow run still going is kept past its time, and goes once they end.');
  if (!tables.length) {
    return card('Data retention', h('div', { class: 'stack' },
      h('p', { class: 'muted', 'data-testid': 'retention' }, 'No retention pass has run yet.'), note));
  }
  return card('Data retention', h('div', { class: 'stack' },
    table([
      { label: 'Data', cell: (t) => retentionNames[t.table] ?? t.table },
      { label: 'Kept for', cell: (t) => h('span', { 'data-testid': `retention-${t.table}` }, duration(t.retentionSeconds)) },
      { label: 'Oldest kept', cell: (t) => (t.oldestKept ? dateTime(t.oldestKept) : 'none yet') },
      { label: 'Partitions', class: 'num', cell: (t) => `${number(t.partitions)} (${number(t.partitionsAhead)} ahead${t.partitionsKept ? `, ${number(t.partitionsKept)} kept in use` : ''})` },
      { label: 'Checked', cell: (t) => relative(t.checkedAt) },
    ], tables, { rowTestid: 'retention-row' }),
    note), { aside: h('span', { class: 'muted small' }, 'whole deployment') });
}

function windowCard(title, stats, testid) {
  const f = stats.funnel;
  const failed = failedDeliveries(stats.deliveries);
  return card(title, h('div', { class: 'stack' },
    h('div', { class: 'stats compact' },
      stat('Messages', number(stats.messages)),
      stat('Deliveries sent', number(stats.deliveries.sent), 'one per device', `${testid}-deliveries-sent`),
      stat('Failed', number(failed), 'deliveries'),
      stat('Open rate', percent(f.opened, f.sent), 'of recipients', `${testid}-open-rate`)),
    h('p', { class: 'muted small funnel-caption', 'data-testid': `${testid}-caption` },
      'Funnel in recipients: each message’s subscribers with a sent delivery (once however many devices), then those reporting delivered, then opened; summed over the messages.'),
    funnel([{ label: 'Sent', value: f.sent }, { label: 'Delivered', value: f.delivered }, { label: 'Opened', value: f.opened }], { testid })));
}
