// Shared pieces of every page: headers, cards, tables, badges, pagers, notices.
import { h, icon, put } from './dom.js';
import { keysetPaging } from './paging.js';
import { tone } from './status.js';

export const icons = {
  overview: ['M4 13h6V4H4z', 'M14 20h6v-9h-6z', 'M4 20h6v-3H4z', 'M14 7h6V4h-6z'],
  send: ['M4 12l16-8-6 16-2.5-6.5z', 'M11.5 13.5L20 4'],
  messages: ['M4 5h16v11H8l-4 4z'],
  subscribers: ['M9 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8z', 'M2 21v-1a6 6 0 0 1 6-6h2a6 6 0 0 1 6 6v1', 'M17 11a3 3 0 1 0 0-6', 'M22 21v-1a5 5 0 0 0-4-4.9'],
  segments: ['M12 3a9 9 0 1 0 9 9h-9z', 'M15 3.5A9 9 0 0 1 20.5 9H15z'],
  categories: ['M4 4h7v7H4z', 'M13 4h7v7h-7z', 'M4 13h7v7H4z', 'M16.5 13v7', 'M13 16.5h7'],
  workflows: ['M4 5h6v4H4z', 'M14 15h6v4h-6z', 'M7 9v3h10v3'],
  live: ['M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z', 'M12 7v5l3 2'],
  keys: ['M15 7a4 4 0 1 1-3.9 4.9L4 19v-3h3v-3h3l1.1-1.1A4 4 0 0 1 15 7z'],
  webhooks: ['M10 14a3.5 3.5 0 0 0 5 0l3-3a3.5 3.5 0 0 0-5-5l-1 1', 'M14 10a3.5 3.5 0 0 0-5 0l-3 3a3.5 3.5 0 0 0 5 5l1-1'],
  signout: ['M15 4h4v16h-4', 'M10 8l-4 4 4 4', 'M6 12h10'],
  copy: ['M8 8h11v12H8z', 'M5 16V4h11'],
  back: ['M15 5l-7 7 7 7'],
  search: ['M11 18a7 7 0 1 0 0-14 7 7 0 0 0 0 14z', 'M20 20l-4-4'],
  plus: ['M12 5v14', 'M5 12h14'],
};

export function pageHeader(title, subtitle, ...actions) {
  return h('header', { class: 'page-header' },
    h('div', {}, h('h1', {}, title), subtitle ? h('p', { class: 'subtitle' }, subtitle) : null),
    h('div', { class: 'actions' }, actions));
}

export function card(title, body, options = {}) {
  return h('section', { class: ['card', options.class] },
    title ? h('div', { class: 'card-head' }, h('h2', {}, title), options.aside ?? null) : null,
    h('div', { class: 'card-body' }, body));
}

/** A label in a tone: good, info, warn, bad or muted (the default). */
export function badge(text, toneName) {
  return h('span', { class: ['badge', `badge-${toneName || 'muted'}`] }, text);
}

/** A value of one of the server's vocabularies (`deliveryStatus`, `workflowRunStatus`, …) in its tone. */
export function statusBadge(vocabularyName, value) {
  return badge(value, tone(vocabularyName, value));
}

export function button(label, onclick, options = {}) {
  return h('button', {
    type: options.type || 'button', class: ['btn', options.kind ? `btn-${options.kind}` : null, options.class],
    onclick, disabled: options.disabled, 'data-testid': options.testid, title: options.title,
  }, options.icon ? icon(options.icon) : null, h('span', { class: 'btn-label' }, label));
}

function relabel(el, text) { el.querySelector('.btn-label').textContent = text; }

/** A button that asks once more before acting (no modal dialog). */
export function confirmButton(label, confirmLabel, action, options = {}) {
  let armed = false;
  let timer = null;
  const el = button(label, async () => {
    if (!armed) {
      armed = true;
      el.classList.add('btn-armed');
      relabel(el, confirmLabel);
      timer = setTimeout(() => { armed = false; el.classList.remove('btn-armed'); relabel(el, label); }, 5000);
      return;
    }
    clearTimeout(timer);
    el.disabled = true;
    try { await action(); } finally { el.disabled = false; }
  }, { kind: options.kind || 'danger-ghost', testid: options.testid });
  return el;
}

export function copyButton(getText, label = 'Copy') {
  const el = button(label, async () => {
    const text = getText();
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch {
      const area = h('textarea', { class: 'offscreen', readonly: true });
      area.value = text;
      document.body.append(area);
      area.select();
      try { ok = document.execCommand('copy'); } catch { ok = false; }
      area.remove();
    }
    relabel(el, ok ? 'Copied' : 'Select and copy');
    setTimeout(() => relabel(el, label), 1500);
  }, { icon: icons.copy, kind: 'ghost', testid: 'copy' });
  return el;
}

/**
 * A table: columns [{label, cell(row) -> node|string, class}], rows, onclick(row) for a link row.
 */
export function table(columns, rows, options = {}) {
  const head = h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.class }, c.label))));
  const body = h('tbody', {}, rows.map((row) => {
    const tr = h('tr', { class: options.href ? 'link-row' : null, 'data-testid': options.rowTestid },
      columns.map((c) => h('td', { class: c.class }, c.cell(row))));
    if (options.href) {
      tr.tabIndex = 0;
      const go = () => { location.hash = options.href(row); };
      tr.addEventListener('click', (event) => { if (!event.target.closest('button, a')) go(); });
      tr.addEventListener('keydown', (event) => { if (event.key === 'Enter') go(); });
    }
    return tr;
  }));
  return h('div', { class: 'table-wrap' }, h('table', { class: 'table' }, head, body));
}

export function empty(title, text, ...actions) {
  return h('div', { class: 'empty' }, h('p', { class: 'empty-title' }, title), text ? h('p', {}, text) : null,
    actions.length ? h('div', { class: 'actions' }, actions) : null);
}

export function errorBox(error) {
  const issues = error?.issues ?? [];
  return h('div', { class: 'notice notice-bad', role: 'alert', 'data-testid': 'error' },
    h('strong', {}, error?.code ? `${error.code}: ` : ''), error?.message ?? String(error),
    issues.length ? h('ul', {}, issues.map((i) => h('li', {}, h('code', {}, i.path ?? ''), ' ', i.message ?? ''))) : null);
}

export function loading(text = 'Loading…') {
  return h('div', { class: 'loading' }, h('span', { class: 'spinner' }), text);
}

export function stat(label, value, note, testid) {
  return h('div', { class: 'stat', 'data-testid': testid },
    h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value), note ? h('div', { class: 'stat-note' }, note) : null);
}

/**
 * Keyset paging (lib/paging.js) with its buttons: load(cursor) -> {data, metadata}; render(items)
 * draws a page; the bar shows Newer/Older (or Previous/Next) and where we are. A page asked for
 * after another is the one drawn, whichever answers first.
 */
export function pager({ load, render, pageSize, labels = ['Previous', 'Next'], into }) {
  const paging = keysetPaging({ load, pageSize });
  const info = h('span', { class: 'pager-info' });
  const previous = button(labels[0], () => go(paging.page - 1), { kind: 'ghost', testid: 'pager-previous' });
  const forward = button(labels[1], () => go(paging.page + 1), { kind: 'ghost', testid: 'pager-next' });
  const bar = h('div', { class: 'pager' }, info, h('div', { class: 'actions' }, previous, forward));
  const settle = () => {
    previous.disabled = paging.page === 0;
    forward.disabled = !paging.hasMore;
  };
  const draw = (shown) => {
    if (!shown) return;
    render(shown.items);
    info.textContent = shown.items.length ? `${shown.first}–${shown.first + shown.items.length - 1}` : '';
  };
  async function go(to) {
    previous.disabled = true;
    forward.disabled = true;
    try {
      draw(await paging.go(to));
    } finally {
      if (!paging.busy) settle();
    }
  }
  async function refresh() {
    try {
      draw(await paging.refresh());
    } finally {
      if (!paging.busy) settle();
    }
  }
  if (into) into.append(bar);
  return { bar, go, refresh, get page() { return paging.page; } };
}

/** Two or more choices, one selected. */
export function segmented(options, selected, onchange, testid) {
  const el = h('div', { class: 'segmented', role: 'tablist', 'data-testid': testid });
  const draw = (value) => put(el, options.map(([v, label]) => h('button', {
    type: 'button', role: 'tab', class: v === value ? 'on' : null, 'aria-selected': String(v === value), 'data-value': v,
    onclick: () => { draw(v); onchange(v); },
  }, label)));
  draw(selected);
  return el;
}

export function field(label, control, hint, options = {}) {
  return h('label', { class: ['field', options.class] }, h('span', { class: 'field-label' }, label), control,
    hint ? h('span', { class: 'field-hint' }, hint) : null);
}

export function code(text, options = {}) {
  return h('pre', { class: ['code', options.class], 'data-testid': options.testid }, text);
}
