// lib/poll.js: one interval, no overlapping ticks, nothing asked while settled, an end when the page is left.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POLL_INTERVAL_MS, pollUntilSettled } from '../../Services/gateway/App/Dashboard/lib/poll.js';
import { deferred, fakeTimers } from './fake-timers.js';

test('one interval for every page', () => {
  assert.equal(POLL_INTERVAL_MS, 2000);
});

test('refreshes every interval while unsettled, then asks nothing', async () => {
  const timers = fakeTimers();
  let calls = 0;
  let settled = false;
  const stop = pollUntilSettled({ refresh: async () => { calls += 1; }, settled: () => settled, timers });
  await timers.advance(POLL_INTERVAL_MS - 1);
  assert.equal(calls, 0, 'nothing before the first interval');
  await timers.advance(1);
  assert.equal(calls, 1);
  await timers.advance(POLL_INTERVAL_MS * 3);
  assert.equal(calls, 4);
  settled = true;
  await timers.advance(POLL_INTERVAL_MS * 5);
  assert.equal(calls, 4, 'asked while settled');
  settled = false; // a list paged back to sends in flight
  await timers.advance(POLL_INTERVAL_MS);
  assert.equal(calls, 5);
  stop();
  await timers.advance(POLL_INTERVAL_MS * 5);
  assert.equal(calls, 5, 'asked after stop()');
  assert.equal(timers.pending, 0, 'a timer was left behind');
});

test('ticks never overlap: the next is timed from the end of a slow refresh', async () => {
  const timers = fakeTimers();
  const answers = [];
  let running = 0;
  let most = 0;
  pollUntilSettled({
    refresh: async () => {
      running += 1;
      most = Math.max(most, running);
      const answer = deferred();
      answers.push(answer);
      await answer.promise;
      running -= 1;
    },
    timers,
  });
  await timers.advance(POLL_INTERVAL_MS);
  assert.equal(answers.length, 1);
  await timers.advance(POLL_INTERVAL_MS * 4); // the first answer is still out
  assert.equal(answers.length, 1, 'a second refresh started while the first was running');
  answers[0].resolve();
  await timers.advance(POLL_INTERVAL_MS - 1);
  assert.equal(answers.length, 1);
  await timers.advance(1);
  assert.equal(answers.length, 2);
  assert.equal(most, 1);
});

test('a failed refresh is tried again on the next tick', async () => {
  const timers = fakeTimers();
  let calls = 0;
  pollUntilSettled({ refresh: async () => { calls += 1; throw new Error('network'); }, timers });
  await timers.advance(POLL_INTERVAL_MS * 3);
  assert.equal(calls, 3);
});

test('leaving the page (its signal aborts) ends the loop; an aborted signal never starts it', async () => {
  const timers = fakeTimers();
  const controller = new AbortController();
  let calls = 0;
  pollUntilSettled({ refresh: async () => { calls += 1; }, signal: controller.signal, timers });
  await timers.advance(POLL_INTERVAL_MS);
  controller.abort();
  await timers.advance(POLL_INTERVAL_MS * 5);
  assert.equal(calls, 1);
  assert.equal(timers.pending, 0);
  pollUntilSettled({ refresh: async () => { calls += 1; }, signal: controller.signal, timers });
  await timers.advance(POLL_INTERVAL_MS * 5);
  assert.equal(calls, 1);
  assert.equal(timers.pending, 0);
});

test('a page left while a refresh is out schedules nothing after it', async () => {
  const timers = fakeTimers();
  const controller = new AbortController();
  const answer = deferred();
  let calls = 0;
  pollUntilSettled({ refresh: () => { calls += 1; return answer.promise; }, signal: controller.signal, timers });
  await timers.advance(POLL_INTERVAL_MS);
  controller.abort();
  answer.resolve();
  await timers.advance(POLL_INTERVAL_MS * 5);
  assert.equal(calls, 1);
  assert.equal(timers.pending, 0);
});
