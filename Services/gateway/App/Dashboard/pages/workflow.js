// One workflow: the definition editor (problems listed by JSON path), enable/disable, versions
// and the dry-run form.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { dateTime, json, relative } from '../lib/format.js';
import { dryRunTimeline } from '../lib/timeline.js';
import { badge, button, card, code, confirmButton, errorBox, field, pageHeader } from '../lib/ui.js';

const TEMPLATE = {
  trigger: { event: 'cart.abandoned' },
  cancelOn: [{ event: 'cart.checked_out' }],
  steps: [
    { name: 'wait-1h', wait: { duration: '1h' } },
    { name: 'nudge', send: { title: 'Still thinking it over?', body: 'Your cart is waiting, {{ subscriber.id }}.' } },
  ],
};

export async function render(main, params, ctx) {
  const creating = params.key === undefined;
  let workflow = null;
  if (!creating) {
    ({ data: workflow } = await api('GET', `/v1/workflows/${encodeURIComponent(params.key)}`, { signal: ctx.signal }));
  }
  const keyInput = h('input', { class: 'input', value: workflow?.key ?? '', disabled: !creating, placeholder: 'cart-recovery', 'data-testid': 'workflow-key-input' });
  const editor = h('textarea', { class: 'input mono editor', rows: 22, spellcheck: 'false', 'data-testid': 'workflow-definition' });
  editor.value = json(workflow?.definition ?? TEMPLATE);
  const problems = h('div');
  const saved = h('div');
  const save = button(creating ? 'Create workflow' : 'Save', async () => {
    put(problems);
    put(saved);
    let definition;
    try { definition = JSON.parse(editor.value); } catch (error) {
      put(problems, errorBox({ code: 'invalid_json', message: `The definition is not JSON: ${error.message}` }));
      return;
    }
    const key = keyInput.value.trim();
    save.disabled = true;
    try {
      const { data } = await api('PUT', `/v1/workflows/${encodeURIComponent(key)}`, { body: definition });
      if (creating) { location.hash = `#/workflows/${encodeURIComponent(key)}`; return; }
      workflow = data;
      put(saved, h('div', { class: 'notice notice-good', 'data-testid': 'workflow-saved' },
        data.changed === false ? 'Saved: the definition is unchanged (no new version).' : `Saved as version ${data.version}.`));
      drawHeader();
      drawVersions();
    } catch (error) {
      put(problems, issuesByPath(error));
    } finally {
      save.disabled = false;
    }
  }, { kind: 'primary', testid: 'workflow-save' });

  const header = h('div');
  const drawHeader = () => {
    if (creating) { put(header, pageHeader('New workflow', 'A trigger event, optional cancel events, and named steps.')); return; }
    const toggle = button(workflow.enabled ? 'Disable' : 'Enable', async () => {
      const { data } = await api('POST', `/v1/workflows/${encodeURIComponent(workflow.key)}/${workflow.enabled ? 'disable' : 'enable'}`);
      workflow = { ...workflow, ...data };
      drawHeader();
    }, { kind: 'ghost', testid: 'workflow-toggle' });
    const remove = confirmButton('Delete', 'Click again to delete', async () => {
      await api('DELETE', `/v1/workflows/${encodeURIComponent(workflow.key)}`);
      location.hash = '#/workflows';
    }, { testid: 'workflow-delete' });
    const runs = button('Runs', () => { location.hash = `#/workflows/${encodeURIComponent(workflow.key)}/runs`; }, { kind: 'ghost', testid: 'workflow-runs' });
    put(header, pageHeader(workflow.key, `triggered by ${workflow.triggerEvent} · version ${workflow.version} · updated ${relative(workflow.updatedAt)}`,
      h('span', { 'data-testid': 'workflow-state' }, badge(workflow.enabled ? 'enabled' : 'disabled', workflow.enabled ? 'good' : 'muted')), runs, toggle, remove));
  };

  const versions = h('div');
  const versionView = h('div');
  const drawVersions = () => {
    if (creating) return;
    const numbers = Array.from({ length: workflow.version }, (_, i) => workflow.version - i);
    put(versions, h('div', { class: 'chips' }, numbers.map((n) => h('button', {
      type: 'button', class: ['chip', 'chip-button', n === workflow.version ? 'on' : null], 'data-testid': 'workflow-version',
      onclick: async () => {
        const { data } = await api('GET', `/v1/workflows/${encodeURIComponent(workflow.key)}/versions/${n}`, { signal: ctx.signal });
        put(versionView, h('div', { class: 'stack' },
          h('div', { class: 'subhead' }, h('h3', {}, `Version ${data.version}`), h('span', { class: 'muted small' }, dateTime(data.createdAt)),
            button('Load into the editor', () => { editor.value = json(data.definition); }, { kind: 'ghost', testid: 'workflow-version-load' })),
          code(json(data.definition), { testid: 'workflow-version-definition' })));
      },
    }, `v${n}`))));
  };

  main.append(h('a', { href: '#/workflows', class: 'back' }, 'Workflows'), header,
    h('div', { class: 'grid-2 wide-left' },
      card('Definition', h('div', { class: 'stack' },
        creating ? field('Key', keyInput, 'Letters, digits, _ - . : (it cannot change)') : null,
        editor, problems, saved, h('div', { class: 'actions' }, save))),
      h('div', { class: 'stack' },
        creating ? card('Steps', h('ul', { class: 'help' },
          ['wait {duration: "1h"}', 'waitUntil {time: "09:00", timezone: "subscriber"}', 'waitFor {event, timeout}',
            'branch {if, then, else}', 'send {title, body, deliver: "push" | "local", policy}', 'exit {}']
            .map((text) => h('li', {}, h('code', {}, text)))), { class: 'muted-card' }) : null,
        creating ? null : card('Versions', h('div', { class: 'stack' }, versions, versionView)),
        creating ? null : dryRunCard(() => workflow))));
  drawHeader();
  drawVersions();
}

/** A 422's problems as a list, each under its JSON path. */
function issuesByPath(error) {
  const issues = error.issues || [];
  if (!issues.length) return errorBox(error);
  return h('div', { class: 'notice notice-bad', role: 'alert', 'data-testid': 'workflow-problems' },
    h('strong', {}, `${issues.length} problem${issues.length === 1 ? '' : 's'} in the definition`),
    h('ul', { class: 'issues' }, issues.map((issue) => h('li', { 'data-testid': 'workflow-problem' },
      h('code', { class: 'issue-path', 'data-testid': 'workflow-problem-path' }, issue.path || '(definition)'),
      h('span', {}, issue.message || ''),
      issue.line ? h('span', { class: 'muted small' }, ` (line ${issue.line}, column ${issue.column})`) : null))));
}

function dryRunCard(current) {
  const subscriber = h('input', { class: 'input', placeholder: 'a subscriber id, or leave empty for a sample', 'data-testid': 'dry-run-subscriber' });
  const sample = h('textarea', { class: 'input mono', rows: 3, spellcheck: 'false', 'data-testid': 'dry-run-sample', placeholder: '{"id": "sample", "attributes": {"plan": "pro"}, "timezone": "Europe/Berlin"}' });
  const eventData = h('textarea', { class: 'input mono', rows: 3, spellcheck: 'false', 'data-testid': 'dry-run-event', placeholder: '{"total": 42}' });
  const receipts = h('textarea', { class: 'input mono', rows: 2, spellcheck: 'false', 'data-testid': 'dry-run-receipts', placeholder: '{"nudge": {"delivered": true, "opened": false}}' });
  const out = h('div');
  const parse = (textarea, name) => {
    const text = textarea.value.trim();
    if (!text) return undefined;
    try { return JSON.parse(text); } catch (error) { throw new Error(`${name} is not JSON: ${error.message}`); }
  };
  const run = button('Dry run', async () => {
    put(out);
    let body;
    try {
      const data = parse(eventData, 'Event data');
      const sampleValue = parse(sample, 'The sample subscriber');
      body = {
        subscriber: subscriber.value.trim() || sampleValue || { id: 'sample' },
        event: { name: current().triggerEvent, ...(data ? { data } : {}) },
      };
      const receiptValue = parse(receipts, 'Receipts');
      if (receiptValue) body.receipts = receiptValue;
    } catch (error) {
      put(out, errorBox({ code: 'invalid_json', message: error.message }));
      return;
    }
    run.disabled = true;
    try {
      const { data } = await api('POST', `/v1/workflows/${encodeURIComponent(current().key)}/dry-run`, { body });
      put(out, h('div', { class: 'stack' },
        h('div', { class: 'chips' },
          h('span', { 'data-testid': 'dry-run-status' }, badge(data.status, { completed: 'good', running: 'info', cancelled: 'warn', failed: 'bad', throttled: 'warn' }[data.status])),
          badge(data.triggerMatches ? 'trigger matches' : 'trigger does not match', data.triggerMatches ? 'good' : 'warn'),
          h('span', { class: 'chip' }, `version ${data.version}`)),
        data.failure ? h('div', { class: 'notice notice-bad' }, `${data.failure.code}: ${data.failure.message}`) : null,
        dryRunTimeline(data.timeline),
        h('details', {}, h('summary', {}, 'Steps as the run would record them'), code(json(data.steps)))));
    } catch (error) {
      put(out, error.issues?.length ? issuesByPath(error) : errorBox(error));
    } finally {
      run.disabled = false;
    }
  }, { kind: 'primary', testid: 'dry-run' });
  return card('Dry run', h('div', { class: 'stack' },
    h('p', { class: 'muted small' }, 'Walks the workflow on a simulated clock for a subscriber and trigger event. Nothing is sent or stored.'),
    field('Subscriber id', subscriber), field('…or a sample subscriber (JSON)', sample), field('Trigger event data (JSON)', eventData),
    field('Receipts by send step (JSON)', receipts), h('div', { class: 'actions' }, run), out));
}
