// Compose and send: target, content, action, buttons, options; the audience counted as it is
// typed and the exact APNs payload (built by the server, POST /v1/messages/preview) beside the form.
import { api, newIdempotencyKey } from '../lib/api.js';
import { debounce, h, put } from '../lib/dom.js';
import { liveExpression } from '../lib/expression.js';
import { bytes, number } from '../lib/format.js';
import { jsonField } from '../lib/jsonfield.js';
import { oncePerKey } from '../lib/once.js';
import { button, card, code, errorBox, field, icons, pageHeader, segmented } from '../lib/ui.js';
import { interruptionLevel } from '../lib/vocabulary.js';

export async function render(main, params, ctx) {
  let mode = 'segment';
  const once = oncePerKey(newIdempotencyKey);
  const input = (props) => h('input', { class: 'input', ...props });
  const f = {
    to: input({ placeholder: 'alice, bob', 'data-testid': 'send-to' }),
    topic: input({ placeholder: 'news', 'data-testid': 'send-topic' }),
    segment: h('select', { class: 'input', 'data-testid': 'send-segment' }),
    where: h('textarea', { class: 'input mono', rows: 3, spellcheck: 'false', placeholder: 'plan == "pro" and did("app.opened", within: "7d")', 'data-testid': 'send-where' }),
    title: input({ placeholder: 'Your order shipped', 'data-testid': 'send-title' }),
    subtitle: input({ placeholder: 'Optional', 'data-testid': 'send-subtitle' }),
    body: h('textarea', { class: 'input', rows: 3, placeholder: 'It arrives tomorrow between 9 and 12.', 'data-testid': 'send-body' }),
    image: input({ placeholder: 'https://…/picture.jpg', 'data-testid': 'send-image' }),
    deepLink: input({ placeholder: 'myapp://orders/42', 'data-testid': 'send-deeplink' }),
    actionName: input({ placeholder: 'open_paywall', 'data-testid': 'send-action-name' }),
    actionData: h('textarea', { class: 'input mono', rows: 2, placeholder: '{"plan": "annual"}', 'data-testid': 'send-action-data' }),
    data: h('textarea', { class: 'input mono', rows: 3, placeholder: '{"orderId": 42}', 'data-testid': 'send-data' }),
    sound: input({ placeholder: 'default', 'data-testid': 'send-sound' }),
    badge: input({ type: 'number', min: 0, placeholder: '—', 'data-testid': 'send-badge' }),
    category: input({ placeholder: 'derived from the buttons', 'data-testid': 'send-category' }),
    level: h('select', { class: 'input', 'data-testid': 'send-level' }, ['', ...interruptionLevel].map((l) => h('option', { value: l }, l || 'default'))),
  };
  const buttonsBox = h('div', { class: 'stack' });
  const buttons = [];
  const audienceOut = h('div', { class: 'expr-out', 'data-testid': 'send-audience' });
  const json = {
    data: jsonField(f.data, { object: true }),
    actionData: jsonField(f.actionData, { object: true, example: '{"plan": "annual"}' }),
  };
  const previewOut = h('div');
  const notification = h('div', { class: 'phone' });
  const result = h('div');
  const sendButton = button('Send message', null, { kind: 'primary', testid: 'send-submit', icon: icons.send });

  // Segments for the picker.
  try {
    const { data } = await api('GET', '/v1/segments', { query: { limit: 200 }, signal: ctx.signal });
    put(f.segment, data.length ? data.map((s) => h('option', { value: s.key }, `${s.name} (${s.key})`)) : h('option', { value: '' }, 'no segments yet'));
  } catch { put(f.segment, h('option', { value: '' }, 'segments unavailable')); }

  const targetBox = h('div');
  const drawTarget = () => {
    const panels = {
      to: field('Subscriber ids', f.to, 'Up to 1000, separated by commas.'),
      topic: field('Topic key', f.topic),
      segment: field('Saved segment', f.segment),
      where: field('Expression', f.where, 'Counted as you type; errors show their line and column.'),
    };
    put(targetBox, panels[mode]);
    countAudience();
  };

  // Audience counts: the expression (or a topic) through the preview route, a segment by its count.
  let whereChecker = null;
  const countAudience = debounce(async () => {
    if (mode === 'where') { if (!whereChecker) whereChecker = liveExpression(f.where, audienceOut); else whereChecker(); return; }
    try {
      if (mode === 'segment' && f.segment.value) {
        const { data } = await api('GET', `/v1/segments/${encodeURIComponent(f.segment.value)}/count`, { signal: ctx.signal });
        put(audienceOut, h('div', { class: 'expr-ok' }, h('span', { class: 'expr-count', 'data-testid': 'audience-count' }, number(data.count)), ' subscribers in the segment'));
      } else if (mode === 'topic' && f.topic.value.trim()) {
        const { data } = await api('POST', '/v1/audience/preview', { body: { where: `in_topic(${JSON.stringify(f.topic.value.trim())})` }, signal: ctx.signal });
        put(audienceOut, h('div', { class: 'expr-ok' }, h('span', { class: 'expr-count', 'data-testid': 'audience-count' }, number(data.count)), ' subscribers follow the topic'));
      } else if (mode === 'to') {
        const ids = splitIds(f.to.value);
        put(audienceOut, h('div', { class: 'expr-ok' }, h('span', { class: 'expr-count', 'data-testid': 'audience-count' }, number(ids.length)), ids.length === 1 ? ' subscriber' : ' subscribers'));
      } else {
        put(audienceOut, h('span', { class: 'muted' }, 'Choose who receives it.'));
      }
    } catch (error) {
      if (error.name !== 'AbortError') put(audienceOut, h('div', { class: 'notice notice-bad' }, error.message));
    }
  }, 250);

  function addButton(values = {}) {
    if (buttons.length >= 4) return;
    const row = {
      id: input({ placeholder: 'id', value: values.id || `b${buttons.length + 1}`, 'data-testid': 'button-id' }),
      title: input({ placeholder: 'Title', value: values.title || '', 'data-testid': 'button-title' }),
      destructive: h('input', { type: 'checkbox' }), foreground: h('input', { type: 'checkbox', checked: true }),
      input: h('input', { type: 'checkbox' }),
    };
    row.el = h('div', { class: 'button-row' }, row.id, row.title,
      button('Remove', () => { buttons.splice(buttons.indexOf(row), 1); row.el.remove(); drawButtonsAdd(); update(); }, { kind: 'ghost' }),
      h('div', { class: 'button-flags' },
        h('label', { class: 'check' }, row.foreground, 'opens the app'), h('label', { class: 'check' }, row.destructive, 'destructive'),
        h('label', { class: 'check' }, row.input, 'text input')));
    buttons.push(row);
    buttonsBox.insertBefore(row.el, addBox);
    drawButtonsAdd();
    update();
  }
  const addBox = h('div');
  const drawButtonsAdd = () => put(addBox, buttons.length < 4
    ? button(`Add a button (${buttons.length}/4)`, () => addButton(), { kind: 'ghost', icon: icons.plus, testid: 'add-button' })
    : h('span', { class: 'muted small' }, 'Four buttons at most.'));
  buttonsBox.append(addBox);
  drawButtonsAdd();

  /** The POST /v1/messages body from the form; null when a JSON field does not parse. */
  function message() {
    const body = {};
    if (mode === 'to') { const ids = splitIds(f.to.value); if (ids.length) body.to = ids.length === 1 ? ids[0] : ids; }
    if (mode === 'topic' && f.topic.value.trim()) body.topic = f.topic.value.trim();
    if (mode === 'segment' && f.segment.value) body.segment = f.segment.value;
    if (mode === 'where' && f.where.value.trim()) body.where = f.where.value;
    for (const name of ['title', 'subtitle', 'body', 'image', 'deepLink', 'sound', 'category']) {
      const value = f[name].value.trim();
      if (value) body[name] = name === 'body' ? f.body.value : value;
    }
    if (f.badge.value !== '') body.badge = Number(f.badge.value);
    if (f.level.value) body.interruptionLevel = f.level.value;
    const data = json.data.read();
    const actionData = json.actionData.read();
    if (!data.ok || !actionData.ok) return null;
    if (data.value) body.data = data.value;
    if (f.actionName.value.trim()) body.action = { name: f.actionName.value.trim(), ...(actionData.value ? { data: actionData.value } : {}) };
    if (buttons.length) {
      body.actions = buttons.map((b) => ({
        id: b.id.value.trim(), title: b.title.value.trim(), destructive: b.destructive.checked || undefined,
        foreground: b.foreground.checked, input: b.input.checked || undefined,
      }));
    }
    return body;
  }

  // The preview: the server builds the payload the sender would send.
  let previewGeneration = 0;
  let payloadView = 'exact';
  const preview = debounce(async () => {
    const body = message();
    drawNotification();
    if (!body) { put(previewOut, h('p', { class: 'muted' }, 'Fix the JSON fields to see the payload.')); return; }
    const content = { ...body };
    for (const key of ['to', 'topic', 'segment', 'where']) delete content[key];
    const mine = ++previewGeneration;
    try {
      const { data } = await api('POST', '/v1/messages/preview', { body: content, signal: ctx.signal });
      if (mine !== previewGeneration) return;
      const over = data.size > data.maxSize;
      const exact = code(data.payload, { testid: 'payload-preview', class: 'wrap' });
      const formatted = code(pretty(data.payload), { testid: 'payload-formatted' });
      const showPayload = () => { exact.hidden = payloadView !== 'exact'; formatted.hidden = payloadView === 'exact'; };
      showPayload();
      put(previewOut,
        h('div', { class: 'subhead' }, h('h3', {}, 'APNs payload'),
          h('span', { class: ['small', over ? 'bad' : 'muted'], 'data-testid': 'payload-size' }, `${bytes(data.size)} of ${number(data.maxSize)}`),
          segmented([['exact', 'Exact bytes'], ['formatted', 'Formatted']], payloadView, (value) => { payloadView = value; showPayload(); }, 'payload-view')),
        exact, formatted,
        h('div', { class: 'subhead' }, h('h3', {}, 'Headers')),
        code(Object.entries(data.headers).map(([k, v]) => `${k}: ${v}`).join('\n'), { testid: 'headers-preview' }),
        h('p', { class: 'muted small' }, 'bk.messageId is filled in when the message is sent.'));
    } catch (error) {
      if (mine !== previewGeneration || error.name === 'AbortError') return;
      put(previewOut, errorBox(error));
    }
  }, 300);

  function drawNotification() {
    const title = f.title.value.trim();
    const text = f.body.value.trim();
    put(notification, h('div', { class: 'push' },
      h('div', { class: 'push-head' }, h('img', { src: '/dashboard/favicon.svg', alt: '', width: 18, height: 18 }), h('span', {}, 'YOUR APP'), h('span', { class: 'muted' }, 'now')),
      h('div', { class: 'push-title' }, title || (text ? '' : 'Title')),
      f.subtitle.value.trim() ? h('div', { class: 'push-subtitle' }, f.subtitle.value.trim()) : null,
      h('div', { class: 'push-body' }, text || (title ? '' : 'The message body appears here.')),
      buttons.length ? h('div', { class: 'push-buttons' }, buttons.map((b) => h('div', { class: ['push-button', b.destructive.checked ? 'bad' : null] }, b.title.value || b.id.value))) : null));
  }

  // Any change composes a new message (a new idempotency key) and rebuilds the preview.
  const update = () => {
    once.edited();
    preview();
    if (!once.sending) sendButton.disabled = false;
  };
  for (const el of Object.values(f)) el.addEventListener('input', update);
  for (const el of [f.to, f.topic]) el.addEventListener('input', countAudience);
  f.segment.addEventListener('change', () => { countAudience(); update(); });
  buttonsBox.addEventListener('input', update);
  buttonsBox.addEventListener('change', update);

  // Sending: one idempotency key per composed message (lib/once.js), so a double click (or a
  // retry after a lost answer) sends once; editing the form afterwards starts a new message.
  sendButton.addEventListener('click', () => {
    if (once.sending) return;
    const body = message();
    if (!body) return;
    put(result);
    sendButton.disabled = true;
    once.send((idempotencyKey) => api('POST', '/v1/messages', { body, idempotencyKey }))
      .then(({ data }) => { location.hash = `#/messages/${data.id}`; })
      .catch((error) => { put(result, errorBox(error)); sendButton.disabled = false; });
  });

  main.append(pageHeader('Send a message', 'Compose a push; the payload on the right is what APNs will receive.'),
    h('div', { class: 'grid-2 compose' },
      h('div', { class: 'stack' },
        card('Audience', h('div', { class: 'stack' },
          segmented([['segment', 'Segment'], ['where', 'Expression'], ['topic', 'Topic'], ['to', 'Subscribers']], mode, (value) => { mode = value; drawTarget(); update(); }, 'send-mode'),
          targetBox, audienceOut)),
        card('Content', h('div', { class: 'stack' },
          field('Title', f.title), field('Subtitle', f.subtitle), field('Body', f.body),
          h('div', { class: 'row' }, field('Image URL', f.image), field('Deep link', f.deepLink)))),
        card('Action when opened', h('div', { class: 'stack' },
          h('p', { class: 'muted small' }, 'A named action the app handles (e.g. open a paywall), with data for it.'),
          h('div', { class: 'row' }, field('Action name', f.actionName), field('Action data (JSON)', f.actionData)), json.actionData.problem)),
        card('Buttons', buttonsBox),
        card('Data and options', h('div', { class: 'stack' },
          field('Custom data (JSON)', f.data, 'Delivered as is under bk.data.'), json.data.problem,
          h('div', { class: 'row' }, field('Sound', f.sound), field('Badge', f.badge), field('Category', f.category), field('Interruption level', f.level)))),
      ),
      h('div', { class: 'stack sticky' },
        card('Preview', h('div', { class: 'stack' }, notification, previewOut)),
        h('div', { class: 'send-bar' }, h('span', { class: 'muted small' }, 'Sent once, even on a double click.'), sendButton),
        result)));
  drawTarget();
  drawNotification();
  preview();
}

function splitIds(text) {
  return [...new Set(text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean))];
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}
