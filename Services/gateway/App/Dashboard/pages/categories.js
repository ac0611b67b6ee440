// Categories: the kinds of notification the tenant sends, paged, and the tenant's send policy
// settings (the default category and the frequency caps), each API problem under its field.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { capBody, placeIssues, settingsPaths } from '../lib/policy.js';
import {
  badge, button, card, empty, errorBox, field, icons, loading, pageHeader, pager, table,
} from '../lib/ui.js';
import { capWindow } from '../lib/vocabulary.js';

/** The API's limit on caps (`PATCH /v1/settings`); more is refused at `frequencyCaps`. */
const MAX_CAPS = 10;

export async function render(main, params, ctx) {
  const list = h('div', {}, loading());
  const settingsBox = h('div', {}, loading());
  const create = () => { location.hash = '#/categories/new'; };
  main.append(pageHeader('Categories', 'The kinds of notification the tenant sends: each subscriber turns them on or off, frequency caps count them.',
    button('New category', create, { kind: 'primary', icon: icons.plus, testid: 'category-new' })),
  card(null, list, { class: 'flush' }),
  card('Default category and frequency caps', settingsBox));
  const body = h('div');
  const paging = pager({
    pageSize: 50,
    load: (cursor) => api('GET', '/v1/categories', { query: { cursor, limit: 50 }, signal: ctx.signal }),
    render: (rows) => {
      if (!rows.length && paging.page === 0) {
        put(body, empty('No categories yet', 'A category such as "offers" or "security" is what a subscriber switches off and a frequency cap counts; a message names it as category.',
          button('New category', create, { kind: 'primary' })));
        return;
      }
      put(body, table([
        { label: 'Category', cell: (c) => h('div', {}, h('div', { class: 'strong', 'data-testid': 'category-name' }, c.name), h('code', { class: 'muted small', 'data-testid': 'category-key' }, c.key)) },
        { label: 'Description', class: 'wide', cell: (c) => h('span', { 'data-testid': 'category-description' }, c.description ?? '—') },
        { label: 'By default', cell: (c) => h('span', { 'data-testid': 'category-default' }, badge(c.defaultEnabled ? 'on' : 'off', c.defaultEnabled ? 'good' : 'muted')) },
        { label: 'Critical', cell: (c) => (c.critical ? badge('critical', 'warn') : h('span', { class: 'muted' }, 'no')) },
        { label: 'Updated', cell: (c) => relative(c.updatedAt) },
      ], rows, { href: (c) => `#/categories/${encodeURIComponent(c.key)}`, rowTestid: 'category-row' }));
    },
  });
  put(list, body, paging.bar);
  const [, categories, { data: settings }] = await Promise.all([
    paging.go(0),
    allCategories(ctx.signal),
    api('GET', '/v1/settings', { signal: ctx.signal }),
  ]);
  put(settingsBox, settingsForm(settings, categories));
}

/** Every category of the tenant (for the choices), page after page. */
async function allCategories(signal) {
  const all = [];
  let cursor = null;
  do {
    const { data, metadata } = await api('GET', '/v1/categories', { query: { cursor, limit: 200 }, signal });
    all.push(...data);
    cursor = metadata.hasMore ? metadata.cursor : null;
  } while (cursor);
  return all;
}

function categoryOptions(categories, selected, none) {
  const keys = categories.map((c) => c.key);
  const options = [h('option', { value: '', selected: !selected }, none)];
  for (const c of categories) options.push(h('option', { value: c.key, selected: c.key === selected }, `${c.name} (${c.key})`));
  if (selected && !keys.includes(selected)) options.push(h('option', { value: selected, selected: true }, selected));
  return options;
}

/** A problem slot under a field, found by the API's path for it. */
function problemSlot(slots, path) {
  const el = h('div', { class: 'field-problem', 'data-testid': `problem-${path}` });
  slots.set(path, el);
  return el;
}

function settingsForm(settings, categories) {
  const slots = new Map();
  const defaultSelect = h('select', { class: 'input', 'data-testid': 'default-category' },
    categoryOptions(categories, settings.defaultCategory, 'None: only the global opt-out applies'));
  const windows = h('datalist', { id: 'cap-windows' }, capWindow.map((w) => h('option', { value: w })));
  const rowsBox = h('div', { class: 'stack cap-rows', 'data-testid': 'caps' });
  const status = h('div');
  let rows = [];

  function capRow(cap) {
    const category = h('select', { class: 'input', 'data-testid': 'cap-category' },
      categoryOptions(categories, cap.category ?? '', 'Every non-critical push'));
    const limit = h('input', { class: 'input', value: cap.limit ?? '', inputmode: 'numeric', placeholder: '3', 'data-testid': 'cap-limit' });
    const window = h('input', { class: 'input mono', value: cap.window ?? '', list: 'cap-windows', placeholder: capWindow.join(', '), spellcheck: 'false', 'data-testid': 'cap-window' });
    const row = { category, limit, window, el: h('div', { class: 'cap-row', 'data-testid': 'cap-row' }) };
    row.remove = button('Remove', () => { rows = rows.filter((r) => r !== row); draw(); }, { kind: 'ghost', testid: 'cap-remove' });
    return row;
  }

  function draw() {
    slots.clear();
    slots.set('defaultCategory', defaultProblem);
    rows.forEach((row, i) => {
      const at = `frequencyCaps[${i}]`;
      put(row.el,
        field('Counts', h('div', {}, row.category, problemSlot(slots, `${at}.category`))),
        field('At most', h('div', {}, row.limit, problemSlot(slots, `${at}.limit`)), 'pushes, 1 to 1,000,000'),
        field('Within', h('div', {}, row.window, problemSlot(slots, `${at}.window`)), `rolling: ${capWindow.join(', ')}`),
        h('div', { class: 'cap-row-end' }, row.remove, problemSlot(slots, at)));
    });
    slots.set('frequencyCaps', capsProblem);
    put(rowsBox, rows.length ? rows.map((r) => r.el)
      : h('p', { class: 'muted', 'data-testid': 'caps-none' }, 'No caps: a subscriber gets every push sent to them.'));
    add.disabled = rows.length >= MAX_CAPS;
  }

  const defaultProblem = h('div', { class: 'field-problem', 'data-testid': 'problem-defaultCategory' });
  const capsProblem = h('div', { class: 'field-problem', 'data-testid': 'problem-frequencyCaps' });
  const add = button('Add a cap', () => { rows.push(capRow({ window: capWindow[0] })); draw(); },
    { kind: 'ghost', icon: icons.plus, testid: 'cap-add' });
  const save = button('Save settings', async () => {
    put(status);
    for (const slot of slots.values()) slot.textContent = '';
    save.disabled = true;
    const count = rows.length;
    try {
      const { data } = await api('PATCH', '/v1/settings', {
        body: {
          defaultCategory: defaultSelect.value || null,
          frequencyCaps: rows.map((r) => capBody({ category: r.category.value, limit: r.limit.value, window: r.window.value })),
        },
      });
      rows = data.frequencyCaps.map(capRow);
      draw();
      put(status, h('div', { class: 'notice notice-good', 'data-testid': 'settings-saved' }, 'Saved.'));
    } catch (error) {
      if (error.code !== 'validation_failed') { put(status, errorBox(error)); return; }
      const { at, rest } = placeIssues(error.issues, settingsPaths(count));
      for (const [path, messages] of at) if (slots.has(path)) slots.get(path).textContent = messages.join('; ');
      put(status, errorBox({ code: error.code, message: rest.length ? error.message : `${error.message}: see the fields marked below.`, issues: rest }));
    } finally {
      save.disabled = false;
    }
  }, { kind: 'primary', testid: 'settings-save' });

  rows = settings.frequencyCaps.map(capRow);
  draw();
  return h('div', { class: 'stack' },
    h('p', { class: 'muted small' }, 'A message that names no category is governed by the default category. A cap lets at most so many pushes reach a subscriber in a rolling window (a subscriber with several devices counts once per message); critical categories are never capped.'),
    field('Default category', h('div', {}, defaultSelect, defaultProblem), 'The category of a message that names none.'),
    h('div', { class: 'subhead' }, h('h3', {}, 'Frequency caps'), h('span', { class: 'muted small' }, `at most ${MAX_CAPS}, replaced as a whole`)),
    rowsBox, capsProblem, windows,
    h('div', { class: 'actions' }, add),
    status, h('div', { class: 'actions' }, save));
}
