// Live checking of an audience expression through POST /v1/audience/preview: the count as it is
// typed, or the problem at its line and column with a caret under the spot.
import { api } from './api.js';
import { debounce, h, put } from './dom.js';
import { number } from './format.js';

/** Shows the expression's problem: the line of text, a caret under the column, the message. */
export function problemView(text, issue) {
  const line = Math.max(1, issue.line || 1);
  const column = Math.max(1, issue.column || 1);
  const source = String(text).split('\n')[line - 1] ?? '';
  return h('div', { class: 'expr-problem', role: 'alert', 'data-testid': 'expression-error' },
    h('div', { class: 'expr-where', 'data-testid': 'expression-position' }, `Line ${line}, column ${column}`),
    h('pre', { class: 'expr-source' }, source, '\n', `${' '.repeat(column - 1)}^`),
    h('div', {}, issue.message || 'invalid expression',
      issue.expected && !String(issue.message).includes(issue.expected) ? ` (expected ${issue.expected})` : ''));
}

/**
 * Wires a textarea to the preview route. `out` gets the count or the problem; onresult({count,
 * sample} | {error}) is told too.
 */
export function liveExpression(textarea, out, onresult = () => {}) {
  let generation = 0;
  const check = debounce(async () => {
    const text = textarea.value;
    const mine = ++generation;
    if (!text.trim()) { put(out, h('span', { class: 'muted' }, 'Type an expression, e.g. plan == "pro"')); onresult(null); return; }
    put(out, h('span', { class: 'muted' }, 'Counting…'));
    try {
      const { data } = await api('POST', '/v1/audience/preview', { body: { where: text } });
      if (mine !== generation) return;
      put(out, h('div', { class: 'expr-ok' },
        h('span', { class: 'expr-count', 'data-testid': 'audience-count' }, number(data.count)),
        h('span', {}, data.count === 1 ? ' subscriber matches' : ' subscribers match'),
        data.sample?.length ? h('div', { class: 'muted small' }, 'e.g. ', data.sample.slice(0, 5).join(', ')) : null));
      onresult(data);
    } catch (error) {
      if (mine !== generation) return;
      const issue = error.issues?.find((i) => i.line) || error.issues?.[0];
      put(out, issue ? problemView(text, issue) : h('div', { class: 'notice notice-bad' }, error.message));
      onresult({ error });
    }
  }, 250);
  textarea.addEventListener('input', check);
  check();
  return check;
}
