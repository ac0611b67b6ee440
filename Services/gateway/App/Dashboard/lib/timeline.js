// A dry run drawn step by step: one row per timeline entry with its time, kind and detail.
import { h } from './dom.js';
import { dateTime } from './format.js';
import { statusBadge } from './ui.js';

const SHOWN = new Set(['decision', 'reason', 'content', 'step', 'kind', 'status', 'startedAt', 'endedAt', 'messageIds', 'token']);

/** An entry's detail in words: its decision, why, the rendered content, and the rest as key=value. */
function detail(value) {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object') return h('div', { class: 'small' }, String(value));
  const rest = Object.entries(value).filter(([k]) => !SHOWN.has(k))
    .map(([k, v]) => `${k} ${typeof v === 'string' && /T\d\d:\d\d/.test(v) ? dateTime(v) : typeof v === 'object' ? JSON.stringify(v) : v}`);
  const content = value.content && typeof value.content === 'object' ? value.content : null;
  return h('div', { class: 'stack-tight' },
    value.decision || value.reason ? h('div', { class: 'small' }, value.decision ? statusBadge('workflowStepDecision', value.decision) : null,
      value.reason ? ` ${value.reason}` : '') : null,
    content ? h('div', { class: 'rendered' }, content.title ? h('div', { class: 'strong' }, content.title) : null,
      content.body ? h('div', {}, content.body) : null) : null,
    rest.length ? h('div', { class: 'muted small' }, rest.join(' · ')) : null);
}

/** A dry run's timeline: [{at, step, kind, detail}]. */
export function dryRunTimeline(entries) {
  return h('ol', { class: 'timeline run-timeline', 'data-testid': 'dry-run-timeline' }, entries.map((entry) => h('li', {
    class: ['timeline-item', `kind-${entry.kind}`], 'data-testid': 'timeline-entry',
  },
  h('div', { class: 'timeline-dot' }),
  h('div', { class: 'timeline-body' },
    h('div', { class: 'timeline-head' },
      entry.step ? h('code', { class: 'strong' }, entry.step) : h('span', { class: 'strong' }, 'run'),
      statusBadge('dryRunEntryKind', entry.kind),
      h('span', { class: 'muted small' }, dateTime(entry.at))),
    detail(entry.detail)))));
}
