// How the server's vocabularies are shown: a tone for every value a page draws as a badge, the
// words for a value, and which statuses mean "still moving" (what the pages follow along).
// The values themselves come from the server (vocabulary.js); the unit tests fail when the server
// has a value this file does not place, or this file names one the server does not have.
import { vocabulary } from './vocabulary.js';

/** The badge tone of every value of each vocabulary drawn as a badge (good, info, warn, bad, muted). */
export const TONES = {
  deliveryStatus: { queued: 'muted', sending: 'info', sent: 'good', failed: 'bad', expired: 'warn', invalid_token: 'bad', suppressed: 'muted' },
  messageStatus: { queued: 'muted', fanning_out: 'info', fanned_out: 'info', completed: 'good', failed: 'bad' },
  workflowRunStatus: { running: 'info', completed: 'good', cancelled: 'warn', failed: 'bad', throttled: 'warn' },
  workflowStepStatus: { running: 'info', done: 'good', interrupted: 'bad' },
  workflowStepDecision: {
    waited: 'info', matched: 'good', timed_out: 'warn', then: 'good', else: 'warn', sent: 'good',
    scheduled_on_device: 'good', fallback_sent: 'warn', suppressed: 'warn', exited: 'muted', cancelled: 'bad', failed: 'bad',
    collected: 'good', joined: 'muted', passed: 'good', throttled: 'warn',
  },
  dryRunEntryKind: {
    step: 'muted', send: 'good', plan: 'good', acknowledgement: 'info', cancel: 'warn', timer: 'info',
    await: 'info', receipts: 'info', event: 'info', end: 'muted', joined: 'info', separate: 'muted', throttle: 'info',
  },
  liveActivityResultStatus: {
    sent: 'good', sending: 'info', failed: 'bad', invalid_token: 'bad', token_invalid: 'bad',
    activity_ended: 'warn', stale_timestamp: 'warn',
  },
  liveActivityState: { active: 'good', ended: 'muted' },
  liveActivityTokenStatus: { active: 'good', invalid: 'bad' },
  suppressedReason: { unsubscribed: 'warn', category_disabled: 'warn', frequency_capped: 'warn', quiet_hours: 'info' },
  preferenceSource: { api: 'muted', sdk: 'info', dashboard: 'good' },
};

/** Words for the values of vocabularies offered as choices where a label alone says too little. */
export const DESCRIPTIONS = {
  apiKeyKind: {
    workspace: 'Workspace key (every tenant)',
    tenant: 'Tenant key (one tenant)',
    client: 'Client key (SDK, events only)',
  },
  suppressedReason: {
    unsubscribed: 'The subscriber turned off every notification.',
    category_disabled: 'The subscriber turned off this category (or it is off by default).',
    frequency_capped: 'A frequency cap had no slot left for the subscriber.',
    quiet_hours: 'The send fell in quiet hours and its policy drops it.',
  },
};

/** The tone of `value` in the vocabulary `name` ('muted' for a value this dashboard does not know). */
export function tone(name, value) {
  return TONES[name]?.[value] ?? 'muted';
}

/** A value in words: `fanning_out` → `Fanning out`. */
export function label(value) {
  const text = String(value ?? '').replace(/[_-]+/g, ' ').trim();
  return text ? text[0].toUpperCase() + text.slice(1) : '';
}

/** A vocabulary as choices for a filter: [['', 'All'], [value, label], ...]. */
export function choices(name, all = 'All') {
  return [['', all], ...vocabulary[name].map((value) => [value, label(value)])];
}

/**
 * Delivery statuses by where they stand: still on their way, sent, ended without reaching
 * APNs's acceptance, or held back by the send policy (no APNs request; not a failure). Every
 * delivery status is in exactly one group.
 */
export const DELIVERY = {
  pending: ['queued', 'sending'],
  sent: ['sent'],
  failed: ['failed', 'expired', 'invalid_token'],
  suppressed: ['suppressed'],
};

/**
 * Message statuses by where the message stands: its audience still being resolved, every
 * delivery made but some still pending, or final (completed: every delivery decided; failed).
 */
export const MESSAGE = {
  resolving: ['queued', 'fanning_out'],
  sending: ['fanned_out'],
  ended: ['completed', 'failed'],
};

/** Workflow run statuses by whether the run may still do something. */
export const RUN = {
  moving: ['running'],
  ended: ['completed', 'cancelled', 'failed', 'throttled'],
};

const sum = (counts, statuses) => statuses.reduce((total, status) => total + (counts?.[status] ?? 0), 0);

/** Deliveries still on their way, from counts by status. */
export const pendingDeliveries = (counts) => sum(counts, DELIVERY.pending);
/** Deliveries that ended without being sent (failed, expired, invalid token). */
export const failedDeliveries = (counts) => sum(counts, DELIVERY.failed);
/** Every delivery, from counts by status. */
export const allDeliveries = (counts) => sum(counts, vocabulary.deliveryStatus);

/** A message nothing more happens to: it completed (every delivery decided) or failed. */
export function messageSettled(message) {
  return Boolean(message) && MESSAGE.ended.includes(message.status);
}

/** A run that ended (completed, cancelled or failed). */
export function runSettled(run) {
  return Boolean(run) && RUN.ended.includes(run.status);
}
