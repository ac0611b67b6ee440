// One workflow run: its status, and each step's outcome with times, the decision and why, and
// the messages it sent (linked to their pages); running runs can be cancelled. A digest run shows
// its key, window and the events it collected; a throttled run why it stopped.
import { api } from '../lib/api.js';
import { h, put } from '../lib/dom.js';
import { dateTime, json, relative } from '../lib/format.js';
import { pollUntilSettled } from '../lib/poll.js';
import { runSettled } from '../lib/status.js';
import { badge, card, code, confirmButton, empty, pageHeader, stat, statusBadge, table } from '../lib/ui.js';

export const runBadge = (status) => statusBadge('workflowRunStatus', status);
export const shortId = (id) => (id && id.length > 8 ? `${id.slice(0, 8)}…` : id);

function times(outcome) {
  const parts = [['started', outcome.startedAt], ['due', outcome.dueAt], ['ended', outcome.endedAt]]
    .filter(([, at]) => at).map(([label, at]) => h('span', { 'data-testid': `step-${label}` }, `${label} ${dateTime(at)}`));
  if (outcome.shiftedFrom) parts.push(h('span', {}, `quiet hours moved it from ${dateTime(outcome.shiftedFrom)}`));
  return h('div', { class: 'muted small' }, parts.flatMap((part, i) => (i ? [' · ', part] : [part])));
}

function outcomeItem(outcome) {
  return h('li', { class: ['timeline-item', `status-${outcome.status}`, `kind-${outcome.kind}`], 'data-testid': 'run-step' },
    h('div', { class: 'timeline-dot' }),
    h('div', { class: 'timeline-body' },
      h('div', { class: 'timeline-head' },
        h('code', { class: 'strong', 'data-testid': 'run-step-name' }, outcome.step),
        badge(outcome.kind, 'muted'),
        h('span', { 'data-testid': 'run-step-status' }, statusBadge('workflowStepStatus', outcome.status))),
      outcome.decision || outcome.reason ? h('div', { class: 'small', 'data-testid': 'run-step-decision' },
        outcome.decision ? statusBadge('workflowStepDecision', outcome.decision) : null,
        outcome.reason && outcome.reason !== outcome.decision ? ` ${outcome.reason}` : '') : null,
      times(outcome),
      outcome.messageIds?.length ? h('div', { class: 'small' }, 'sent ',
        outcome.messageIds.map((id, i) => [i ? ', ' : null,
          h('a', { href: `#/messages/${encodeURIComponent(id)}`, 'data-testid': 'run-step-message' }, h('code', {}, shortId(id)))])) : null,
      outcome.missing?.length ? h('div', { class: 'small warn-text' }, `rendered empty: ${outcome.missing.join(', ')}`) : null,
      outcome.event ? h('div', { class: 'muted small' }, `matched ${outcome.event.name} (${outcome.event.id}) at ${dateTime(outcome.event.occurredAt)}`) : null));
}

/** A digest run's window and what it collected: key, close, count, the list as sent, each event. */
function digestCard(digest) {
  const facts = h('div', { class: 'stats' },
    stat('Collected', digest.count === null ? '—' : String(digest.count), digest.closed ? 'window closed' : 'so far', 'run-digest-count'),
    stat('Key', digest.key === '' ? 'the subscriber' : digest.key, null, 'run-digest-key'),
    stat(digest.closed ? 'Closed' : 'Closes', relative(digest.closesAt), dateTime(digest.closesAt), 'run-digest-closes'));
  const events = digest.events ?? [];
  return h('div', { class: 'stack', 'data-testid': 'run-digest' }, facts,
    digest.list ? h('div', { class: 'small', 'data-testid': 'run-digest-list' }, 'list: ', h('span', { class: 'strong' }, digest.list)) : null,
    events.length ? table([
      { label: 'Event', class: 'wide', cell: (e) => h('code', { title: `occurred ${dateTime(e.occurredAt)}` }, e.id) },
      { label: 'Joined', cell: (e) => dateTime(e.joinedAt) },
    ], events, { rowTestid: 'run-digest-event' }) : null,
    digest.count > events.length && events.length ? h('div', { class: 'muted small' }, `the first ${events.length} of ${digest.count}`) : null);
}

export async function render(main, params, ctx) {
  let run = null;
  const header = h('div');
  const notice = h('div');
  const stats = h('div', { class: 'stats' });
  const steps = h('div');
  const trigger = h('div');
  const side = h('div', { class: 'stack' });
  // One cancel button for the page: a redraw while it is armed (every 2 s) must not disarm it.
  let cancelButton = null;
  const load = async () => { ({ data: run } = await api('GET', `/v1/workflow-runs/${encodeURIComponent(params.id)}`, { signal: ctx.signal })); };
  const draw = () => {
    if (!runSettled(run) && !cancelButton) cancelButton = confirmButton('Cancel run', 'Click again to cancel', async () => {
      const { data } = await api('POST', `/v1/workflow-runs/${run.id}/cancel`);
      run = data.run;
      draw();
      put(notice, h('div', { class: 'notice notice-warn', 'data-testid': 'run-cancel-notice' },
        data.cancel === 'requested' ? 'Cancel requested: a workflow replica stops the run within moments; no later step runs.'
          : 'The run had already ended.'));
    }, { testid: 'run-cancel' });
    const cancel = runSettled(run) ? null : cancelButton;
    put(header, pageHeader(`Run ${shortId(run.id)}`,
      h('span', {}, 'of ', h('a', { href: `#/workflows/${encodeURIComponent(run.workflowKey)}` }, run.workflowKey), ` v${run.version} for `,
        h('a', { href: `#/subscribers/${encodeURIComponent(run.subscriberId)}`, 'data-testid': 'run-subscriber' }, run.subscriberId)),
      h('span', { 'data-testid': 'run-state' }, runBadge(run.status)), cancel));
    if (run.failure) header.append(h('div', { class: 'notice notice-bad', 'data-testid': 'run-failure' }, `${run.failure.code}: ${run.failure.message}`));
    if (run.cancelReason) header.append(h('div', { class: 'notice notice-warn', 'data-testid': 'run-cancel-reason' }, `Cancelled: ${run.cancelReason}`));
    if (run.throttleReason) header.append(h('div', { class: 'notice notice-warn', 'data-testid': 'run-throttle-reason' }, `Throttled: ${run.throttleReason}`));
    if (runSettled(run)) put(notice); // the request's notice is answered by the run's end
    put(stats,
      stat('Started', run.startedAt ? relative(run.startedAt) : 'about to start', dateTime(run.startedAt || run.createdAt), 'run-started'),
      stat('At step', run.current || '—', run.dueAt ? `due ${dateTime(run.dueAt)}` : null, 'run-current'),
      stat('Steps', String(run.steps.length), `${run.steps.filter((s) => s.status === 'done').length} done`, 'run-steps'),
      stat('Ended', run.endedAt ? relative(run.endedAt) : '—', run.endedAt ? dateTime(run.endedAt) : null, 'run-ended'));
    put(steps, run.steps.length ? h('ol', { class: 'timeline run-timeline', 'data-testid': 'run-timeline' }, run.steps.map(outcomeItem))
      : empty(runSettled(run) ? 'No steps' : 'No step yet', runSettled(run) ? null : 'A workflow replica starts the run within moments.'));
    put(trigger, run.trigger ? h('div', { class: 'stack' },
      h('div', { class: 'small' }, h('code', {}, run.trigger.name), ` at ${dateTime(run.trigger.occurredAt)}`),
      code(json(run.trigger.data ?? {}))) : empty('No trigger recorded'));
    put(side, run.digest ? card('Digest', digestCard(run.digest)) : null, card('Trigger event', trigger));
  };
  await load();
  main.append(h('a', { href: `#/workflows/${encodeURIComponent(run.workflowKey)}/runs`, class: 'back' }, `Runs of ${run.workflowKey}`),
    header, notice, stats,
    h('div', { class: 'grid-2 wide-left' },
      card('Steps', steps),
      side));
  draw();
  // A running run follows along until it ends.
  pollUntilSettled({ settled: () => runSettled(run), refresh: async () => { await load(); draw(); }, signal: ctx.signal });
}
