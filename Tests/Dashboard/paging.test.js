// lib/paging.js: keyset pages by cursor, and a later request always wins over an earlier one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keysetPaging } from '../../Services/gateway/App/Dashboard/lib/paging.js';
import { deferred } from './fake-timers.js';

/** 5 items, 2 a page, cursors 'c2' and 'c4'. */
function source() {
  const items = ['a', 'b', 'c', 'd', 'e'];
  const asked = [];
  const load = async (cursor) => {
    asked.push(cursor);
    const start = cursor ? Number(cursor.slice(1)) : 0;
    const data = items.slice(start, start + 2);
    const more = start + 2 < items.length;
    return { data, metadata: { cursor: more ? `c${start + 2}` : null, hasMore: more } };
  };
  return { load, asked };
}

test('pages forward with the cursor each answer gave, and back with the ones kept', async () => {
  const { load, asked } = source();
  const paging = keysetPaging({ load, pageSize: 2 });
  assert.deepEqual(await paging.go(0), { items: ['a', 'b'], page: 0, first: 1, hasMore: true });
  assert.deepEqual(await paging.go(1), { items: ['c', 'd'], page: 1, first: 3, hasMore: true });
  assert.deepEqual(await paging.go(2), { items: ['e'], page: 2, first: 5, hasMore: false });
  assert.equal(await paging.go(3), null, 'read past the last page');
  assert.deepEqual((await paging.go(1)).items, ['c', 'd']);
  assert.deepEqual((await paging.go(-1)).items, ['a', 'b']);
  assert.deepEqual(asked, [null, 'c2', 'c4', 'c2', null]);
  assert.equal(await paging.go(2), null, 'jumped two pages ahead');
});

test('an answer that comes after a later request\'s is not shown', async () => {
  const answers = [];
  const load = (cursor) => { const answer = deferred(); answers.push({ cursor, answer }); return answer.promise; };
  const paging = keysetPaging({ load, pageSize: 50 });
  const older = paging.go(0); // typed "p"
  const newer = paging.go(0); // typed "pro"
  answers[1].answer.resolve({ data: ['pro-1'], metadata: { hasMore: false } });
  assert.deepEqual((await newer).items, ['pro-1']);
  answers[0].answer.resolve({ data: ['p-1', 'pro-1'], metadata: { hasMore: false } });
  assert.equal(await older, null);
  assert.equal(paging.busy, false);
});

test('a refresh never overtakes a page asked for', async () => {
  const answers = [];
  const load = (cursor) => { const answer = deferred(); answers.push(answer); return answer.promise; };
  const paging = keysetPaging({ load, pageSize: 2 });
  const first = paging.go(0);
  assert.equal(await paging.refresh(), null, 'a refresh started while a page was being read');
  assert.equal(answers.length, 1);
  answers[0].resolve({ data: ['a'], metadata: { hasMore: false } });
  await first;
  const again = paging.refresh();
  answers[1].resolve({ data: ['a', 'b'], metadata: { hasMore: false } });
  assert.deepEqual((await again).items, ['a', 'b']);
});

test('a failed read leaves the page where it was', async () => {
  let fail = false;
  const { load: ok } = source();
  const paging = keysetPaging({ load: (cursor) => (fail ? Promise.reject(new Error('network')) : ok(cursor)), pageSize: 2 });
  await paging.go(0);
  fail = true;
  await assert.rejects(paging.go(1));
  assert.equal(paging.page, 0);
  assert.equal(paging.busy, false);
  fail = false;
  assert.deepEqual((await paging.go(1)).items, ['c', 'd']);
});
