// lib/jsonfield.js: what a JSON textarea holds, or why it is not usable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseJSONText } from '../../Services/gateway/App/Dashboard/lib/jsonfield.js';

test('empty text is nothing, unless required', () => {
  assert.deepEqual(parseJSONText(''), { ok: true, value: undefined });
  assert.deepEqual(parseJSONText('  \n '), { ok: true, value: undefined });
  assert.deepEqual(parseJSONText(undefined), { ok: true, value: undefined });
  assert.deepEqual(parseJSONText('', { required: true, object: true }), { ok: false, message: 'Required: a JSON object (may be {}).' });
  assert.deepEqual(parseJSONText('', { required: true }), { ok: false, message: 'Required: JSON.' });
});

test('JSON is read as typed, surrounding space aside', () => {
  assert.deepEqual(parseJSONText(' {"a": [1, 2], "b": null} '), { ok: true, value: { a: [1, 2], b: null } });
  assert.deepEqual(parseJSONText('[1]'), { ok: true, value: [1] });
  assert.deepEqual(parseJSONText('"text"'), { ok: true, value: 'text' });
  assert.deepEqual(parseJSONText('{}', { required: true, object: true }), { ok: true, value: {} });
});

test('text that is not JSON says so, with the parser\'s reason', () => {
  const result = parseJSONText('{"score": ');
  assert.equal(result.ok, false);
  assert.match(result.message, /^Not valid JSON: /);
  assert.equal(parseJSONText("{'a': 1}").ok, false);
});

test('where an object is needed, nothing else will do', () => {
  for (const text of ['[]', '1', '"a"', 'null', 'true']) {
    const result = parseJSONText(text, { object: true, example: '{"score": 2}' });
    assert.deepEqual(result, { ok: false, message: 'Must be a JSON object, e.g. {"score": 2}' }, text);
  }
});
