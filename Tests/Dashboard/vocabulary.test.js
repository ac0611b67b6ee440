// The module the gateway writes from the server's types (lib/vocabulary.js): its shape, and that
// no page can change it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as exported from '../../Services/gateway/App/Dashboard/lib/vocabulary.js';

const { vocabulary } = exported;

test('every list is non-empty, without repeats, of plain lower-case words (a window such as 1h starts with its digit)', () => {
  for (const [name, value] of Object.entries(vocabulary)) {
    if (name === 'scopesByKeyKind') continue;
    assert.ok(Array.isArray(value) && value.length > 0, `${name} is empty`);
    assert.equal(new Set(value).size, value.length, `${name} repeats a value`);
    for (const word of value) assert.match(word, /^[a-z0-9][a-z0-9_:-]*$/, `${name}: ${word}`);
  }
});

test('each list is exported under its own name, the same array', () => {
  for (const name of Object.keys(vocabulary)) assert.equal(exported[name], vocabulary[name], name);
  for (const name of Object.keys(exported)) assert.ok(name === 'vocabulary' || name in vocabulary, name);
});

test('the scopes a key may hold are known for every kind, a workspace key may hold them all', () => {
  const { apiKeyKind, scopesByKeyKind } = vocabulary;
  assert.deepEqual(Object.keys(scopesByKeyKind).sort(), [...apiKeyKind].sort());
  for (const kind of apiKeyKind) {
    for (const scope of scopesByKeyKind[kind]) {
      assert.match(scope, /^[a-z]+:[a-z]+$/);
      assert.ok(scopesByKeyKind.workspace.includes(scope), `${kind} may hold ${scope}, a workspace key may not`);
    }
  }
});

test('the lists are frozen: no page can change what the server said', () => {
  assert.ok(Object.isFrozen(vocabulary));
  assert.throws(() => { vocabulary.deliveryStatus.push('made_up'); }, TypeError);
  assert.throws(() => { vocabulary.scopesByKeyKind.client.push('keys:write'); }, TypeError);
  assert.throws(() => { vocabulary.messageStatus = []; }, TypeError);
});
