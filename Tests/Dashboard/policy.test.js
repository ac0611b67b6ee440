// lib/policy.js: the Categories page's settings form and a subscriber's preferences, in words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capBody, choice, historyLines, placeIssues, settingsPaths, useOf } from '../../Services/gateway/App/Dashboard/lib/policy.js';

test('issues go to the fields the form shows, the rest above it', () => {
  const issues = [
    { path: 'frequencyCaps[1].window', message: 'must be one of 1h, 1d, 7d' },
    { path: 'frequencyCaps[1].window', message: 'second' },
    { path: 'defaultCategory', message: 'is not a category' },
    { path: 'quietHours.start', message: 'elsewhere' },
    { message: 'no path' },
  ];
  const { at, rest } = placeIssues(issues, settingsPaths(2));
  assert.deepEqual(at.get('frequencyCaps[1].window'), ['must be one of 1h, 1d, 7d', 'second']);
  assert.deepEqual(at.get('defaultCategory'), ['is not a category']);
  assert.deepEqual(rest.map((i) => i.message), ['elsewhere', 'no path']);
  assert.deepEqual(placeIssues(undefined, []), { at: new Map(), rest: [] });
});

test('the settings paths name every field of every cap row', () => {
  assert.deepEqual(settingsPaths(0), ['defaultCategory', 'frequencyCaps']);
  assert.ok(settingsPaths(3).includes('frequencyCaps[2].limit'));
  assert.ok(!settingsPaths(3).includes('frequencyCaps[3].limit'));
});

test('a cap row is sent as typed: a whole number as a number, anything else as text for the API to judge', () => {
  assert.deepEqual(capBody({ category: '', limit: ' 3 ', window: '1d' }), { limit: 3, window: '1d' });
  assert.deepEqual(capBody({ category: 'news', limit: '10', window: ' 2w ' }), { category: 'news', limit: 10, window: '2w' });
  assert.deepEqual(capBody({ category: '', limit: '1.5', window: '' }), { limit: '1.5', window: '' });
});

test('a category switch: the subscriber\'s choice, else the default; critical is locked on', () => {
  const offers = { key: 'offers', defaultEnabled: true, critical: false };
  assert.deepEqual(choice(offers, {}), { enabled: true, locked: false, note: 'Default (on)' });
  assert.deepEqual(choice(offers, { offers: false }), { enabled: false, locked: false, note: 'Chosen (default on)' });
  assert.deepEqual(choice({ ...offers, defaultEnabled: false }, { offers: true }),
    { enabled: true, locked: false, note: 'Chosen (default off)' });
  assert.deepEqual(choice({ ...offers, critical: true }, { offers: false }),
    { enabled: true, locked: true, note: 'Critical: always delivered' });
});

test('a history entry in words, the global switch first, categories by key', () => {
  const entry = {
    all: { from: null, to: false },
    categories: { offers: { from: true, to: false }, alerts: { from: null, to: true } },
  };
  assert.deepEqual(historyLines(entry), [
    { member: 'all', from: 'default', to: 'off' },
    { member: 'alerts', from: 'default', to: 'on' },
    { member: 'offers', from: 'on', to: 'off' },
  ]);
  assert.deepEqual(historyLines({ all: null, categories: {} }), []);
  // A choice taken back (PUT categories {"offers": null}) reads "on → default".
  assert.deepEqual(historyLines({ all: null, categories: { offers: { from: true, to: null } } }),
    [{ member: 'offers', from: 'on', to: 'default' }]);
});

test('what keeps a category from being deleted, in words, with where to look', () => {
  assert.deepEqual(useOf({ kind: 'workflow', key: 'daily digest' }),
    { text: 'the enabled workflow daily digest sends in it', href: '#/workflows/daily%20digest' });
  assert.deepEqual(useOf({ kind: 'defaultCategory' }), { text: 'it is the default category', href: '#/categories' });
  assert.deepEqual(useOf({ kind: 'frequencyCap', index: 0 }), { text: 'frequency cap 1 counts it', href: '#/categories' });
  assert.equal(useOf({ kind: 'other' }).href, null);
});
