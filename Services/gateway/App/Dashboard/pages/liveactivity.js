// One subscriber's Live Activities: the activities (state, last update, token status), the
// push-to-start tokens, and a form that starts, updates or ends one through
// POST /v1/live-activities/send, with the answer for every token.
import { api, newIdempotencyKey, session } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { json, relative, shortToken } from '../lib/format.js';
import { jsonField } from '../lib/jsonfield.js';
import { oncePerKey } from '../lib/once.js';
import { label } from '../lib/status.js';
import { button, card, code, errorBox, field, pageHeader, segmented, statusBadge, table } from '../lib/ui.js';
import { liveActivityEvent, pushPriority } from '../lib/vocabulary.js';

export async function render(main, params, ctx) {
  const id = params.id;
  const path = `/v1/subscribers/${encodeURIComponent(id)}`;
  const canSend = session.has('messages:send');
  let activities = [];
  let startTokens = [];
  let more = { activities: false, startTokens: false };

  const activitiesBox = h('div');
  const tokensBox = h('div');
  async function load() {
    const [a, t] = await Promise.all([
      api('GET', `${path}/live-activities`, { query: { limit: 200 }, signal: ctx.signal }),
      api('GET', `${path}/live-activity-start-tokens`, { query: { limit: 200 }, signal: ctx.signal }),
    ]);
    activities = a.data;
    startTokens = t.data;
    more = { activities: a.metadata.hasMore, startTokens: t.metadata.hasMore };
    drawActivities();
    drawTokens();
    form.refresh();
  }

  function tokenState(status, reason) {
    return h('span', { 'data-testid': 'la-token-status', title: reason || '' },
      statusBadge('liveActivityTokenStatus', status),
      reason ? h('span', { class: 'muted small' }, ` ${reason}`) : null);
  }

  function drawActivities() {
    put(activitiesBox, activities.length ? [table([
      { label: 'Activity', cell: (a) => h('div', {}, h('code', { class: 'strong', 'data-testid': 'la-activity-id' }, a.activityId),
        h('div', { class: 'muted small' }, a.attributesType)) },
      { label: 'State', cell: (a) => h('span', { 'data-testid': 'la-activity-state' },
        statusBadge('liveActivityState', a.state),
        a.endedBy ? h('span', { class: 'muted small', title: a.endedAt || '' }, ` by ${a.endedBy}`) : null) },
      { label: 'Last update', cell: (a) => a.lastEvent
        ? h('div', {}, h('span', { 'data-testid': 'la-activity-last-event' }, a.lastEvent),
          h('div', { class: 'muted small', title: a.lastUpdateAt || '' },
            `${relative(a.lastUpdateAt)}${a.lastTimestamp === null ? '' : ` · timestamp ${a.lastTimestamp}`}`))
        : h('span', { class: 'muted', 'data-testid': 'la-activity-last-event' }, 'none yet') },
      { label: 'Registered', cell: (a) => h('span', { title: a.registeredAt }, relative(a.registeredAt)) },
      { label: 'Push token', cell: (a) => h('div', {}, h('code', { title: a.token }, shortToken(a.token)),
        h('div', { class: 'muted small' }, [a.environment, a.bundleId].filter(Boolean).join(' · '))) },
      { label: 'Token', cell: (a) => tokenState(a.tokenStatus, a.tokenInvalidReason) },
      { label: '', cell: (a) => canSend && a.state === 'active'
        ? button('Update', () => form.pick('update', a.activityId), { kind: 'ghost', testid: 'la-activity-pick' }) : null },
    ], activities, { rowTestid: 'la-activity-row' }),
    more.activities ? h('p', { class: 'muted small pad' }, 'The first 200 activities, in activity id order.') : null]
      : h('p', { class: 'muted pad', 'data-testid': 'la-activities-empty' }, 'No Live Activities registered for this subscriber.'));
  }

  function drawTokens() {
    put(tokensBox, startTokens.length ? [table([
      { label: 'Attributes type', cell: (t) => h('code', { class: 'strong', 'data-testid': 'la-start-type' }, t.attributesType) },
      { label: 'Push-to-start token', cell: (t) => h('div', {}, h('code', { title: t.token }, shortToken(t.token)),
        h('div', { class: 'muted small' }, [t.environment, t.bundleId].filter(Boolean).join(' · '))) },
      { label: 'Token', cell: (t) => tokenState(t.tokenStatus, t.tokenInvalidReason) },
      { label: 'Last start', cell: (t) => h('span', { title: t.lastSentAt || '' }, t.lastSentAt ? relative(t.lastSentAt) : 'never') },
      { label: 'Registered', cell: (t) => h('span', { title: t.registeredAt }, relative(t.registeredAt)) },
      { label: '', cell: (t) => canSend && t.tokenStatus === 'active'
        ? button('Start', () => form.pick('start', t.attributesType), { kind: 'ghost', testid: 'la-start-pick' }) : null },
    ], startTokens, { rowTestid: 'la-start-row' }),
    more.startTokens ? h('p', { class: 'muted small pad' }, 'The first 200 tokens, in attributes type order.') : null]
      : h('p', { class: 'muted pad', 'data-testid': 'la-start-empty' }, 'No push-to-start tokens (iOS 17.2+ registers one per attributes type).'));
  }

  const form = sendForm(id, () => activities, () => startTokens, () => load().catch(() => {}));
  main.append(
    h('a', { href: '#/live-activities', class: 'back' }, 'Live Activities'),
    pageHeader(id, 'Live Activities and push-to-start tokens',
      h('a', { class: 'btn btn-ghost', href: `#/subscribers/${encodeURIComponent(id)}`, 'data-testid': 'la-subscriber-link' }, 'Subscriber')),
    h('div', { class: 'stack' },
      card('Activities', activitiesBox, { class: 'flush', aside: h('span', { class: 'muted small' }, 'each with its update token') }),
      card('Push-to-start tokens', tokensBox, { class: 'flush', aside: h('span', { class: 'muted small' }, 'one per attributes type and device') }),
      canSend ? form.el : card('Send', h('p', { class: 'muted' }, 'This key cannot send (it lacks messages:send).'))));
  await load();
}

/** The start / update / end form and its answer. */
function sendForm(subscriber, getActivities, getStartTokens, reload) {
  let event = 'update';
  let priority = pushPriority[0];
  const once = oncePerKey(newIdempotencyKey);
  const f = {
    activity: h('select', { class: 'input', 'data-testid': 'la-send-activity' }),
    type: h('input', { class: 'input', list: 'la-types', placeholder: 'MatchAttributes', spellcheck: 'false', 'data-testid': 'la-send-type' }),
    attributes: h('textarea', { class: 'input mono', rows: 2, spellcheck: 'false', placeholder: '{"matchId": "m_1"}', 'data-testid': 'la-send-attributes' }),
    contentState: h('textarea', { class: 'input mono', rows: 4, spellcheck: 'false', placeholder: '{"score": 2}', 'data-testid': 'la-send-content-state' }),
    title: h('input', { class: 'input', placeholder: 'Goal!', 'data-testid': 'la-send-alert-title' }),
    body: h('input', { class: 'input', placeholder: 'It is 2–1', 'data-testid': 'la-send-alert-body' }),
    sound: h('input', { class: 'input', placeholder: 'default', 'data-testid': 'la-send-alert-sound' }),
    stale: h('input', { class: 'input', type: 'datetime-local', 'data-testid': 'la-send-stale' }),
    dismissal: h('input', { class: 'input', type: 'datetime-local', 'data-testid': 'la-send-dismissal' }),
  };
  f.contentState.value = '{}';
  const types = h('datalist', { id: 'la-types' });
  const checked = {
    attributes: jsonField(f.attributes, { object: true, example: '{"matchId": "m_1"}', testid: 'la-json-error' }),
    contentState: jsonField(f.contentState, { required: true, object: true, example: '{"score": 2}', testid: 'la-json-error' }),
  };
  const preview = code('', { testid: 'la-send-request', class: 'wrap' });
  const result = h('div', { 'data-testid': 'la-send-outcome' });
  const targetBox = h('div');
  const sendButton = button('Send update', null, { kind: 'primary', testid: 'la-send-submit' });

  const iso = (input) => {
    if (!input.value) return undefined;
    const date = new Date(input.value);
    return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
  };

  /** The POST /v1/live-activities/send body; null when a JSON field does not parse. */
  function request() {
    const body = { to: subscriber, event };
    if (event === 'start') {
      if (f.type.value.trim()) body.attributesType = f.type.value.trim();
      const attributes = checked.attributes.read();
      if (!attributes.ok) return null;
      if (attributes.value) body.attributes = attributes.value;
    } else {
      put(checked.attributes.problem);
      if (f.activity.value) body.activityId = f.activity.value;
    }
    const state = checked.contentState.read();
    if (!state.ok) return null;
    body.contentState = state.value;
    const alert = {};
    for (const name of ['title', 'body', 'sound']) if (f[name].value.trim()) alert[name] = f[name].value.trim();
    if (Object.keys(alert).length) body.alert = alert;
    if (iso(f.stale)) body.staleDate = iso(f.stale);
    if (iso(f.dismissal)) body.dismissalDate = iso(f.dismissal);
    if (priority !== pushPriority[0]) body.priority = priority;
    return body;
  }

  function update() {
    const body = request();
    preview.textContent = body ? json(body) : 'Fix the JSON fields to see the request.';
  }

  function drawTarget() {
    const activities = getActivities();
    if (event === 'start') {
      put(types, [...new Set(getStartTokens().map((t) => t.attributesType))].map((type) => h('option', { value: type })));
      put(targetBox, h('div', { class: 'stack' },
        field('Attributes type', f.type, 'Sent to every usable push-to-start token of this type.'), types,
        field('Attributes (JSON)', f.attributes, 'The activity’s static attributes.'), checked.attributes.problem));
    } else {
      const selected = f.activity.value;
      put(f.activity, activities.length
        ? activities.map((a) => h('option', { value: a.activityId, selected: a.activityId === selected },
          `${a.activityId} · ${a.attributesType} · ${a.state}${a.tokenStatus === 'invalid' ? ' · token invalid' : ''}`))
        : h('option', { value: '' }, 'No activity registered'));
      if (!selected) {
        const active = activities.find((a) => a.state === 'active');
        if (active) f.activity.value = active.activityId;
      }
      put(targetBox, field('Activity', f.activity, event === 'end' ? 'Ends it: nothing is pushed to it afterwards.' : null));
    }
    sendButton.querySelector('.btn-label').textContent = { start: 'Start activity', update: 'Send update', end: 'End activity' }[event] ?? `Send ${event}`;
  }

  const eventSwitch = h('div');
  const drawSwitch = () => put(eventSwitch, segmented(liveActivityEvent.map((value) => [value, label(value)]), event,
    (value) => { event = value; once.edited(); drawTarget(); update(); }, 'la-send-event'));

  function outcome(data) {
    const rows = data.results || [];
    const sent = rows.filter((r) => r.status === 'sent').length;
    return card('Outcome', h('div', {},
      h('div', { class: `notice ${sent ? 'notice-good' : 'notice-warn'} pad-notice`, 'data-testid': 'la-send-accepted' },
        h('strong', {}, `${data.event}: `), `${sent} of ${rows.length} token${rows.length === 1 ? '' : 's'} sent`,
        data.messageId ? [' · message ', h('a', { href: `#/messages/${data.messageId}`, 'data-testid': 'la-send-message' }, data.messageId.slice(0, 8))] : null),
      rows.length ? table([
        { label: 'To', cell: (r) => h('div', {}, h('code', { class: 'strong' }, r.activityId || r.attributesType || '—'),
          h('div', { class: 'muted small' }, h('code', { title: r.token }, shortToken(r.token)))) },
        { label: 'Status', cell: (r) => h('div', {}, h('span', { 'data-testid': 'la-result-status' }, statusBadge('liveActivityResultStatus', r.status)),
          r.deliveryId ? h('div', { class: 'small' }, h('a', { href: `#/deliveries/${r.deliveryId}`, 'data-testid': 'la-result-delivery' }, 'its delivery')) : null) },
        { label: 'APNs', class: 'wide', cell: (r) => h('div', {},
          h('span', { class: 'strong', 'data-testid': 'la-result-apns-status' }, r.apnsStatus === null || r.apnsStatus === undefined ? '—' : String(r.apnsStatus)),
          r.reason ? h('span', { class: 'small bad' }, ` ${r.reason}`) : null,
          r.apnsId ? h('div', {}, h('code', { class: 'small muted break', title: 'apns-id', 'data-testid': 'la-result-apns-id' }, r.apnsId)) : null) },
      ], rows, { rowTestid: 'la-result-row' }) : null), { class: 'flush' });
  }

  function failure(error) {
    const messageId = error.details && !Array.isArray(error.details) ? error.details.messageId : null;
    return h('div', { class: 'stack', 'data-testid': 'la-send-error' }, errorBox(error),
      messageId ? h('p', { class: 'muted small' }, 'The send still completes: see ', h('a', { href: `#/messages/${messageId}` }, 'its message'), '.') : null);
  }

  // One idempotency key per composed request (lib/once.js): a double click sends once, a retry of
  // the same request after an error is answered from the ledger, editing starts a new request.
  sendButton.addEventListener('click', () => {
    if (once.sending) return;
    const body = request();
    if (!body) return;
    put(result);
    sendButton.disabled = true;
    once.send((idempotencyKey) => api('POST', '/v1/live-activities/send', { body, idempotencyKey }))
      .then(async ({ data }) => { put(result, outcome(data)); await reload(); })
      .catch((error) => { if (error.name !== 'AbortError') put(result, failure(error)); })
      .finally(() => { sendButton.disabled = false; });
  });

  const fields = h('div', { class: 'stack' },
    field('Content state (JSON)', f.contentState, 'The new ContentState; required, also on end.'), checked.contentState.problem,
    h('div', { class: 'row' }, field('Alert title', f.title), field('Alert body', f.body), field('Sound', f.sound)),
    h('p', { class: 'muted small tight' }, 'An alert shows a banner with the update; a start requires one.'),
    h('div', { class: 'row' }, field('Stale date', f.stale), field('Dismissal date', f.dismissal)),
    h('div', { class: 'field' }, h('span', { class: 'field-label' }, 'Priority'),
      h('div', {}, segmented(pushPriority.map((value) => [value, label(value)]), priority,
        (value) => { priority = value; once.edited(); update(); }, 'la-send-priority')),
      h('span', { class: 'field-hint' }, 'APNs priority 10 (high) or 5 (normal, sent when the device saves power).')));
  for (const el of Object.values(f)) {
    el.addEventListener('input', () => { once.edited(); update(); });
    el.addEventListener('change', update);
  }
  const el = h('div', { class: 'grid-2 compose' },
    card('Send', h('div', { class: 'stack' }, eventSwitch, targetBox, fields,
      h('div', { class: 'actions' }, sendButton))),
    h('div', { class: 'stack sticky' },
      card('Request', preview, { aside: h('span', { class: 'muted small' }, 'POST /v1/live-activities/send') }),
      result));
  drawSwitch();
  drawTarget();
  update();
  return {
    el,
    refresh: () => { drawTarget(); update(); },
    pick: (kind, value) => {
      event = kind;
      once.edited();
      drawSwitch();
      if (kind === 'start') f.type.value = value;
      drawTarget();
      if (kind !== 'start') f.activity.value = value;
      update();
      f.contentState.focus();
    },
  };
}
