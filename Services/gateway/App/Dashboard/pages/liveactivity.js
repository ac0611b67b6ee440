// One subscriber's Live Activities: the activities (state, last update, token status), the
// push-to-start tokens, and a form that starts, updates or ends one through
// POST /v1/live-activities/send, with the answer for every token.
import { api, newIdempotencyKey, session } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { json, relative, shortToken } from '../lib/format.js';
import { badge, button, card, code, errorBox, field, pageHeader, segmented, table } from '../lib/ui.js';

const RESULT_TONES = {
  sent: 'good', sending: 'info', failed: 'bad', invalid_token: 'bad', token_invalid: 'bad',
  activity_ended: 'warn', stale_timestamp: 'warn',
};

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
      badge(status === 'active' ? 'active' : 'invalid', status === 'active' ? 'good' : 'bad'),
      reason ? h('span', { class: 'muted small' }, ` ${reason}`) : null);
  }

  function drawActivities() {
    put(activitiesBox, activities.length ? [table([
      { label: 'Activity', cell: (a) => h('div', {}, h('code', { class: 'strong', 'data-testid': 'la-activity-id' }, a.activityId),
        h('div', { class: 'muted small' }, a.attributesType)) },
      { label: 'State', cell: (a) => h('span', { 'data-testid': 'la-activity-state' },
        badge(a.state, a.state === 'active' ? 'good' : 'muted'),
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
  let priority = 'high';
  let idempotencyKey = newIdempotencyKey();
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
  const problems = {
    attributes: h('div', { class: 'field-problem' }), contentState: h('div', { class: 'field-problem' }),
  };
  const preview = code('', { testid: 'la-send-request', class: 'wrap' });
  const result = h('div', { 'data-testid': 'la-send-outcome' });
  const targetBox = h('div');
  const sendButton = button('Send update', null, { kind: 'primary', testid: 'la-send-submit' });

  function parseObject(textarea, problem, required) {
    const text = textarea.value.trim();
    put(problem);
    if (!text) {
      if (required) put(problem, h('span', { 'data-testid': 'la-json-error' }, 'Required: a JSON object (may be {}).'));
      return { ok: !required, value: undefined };
    }
    try {
      const value = JSON.parse(text);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('must be a JSON object, e.g. {"score": 2}');
      return { ok: true, value };
    } catch (error) {
      put(problem, h('span', { 'data-testid': 'la-json-error' }, `Not valid JSON: ${error.message}`));
      return { ok: false };
    }
  }

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
      const attributes = parseObject(f.attributes, problems.attributes, false);
      if (!attributes.ok) return null;
      if (attributes.value) body.attributes = attributes.value;
    } else {
      put(problems.attributes);
      if (f.activity.value) body.activityId = f.activity.value;
    }
    const state = parseObject(f.contentState, problems.contentState, true);
    if (!state.ok) return null;
    body.contentState = state.value;
    const alert = {};
    for (const name of ['title', 'body', 'sound']) if (f[name].value.trim()) alert[name] = f[name].value.trim();
    if (Object.keys(alert).length) body.alert = alert;
    if (iso(f.stale)) body.staleDate = iso(f.stale);
    if (iso(f.dismissal)) body.dismissalDate = iso(f.dismissal);
    if (priority !== 'high') body.priority = priority;
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
        field('Attributes (JSON)', f.attributes, 'The activity’s static attributes.'), problems.attributes));
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
    sendButton.querySelector('.btn-label').textContent = { start: 'Start activity', update: 'Send update', end: 'End activity' }[event];
  }

  const eventSwitch = h('div');
  const drawSwitch = () => put(eventSwitch, segmented([['update', 'Update'], ['end', 'End'], ['start', 'Start']], event,
    (value) => { event = value; idempotencyKey = newIdempotencyKey(); drawTarget(); update(); }, 'la-send-event'));

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
        { label: 'Status', cell: (r) => h('div', {}, h('span', { 'data-testid': 'la-result-status' }, badge(r.status, RESULT_TONES[r.status])),
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

  // One idempotency key per composed request, so a double click sends once; editing starts anew.
  let inFlight = null;
  sendButton.addEventListener('click', async () => {
    if (inFlight) return inFlight;
    const body = request();
    if (!body) return;
    put(result);
    sendButton.disabled = true;
    inFlight = (async () => {
      try {
        const { data } = await api('POST', '/v1/live-activities/send', { body, idempotencyKey });
        put(result, outcome(data));
        await reload();
      } catch (error) {
        if (error.name !== 'AbortError') put(result, failure(error));
      } finally {
        idempotencyKey = newIdempotencyKey();
        sendButton.disabled = false;
        inFlight = null;
      }
    })();
    return inFlight;
  });

  const fields = h('div', { class: 'stack' },
    field('Content state (JSON)', f.contentState, 'The new ContentState; required, also on end.'), problems.contentState,
    h('div', { class: 'row' }, field('Alert title', f.title), field('Alert body', f.body), field('Sound', f.sound)),
    h('p', { class: 'muted small tight' }, 'An alert shows a banner with the update; a start requires one.'),
    h('div', { class: 'row' }, field('Stale date', f.stale), field('Dismissal date', f.dismissal)),
    h('div', { class: 'field' }, h('span', { class: 'field-label' }, 'Priority'),
      h('div', {}, segmented([['high', 'High (10)'], ['normal', 'Normal (5)']], priority,
        (value) => { priority = value; idempotencyKey = newIdempotencyKey(); update(); }, 'la-send-priority'))));
  for (const el of Object.values(f)) {
    el.addEventListener('input', () => { if (!inFlight) idempotencyKey = newIdempotencyKey(); update(); });
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
      idempotencyKey = newIdempotencyKey();
      drawSwitch();
      if (kind === 'start') f.type.value = value;
      drawTarget();
      if (kind !== 'start') f.activity.value = value;
      update();
      f.contentState.focus();
    },
  };
}
