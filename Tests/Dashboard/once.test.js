// lib/once.js: a composed request is sent once per idempotency key.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oncePerKey } from '../../Services/gateway/App/Dashboard/lib/once.js';
import { deferred } from './fake-timers.js';

const keys = () => {
  let n = 0;
  return () => `key-${++n}`;
};

test('a double click while the first send is out sends once, with one key', async () => {
  const once = oncePerKey(keys());
  const answer = deferred();
  const used = [];
  const first = once.send((key) => { used.push(key); return answer.promise; });
  const second = once.send((key) => { used.push(key); return 'second'; });
  assert.equal(second, first);
  assert.equal(once.sending, true);
  answer.resolve('sent');
  assert.equal(await first, 'sent');
  assert.deepEqual(used, ['key-1']);
  assert.equal(once.sending, false);
});

test('after a success the next send is a new request', async () => {
  const once = oncePerKey(keys());
  assert.equal(once.key, 'key-1');
  await once.send(async () => 'ok');
  assert.equal(once.key, 'key-2');
});

test('after a failure the same request keeps its key, so sending it again cannot send twice', async () => {
  const once = oncePerKey(keys());
  const used = [];
  await assert.rejects(once.send(async (key) => { used.push(key); throw new Error('upstream_timeout'); }));
  await once.send(async (key) => { used.push(key); });
  assert.deepEqual(used, ['key-1', 'key-1']);
  assert.equal(once.key, 'key-2');
});

test('an edit starts a new request: at once, or when the send in flight ends', async () => {
  const once = oncePerKey(keys());
  once.edited();
  assert.equal(once.key, 'key-2');
  const answer = deferred();
  const used = [];
  const sending = once.send((key) => { used.push(key); return answer.promise; });
  once.edited();
  assert.equal(once.key, 'key-2', 'the key of the request in flight changed');
  answer.reject(new Error('validation_failed'));
  await assert.rejects(sending);
  assert.equal(once.key, 'key-3', 'an edit made during a failed send kept the old key');
  await once.send(async (key) => { used.push(key); });
  assert.deepEqual(used, ['key-2', 'key-3']);
});
