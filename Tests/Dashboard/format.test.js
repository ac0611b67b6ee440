// lib/format.js: API values in words.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytes, duration, number, percent, shortToken, target } from '../../Services/gateway/App/Dashboard/lib/format.js';

test('numbers, shares and sizes', () => {
  assert.equal(number(1234567), '1,234,567');
  assert.equal(number(null), '—');
  assert.equal(percent(1, 3), '33%');
  assert.equal(percent(1, 300), '0.3%');
  assert.equal(percent(0, 5), '0%');
  assert.equal(percent(1, 0), '—');
  assert.equal(bytes(1), '1 byte');
  assert.equal(bytes(2048), '2,048 bytes');
});

test('a retention in words', () => {
  assert.equal(duration(30 * 86400), '30 days');
  assert.equal(duration(86400), '1 day');
  assert.equal(duration(395 * 86400), '395 days');
  assert.equal(duration(36 * 3600), '36 h');
  assert.equal(duration(90), '2 min');
  assert.equal(duration(null), '—');
});

test('a message\'s target in words', () => {
  assert.equal(target({ to: ['a'] }), 'subscriber a');
  assert.equal(target({ to: ['a', 'b'] }), '2 subscribers');
  assert.equal(target({ to: 'a' }), 'subscriber a');
  assert.equal(target({ topic: 'news' }), 'topic news');
  assert.equal(target({ segment: 'vip' }), 'segment vip');
  assert.equal(target({ where: 'plan == "pro"' }), 'where plan == "pro"');
  assert.equal(target(null), '—');
});

test('a long token is shortened to its ends', () => {
  assert.equal(shortToken('ab'.repeat(32)), 'abababab…ababab');
  assert.equal(shortToken('abc'), 'abc');
  assert.equal(shortToken(''), '—');
});
