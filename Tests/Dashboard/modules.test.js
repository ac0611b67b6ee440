// Every module of the dashboard but app.js (which starts the page) loads: each import resolves,
// every name taken from lib/vocabulary.js included, so a page cannot ask for a list the server
// no longer serves.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';

const DASHBOARD = new URL('../../Services/gateway/App/Dashboard/', import.meta.url);

for (const dir of ['lib', 'pages']) {
  for (const file of readdirSync(new URL(dir, DASHBOARD)).filter((name) => name.endsWith('.js')).sort()) {
    test(`${dir}/${file} loads`, async () => {
      const module = await import(new URL(`${dir}/${file}`, DASHBOARD).href);
      assert.ok(Object.keys(module).length > 0, `${dir}/${file} exports nothing`);
      if (dir === 'pages') assert.equal(typeof module.render, 'function', `${dir}/${file} has no render()`);
    });
  }
}
