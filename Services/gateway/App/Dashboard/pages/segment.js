// One segment: edit the expression with a live check and count, save, delete.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { liveExpression } from '../lib/expression.js';
import { relative } from '../lib/format.js';
import { button, card, confirmButton, errorBox, field, icons, pageHeader } from '../lib/ui.js';

export async function render(main, params, ctx) {
  const creating = params.key === undefined;
  let segment = { key: '', name: '', where: '' };
  if (!creating) {
    ({ data: segment } = await api('GET', `/v1/segments/${encodeURIComponent(params.key)}`, { signal: ctx.signal }));
  }
  const keyInput = h('input', { class: 'input', value: segment.key, disabled: !creating, placeholder: 'vip-users', 'data-testid': 'segment-key', spellcheck: 'false' });
  const nameInput = h('input', { class: 'input', value: segment.name, placeholder: 'VIP users', 'data-testid': 'segment-name-input' });
  const whereInput = h('textarea', { class: 'input mono', rows: 5, spellcheck: 'false', 'data-testid': 'segment-where',
    placeholder: 'plan == "pro" and did("app.opened", within: "7d")' });
  whereInput.value = segment.where;
  const liveOut = h('div', { class: 'expr-out', 'data-testid': 'expression-result' });
  const status = h('div');
  const save = button(creating ? 'Create segment' : 'Save changes', async () => {
    put(status);
    const key = keyInput.value.trim();
    save.disabled = true;
    try {
      await api('PUT', `/v1/segments/${encodeURIComponent(key)}`, { body: { name: nameInput.value.trim(), where: whereInput.value } });
      if (creating) { location.hash = `#/segments/${encodeURIComponent(key)}`; return; }
      put(status, h('div', { class: 'notice notice-good', 'data-testid': 'saved' }, 'Saved.'));
    } catch (error) {
      put(status, errorBox(error));
    } finally {
      save.disabled = false;
    }
  }, { kind: 'primary', testid: 'segment-save' });
  const remove = creating ? null : confirmButton('Delete', 'Click again to delete', async () => {
    await api('DELETE', `/v1/segments/${encodeURIComponent(segment.key)}`);
    location.hash = '#/segments';
  }, { testid: 'segment-delete' });

  main.append(
    h('a', { href: '#/segments', class: 'back' }, 'Segments'),
    pageHeader(creating ? 'New segment' : segment.name, creating ? 'Define who is in it with an audience expression.' : `Updated ${relative(segment.updatedAt)}`, remove),
    h('div', { class: 'grid-2 wide-left' },
      card('Definition', h('div', { class: 'stack' },
        h('div', { class: 'row' }, field('Key', keyInput, 'Letters, digits, _ - . : (it cannot change)'), field('Name', nameInput)),
        field('Expression', whereInput, 'Checked and counted as you type.'),
        status, h('div', { class: 'actions' }, save))),
      card('Audience now', liveOut, { class: 'sticky' }),
      card('Expression language', h('ul', { class: 'help' },
        ['plan == "pro"', 'profile.age >= 18', 'country in ["DE", "AT"]', 'exists(email)', 'in_topic("sports")',
          'has_device(environment: "production")', 'did("workout.completed", within: "7d")', 'count("app.opened", within: "30d") >= 3',
          'not did("cart.checked_out", where: total > 40)']
          .map((example) => h('li', {}, h('code', {}, example)))), { class: 'muted-card' })));
  liveExpression(whereInput, liveOut);
  if (creating) keyInput.focus();
}
