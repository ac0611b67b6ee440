// lib/status.js against the vocabularies the gateway serves: every value the server has is placed
// (a tone, a group, a description), and nothing is placed that the server does not have.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import {
  DELIVERY, DESCRIPTIONS, MESSAGE, RUN, TONES, allDeliveries, choices, failedDeliveries, label, messageSettled,
  pendingDeliveries, runSettled, tone,
} from '../../Services/gateway/App/Dashboard/lib/status.js';
import { vocabulary } from '../../Services/gateway/App/Dashboard/lib/vocabulary.js';

const DASHBOARD = new URL('../../Services/gateway/App/Dashboard/', import.meta.url);
const TONE_NAMES = ['good', 'info', 'warn', 'bad', 'muted'];

/** Values the server has and `placed` lacks, and values `placed` has that the server lacks. */
function difference(name, placed) {
  const server = vocabulary[name];
  assert.ok(Array.isArray(server), `${name} is not a vocabulary the server serves`);
  return { missing: server.filter((v) => !placed.includes(v)), unknown: placed.filter((v) => !server.includes(v)) };
}

test('every value of a vocabulary drawn as a badge has a tone, and no tone names a value the server lacks', () => {
  for (const [name, tones] of Object.entries(TONES)) {
    const { missing, unknown } = difference(name, Object.keys(tones));
    assert.deepEqual(missing, [], `the server's ${name} has values lib/status.js gives no tone`);
    assert.deepEqual(unknown, [], `lib/status.js gives tones to ${name} values the server does not have`);
    for (const [value, t] of Object.entries(tones)) assert.ok(TONE_NAMES.includes(t), `${name}.${value}: tone ${t}`);
  }
});

test('every vocabulary a page draws with statusBadge or offers with choices() is one the server serves and status.js tones', () => {
  const sources = ['lib', 'pages'].flatMap((dir) => readdirSync(new URL(dir, DASHBOARD))
    .filter((file) => file.endsWith('.js')).map((file) => [`${dir}/${file}`, readFileSync(new URL(`${dir}/${file}`, DASHBOARD), 'utf8')]));
  let badges = 0;
  for (const [file, text] of sources) {
    for (const [, name] of text.matchAll(/statusBadge\(\s*'(\w+)'/g)) {
      badges += 1;
      assert.ok(TONES[name], `${file} draws ${name} values, which lib/status.js does not tone`);
    }
    for (const [, name] of text.matchAll(/choices\(\s*'(\w+)'/g)) {
      assert.ok(vocabulary[name], `${file} offers ${name}, which the server does not serve`);
    }
  }
  assert.ok(badges >= 10, `only ${badges} statusBadge calls found: the scan is looking in the wrong place`);
});

test('delivery, message and run statuses each fall in exactly one group', () => {
  for (const [name, groups] of [['deliveryStatus', DELIVERY], ['messageStatus', MESSAGE], ['workflowRunStatus', RUN]]) {
    const placed = Object.values(groups).flat();
    assert.equal(new Set(placed).size, placed.length, `${name}: a status is in two groups`);
    const { missing, unknown } = difference(name, placed);
    assert.deepEqual(missing, [], `the server's ${name} has values lib/status.js does not group`);
    assert.deepEqual(unknown, [], `lib/status.js groups ${name} values the server does not have`);
  }
});

test('every key kind and every suppressed reason has words', () => {
  for (const name of ['apiKeyKind', 'suppressedReason']) {
    const { missing, unknown } = difference(name, Object.keys(DESCRIPTIONS[name]));
    assert.deepEqual([missing, unknown], [[], []], name);
  }
});

test('tone and label', () => {
  assert.equal(tone('deliveryStatus', 'sent'), 'good');
  assert.equal(tone('deliveryStatus', 'no-such-status'), 'muted');
  assert.equal(tone('no-such-vocabulary', 'sent'), 'muted');
  assert.equal(label('fanning_out'), 'Fanning out');
  assert.equal(label('time-sensitive'), 'Time sensitive');
  assert.equal(label(''), '');
  assert.equal(label(null), '');
  assert.deepEqual(choices('workflowRunStatus')[0], ['', 'All']);
  assert.deepEqual(choices('workflowRunStatus').slice(1).map(([v]) => v), [...vocabulary.workflowRunStatus]);
});

test('delivery counts by group', () => {
  const counts = Object.fromEntries(vocabulary.deliveryStatus.map((status, i) => [status, i + 1]));
  const expected = (group) => group.reduce((sum, status) => sum + counts[status], 0);
  assert.equal(pendingDeliveries(counts), expected(DELIVERY.pending));
  assert.equal(failedDeliveries(counts), expected(DELIVERY.failed));
  assert.equal(allDeliveries(counts), expected(vocabulary.deliveryStatus));
  assert.equal(pendingDeliveries({}), 0);
  assert.equal(failedDeliveries(undefined), 0);
});

test('a message settles once it completed or failed', () => {
  const counts = (pending) => ({ queued: pending, sending: 0, sent: 3, failed: 0, expired: 0, invalid_token: 0 });
  assert.equal(messageSettled({ status: 'queued', counts: counts(0) }), false);
  assert.equal(messageSettled({ status: 'fanning_out', counts: counts(0) }), false);
  assert.equal(messageSettled({ status: 'fanned_out', counts: counts(2) }), false);
  assert.equal(messageSettled({ status: 'fanned_out', counts: counts(0) }), false);
  assert.equal(messageSettled({ status: 'completed', counts: counts(0) }), true);
  assert.equal(messageSettled({ status: 'failed', counts: counts(5) }), true);
  assert.equal(messageSettled(null), false);
});

test('a run settles when it ended', () => {
  for (const status of RUN.ended) assert.equal(runSettled({ status }), true, status);
  for (const status of RUN.moving) assert.equal(runSettled({ status }), false, status);
  assert.equal(runSettled(null), false);
});
