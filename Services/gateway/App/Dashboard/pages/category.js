// One category: create or edit it (PUT replaces it), delete it; a category in use is refused with
// what uses it (409 category_in_use), each use linked to where it is.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { relative } from '../lib/format.js';
import { useOf } from '../lib/policy.js';
import { button, card, confirmButton, errorBox, field, pageHeader } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const creating = params.key === undefined;
  let category = { key: '', name: '', description: null, defaultEnabled: true, critical: false };
  if (!creating) {
    ({ data: category } = await api('GET', `/v1/categories/${encodeURIComponent(params.key)}`, { signal: ctx.signal }));
  }
  const keyInput = h('input', { class: 'input', value: category.key, disabled: !creating, placeholder: 'offers', 'data-testid': 'category-key-input', spellcheck: 'false' });
  const nameInput = h('input', { class: 'input', value: category.name, placeholder: 'Offers and discounts', 'data-testid': 'category-name-input' });
  const descriptionInput = h('textarea', { class: 'input', rows: 3, placeholder: 'What a subscriber reads beside the switch', 'data-testid': 'category-description-input' });
  descriptionInput.value = category.description ?? '';
  const defaultInput = h('input', { type: 'checkbox', checked: category.defaultEnabled, 'data-testid': 'category-default-input' });
  const criticalInput = h('input', { type: 'checkbox', checked: category.critical, 'data-testid': 'category-critical-input' });
  const status = h('div');
  const save = button(creating ? 'Create category' : 'Save changes', async () => {
    put(status);
    const key = keyInput.value.trim();
    save.disabled = true;
    try {
      const description = descriptionInput.value.trim();
      await api('PUT', `/v1/categories/${encodeURIComponent(key)}`, {
        body: { name: nameInput.value.trim(), description: description || null, defaultEnabled: defaultInput.checked, critical: criticalInput.checked },
      });
      if (creating) { location.hash = `#/categories/${encodeURIComponent(key)}`; return; }
      put(status, h('div', { class: 'notice notice-good', 'data-testid': 'saved' }, 'Saved.'));
    } catch (error) {
      put(status, errorBox(error));
    } finally {
      save.disabled = false;
    }
  }, { kind: 'primary', testid: 'category-save' });
  const remove = creating ? null : confirmButton('Delete', 'Click again to delete', async () => {
    put(status);
    try {
      await api('DELETE', `/v1/categories/${encodeURIComponent(category.key)}`);
      location.hash = '#/categories';
    } catch (error) {
      put(status, inUse(error));
    }
  }, { testid: 'category-delete' });

  main.append(
    h('a', { href: '#/categories', class: 'back' }, 'Categories'),
    pageHeader(creating ? 'New category' : category.name, creating ? 'A kind of notification subscribers can turn off.' : `Updated ${relative(category.updatedAt)}`, remove),
    h('div', { class: 'grid-2 wide-left' },
      card('Category', h('div', { class: 'stack' },
        h('div', { class: 'row' }, field('Key', keyInput, 'Letters, digits, _ - . : (it cannot change); also the notification\'s aps.category'),
          field('Name', nameInput)),
        field('Description', descriptionInput),
        h('label', { class: 'check' }, defaultInput, h('span', {}, 'On for a subscriber who never chose')),
        h('label', { class: 'check' }, criticalInput, h('span', {}, 'Critical: ignores preferences and frequency caps (security alerts, receipts)')),
        status, h('div', { class: 'actions' }, save))),
      card('How it is used', h('ul', { class: 'help' },
        h('li', {}, 'A message or a workflow\'s send step names it as ', h('code', {}, 'category'), '.'),
        h('li', {}, 'A subscriber turns it on or off on their preferences (a subscriber\'s page shows them).'),
        h('li', {}, 'A frequency cap may count it alone.'),
        h('li', {}, 'It cannot be deleted while an enabled workflow sends in it, it is the default category or a cap counts it.')),
      { class: 'muted-card' })));
  if (creating) keyInput.focus();
}

/** A refused delete: the API's code and message, and each use linked to where it is. */
function inUse(error) {
  const uses = error.code === 'category_in_use' && Array.isArray(error.details?.usedBy) ? error.details.usedBy : [];
  const box = errorBox(error);
  if (uses.length) {
    box.append(h('ul', { 'data-testid': 'category-uses' }, uses.map((use) => {
      const { text, href } = useOf(use);
      return h('li', {}, href ? h('a', { href }, text) : text);
    })));
  }
  return box;
}
