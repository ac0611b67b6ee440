// lib/search.js: what is typed becomes one search once typing pauses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SEARCH_DELAY_MS, createSearch, subscriberQuery } from '../../Services/gateway/App/Dashboard/lib/search.js';
import { fakeTimers } from './fake-timers.js';

test('typing runs one search, for the text typed last, trimmed', async () => {
  const timers = fakeTimers();
  const runs = [];
  const search = createSearch({ run: (prefix) => runs.push(prefix), timers });
  for (const text of ['p', 'pr', 'pro', 'pro-']) {
    search.type(text);
    await timers.advance(SEARCH_DELAY_MS - 1);
  }
  assert.deepEqual(runs, []);
  await timers.advance(1);
  assert.deepEqual(runs, ['pro-']);
  search.type('pro- ');
  await timers.advance(SEARCH_DELAY_MS);
  assert.deepEqual(runs, ['pro-'], 'a trailing space searched again');
  search.type('');
  await timers.advance(SEARCH_DELAY_MS);
  assert.deepEqual(runs, ['pro-', '']);
  assert.equal(search.prefix, '');
});

test('cancel() drops the search not yet run (the page was left)', async () => {
  const timers = fakeTimers();
  const runs = [];
  const search = createSearch({ run: (prefix) => runs.push(prefix), timers });
  search.type('x');
  search.cancel();
  await timers.advance(SEARCH_DELAY_MS * 2);
  assert.deepEqual(runs, []);
  assert.equal(timers.pending, 0);
});

test('the query asks for a page of ids starting with the prefix', () => {
  assert.deepEqual(subscriberQuery('pro-', 'c1'), { cursor: 'c1', limit: 50, prefix: 'pro-' });
  assert.deepEqual(subscriberQuery('', null), { cursor: null, limit: 50, prefix: undefined });
});
