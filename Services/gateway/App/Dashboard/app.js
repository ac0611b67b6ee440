// The BuzzKit dashboard: a hash router over pages that call the public API with the signed-in key.
import { api, session } from './lib/api.js';
import { h, icon, put } from './lib/dom.js';
import { icons, errorBox } from './lib/ui.js';
import * as signin from './pages/signin.js';
import * as overview from './pages/overview.js';
import * as send from './pages/send.js';
import * as messages from './pages/messages.js';
import * as message from './pages/message.js';
import * as delivery from './pages/delivery.js';
import * as subscribers from './pages/subscribers.js';
import * as subscriber from './pages/subscriber.js';
import * as segments from './pages/segments.js';
import * as segment from './pages/segment.js';
import * as categories from './pages/categories.js';
import * as category from './pages/category.js';
import * as keys from './pages/keys.js';
import * as workflows from './pages/workflows.js';
import * as workflow from './pages/workflow.js';
import * as runs from './pages/runs.js';
import * as run from './pages/run.js';
import * as liveActivities from './pages/liveactivities.js';
import * as liveActivity from './pages/liveactivity.js';
import * as webhooks from './pages/webhooks.js';
import * as webhook from './pages/webhook.js';

const NAV = [
  { path: 'overview', label: 'Overview', icon: icons.overview },
  { path: 'send', label: 'Send', icon: icons.send, scope: 'messages:send' },
  { path: 'messages', label: 'Messages', icon: icons.messages, scope: 'messages:read' },
  { path: 'subscribers', label: 'Subscribers', icon: icons.subscribers, scope: 'subscribers:read' },
  { path: 'segments', label: 'Segments', icon: icons.segments, scope: 'subscribers:read' },
  { path: 'categories', label: 'Categories', icon: icons.categories, scope: 'settings:read' },
  { path: 'workflows', label: 'Workflows', icon: icons.workflows, scope: 'workflows:read' },
  { path: 'live-activities', label: 'Live Activities', icon: icons.live, scope: 'subscribers:read' },
  { path: 'webhooks', label: 'Webhooks', icon: icons.webhooks, scope: 'webhooks:read' },
  { path: 'keys', label: 'Keys', icon: icons.keys, scope: 'keys:write', workspace: true },
];

const ROUTES = [
  [/^overview$/, overview],
  [/^send$/, send],
  [/^messages$/, messages],
  [/^messages\/([^/]+)$/, message, ['id']],
  [/^deliveries\/([^/]+)$/, delivery, ['id']],
  [/^subscribers$/, subscribers],
  [/^subscribers\/(.+)$/, subscriber, ['id']],
  [/^segments$/, segments],
  [/^segments\/new$/, segment, []],
  [/^segments\/(.+)$/, segment, ['key']],
  [/^categories$/, categories],
  [/^categories\/new$/, category, []],
  [/^categories\/(.+)$/, category, ['key']],
  [/^workflows$/, workflows],
  [/^workflows\/new$/, workflow, []],
  [/^workflows\/([^/]+)\/runs$/, runs, ['key']],
  [/^workflow-runs\/([^/]+)$/, run, ['id']],
  [/^workflows\/(.+)$/, workflow, ['key']],
  [/^live-activities$/, liveActivities],
  [/^live-activities\/(.+)$/, liveActivity, ['id']],
  [/^webhooks$/, webhooks],
  [/^webhooks\/([^/]+)$/, webhook, ['id']],
  [/^keys$/, keys],
];

const root = document.getElementById('app');
let current = null; // {controller, cleanup}

function currentPath() {
  return decodeURIComponent(location.hash.replace(/^#\/?/, '')) || '';
}

function navItem(item, active) {
  return h('a', { href: `#/${item.path}`, class: ['nav-item', active ? 'active' : null], 'data-testid': `nav-${item.path}` },
    icon(item.icon), h('span', {}, item.label));
}

async function tenantSwitcher() {
  const info = session.info;
  if (!session.isWorkspace) {
    return h('div', { class: 'tenant-current' }, h('span', { class: 'muted' }, 'Tenant'), h('code', {}, session.tenant));
  }
  const select = h('select', { class: 'tenant-select', 'data-testid': 'tenant-switch', 'aria-label': 'Tenant' });
  select.append(h('option', { value: session.tenant, selected: true }, session.tenant));
  if (info.scopes.includes('tenants:write')) {
    api('GET', '/v1/tenants', { tenant: false, query: { limit: 200 } }).then(({ data }) => {
      put(select, data.map((t) => h('option', { value: t.id, selected: t.id === session.tenant }, t.name)));
    }).catch(() => {});
  }
  select.addEventListener('change', () => { session.setTenant(select.value); route(); });
  return h('label', { class: 'tenant-current' }, h('span', { class: 'muted' }, 'Tenant'), select);
}

async function shell(path) {
  const info = session.info;
  const section = path.split('/')[0];
  const nav = NAV.filter((item) => (!item.scope || info.scopes.includes(item.scope)) && (!item.workspace || session.isWorkspace));
  const active = { message: 'messages', deliveries: 'messages', subscribers: 'subscribers', segments: 'segments', 'workflow-runs': 'workflows' }[section] || section;
  const main = h('main', { class: 'main', id: 'main' });
  const signOut = h('button', { type: 'button', class: 'nav-item signout', 'data-testid': 'signout', onclick: () => session.signOut() },
    icon(icons.signout), h('span', {}, 'Sign out'));
  const sidebar = h('aside', { class: 'sidebar' },
    h('div', { class: 'brand' }, h('img', { src: '/dashboard/favicon.svg', alt: '', width: 28, height: 28 }), h('span', {}, 'BuzzKit')),
    h('nav', { class: 'nav' }, nav.map((item) => navItem(item, item.path === active))),
    h('div', { class: 'sidebar-foot' }, await tenantSwitcher(),
      h('div', { class: 'key-current', title: info.scopes.join(', ') },
        h('span', { class: 'muted' }, `${info.kind} key`), h('code', { 'data-testid': 'key-prefix' }, `${info.prefix}…`)),
      signOut));
  put(root, h('div', { class: 'layout' }, sidebar, main));
  root.className = '';
  return main;
}

async function route() {
  if (current) {
    current.controller.abort();
    if (typeof current.cleanup === 'function') current.cleanup();
    current = null;
  }
  const path = currentPath();
  if (!session.ready) {
    if (path !== 'signin') { history.replaceState(null, '', '#/signin'); }
    const controller = new AbortController();
    current = { controller };
    root.className = 'signin-root';
    put(root);
    await signin.render(root, {}, { signal: controller.signal, done: () => { location.hash = '#/overview'; } });
    return;
  }
  if (path === '' || path === 'signin') { location.hash = '#/overview'; return; }
  const match = ROUTES.map(([pattern, page, names]) => [path.match(pattern), page, names || []]).find(([m]) => m);
  const main = await shell(path);
  const controller = new AbortController();
  current = { controller };
  if (!match) { put(main, errorBox({ code: 'not_found', message: `No page at #/${path}` })); return; }
  const [m, page, names] = match;
  const params = Object.fromEntries(names.map((name, i) => [name, m[i + 1]]));
  try {
    const cleanup = await page.render(main, params, { signal: controller.signal });
    if (current && current.controller === controller) current.cleanup = cleanup;
    else if (typeof cleanup === 'function') cleanup();
  } catch (error) {
    if (error.name === 'AbortError' || controller.signal.aborted) return;
    put(main, errorBox(error));
  }
}

// A revoked key is noticed on the next call, when the tab comes back, and every 20 s.
async function checkKey() {
  if (!session.signedIn) return;
  try { await api('GET', '/v1/key', { tenant: false }); } catch { /* a 401 signs out in api() */ }
}

window.addEventListener('hashchange', route);
window.addEventListener('bk:signedout', () => {
  if (location.hash !== '#/signin') location.hash = '#/signin';
  else route();
});
document.addEventListener('visibilitychange', () => { if (!document.hidden) checkKey(); });
setInterval(checkKey, 20000);
route();
