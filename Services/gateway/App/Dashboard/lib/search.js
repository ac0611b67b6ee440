// The subscriber search (the Subscribers and Live Activities pages): ids by prefix as they are
// typed, 50 a page, the newest search's answer shown.
import { api } from './api.js';
import { h, icon, put } from './dom.js';
import { button, empty, icons, loading, pager, table } from './ui.js';

/** How long typing pauses before the search runs. */
export const SEARCH_DELAY_MS = 250;
export const SEARCH_PAGE_SIZE = 50;

/** GET /v1/subscribers's query for a prefix and a cursor (empty values are left out by api()). */
export function subscriberQuery(prefix, cursor) {
  return { cursor, limit: SEARCH_PAGE_SIZE, prefix: prefix || undefined };
}

/**
 * Typed text into searches: `type(text)` runs `run(prefix)` once typing paused for `delay` ms,
 * with the text trimmed, and not again for the prefix that ran last (a trailing space reloads
 * nothing). `timers` ({setTimeout, clearTimeout}) is for tests.
 */
export function createSearch({ run, delay = SEARCH_DELAY_MS, timers = globalThis }) {
  let timer = null;
  let last = '';
  return {
    type(text) {
      timers.clearTimeout(timer);
      timer = timers.setTimeout(() => {
        const prefix = String(text ?? '').trim();
        if (prefix === last) return;
        last = prefix;
        run(prefix);
      }, delay);
    },
    get prefix() { return last; },
    cancel() { timers.clearTimeout(timer); },
  };
}

/**
 * A search box over the tenant's subscribers with the matching ids below it, paged.
 * columns: the table's ({label, cell(subscriber)}); href(subscriber): a row's link; testids:
 * {search, row}; hint: what to say when there are no subscribers at all; open(text): Enter (and
 * the Open button when `openLabel` is given) with the typed id. Returns {el, input, start()}.
 */
export function subscriberSearch({ signal, columns, href, testids, hint, open, openLabel, openTestid }) {
  const input = h('input', {
    class: 'input', type: 'search', placeholder: 'Search by subscriber id prefix',
    'data-testid': testids.search, 'aria-label': 'Search subscribers',
  });
  const body = h('div', {}, loading());
  let prefix = '';
  const paging = pager({
    pageSize: SEARCH_PAGE_SIZE,
    load: (cursor) => api('GET', '/v1/subscribers', { query: subscriberQuery(prefix, cursor), signal }),
    render: (rows) => put(body, rows.length || paging.page > 0
      ? table(columns, rows, { href, rowTestid: testids.row })
      : empty(prefix ? `No subscriber id starts with “${prefix}”` : 'No subscribers yet', prefix ? null : hint)),
  });
  const search = createSearch({ run: (text) => { prefix = text; paging.go(0).catch(() => {}); } });
  input.addEventListener('input', () => search.type(input.value));
  if (open) input.addEventListener('keydown', (event) => { if (event.key === 'Enter' && input.value.trim()) open(input.value.trim()); });
  signal?.addEventListener('abort', () => search.cancel(), { once: true });
  const bar = h('div', { class: 'search' }, icon(icons.search), input,
    open && openLabel ? button(openLabel, () => { if (input.value.trim()) open(input.value.trim()); }, { kind: 'ghost', testid: openTestid }) : null);
  return { el: h('div', {}, bar, body, paging.bar), input, start: () => paging.go(0) };
}
