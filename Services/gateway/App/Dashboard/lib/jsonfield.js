// JSON typed into a textarea (custom data, an action's data, a Live Activity's content state and
// attributes, a workflow definition, a dry run's sample): read, checked as typed, the problem shown
// under the field.
import { h, put } from './dom.js';

/**
 * Reads JSON text. Returns {ok: true, value} (value undefined for empty text, unless `required`)
 * or {ok: false, message}. `object`: only a JSON object will do (`example` shows one).
 */
export function parseJSONText(text, { required = false, object = false, example = '{"key": "value"}' } = {}) {
  const trimmed = String(text ?? '').trim();
  if (!trimmed) {
    return required ? { ok: false, message: `Required: ${object ? 'a JSON object (may be {})' : 'JSON'}.` } : { ok: true, value: undefined };
  }
  let value;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${error.message}` };
  }
  if (object && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    return { ok: false, message: `Must be a JSON object, e.g. ${example}` };
  }
  return { ok: true, value };
}

/**
 * A textarea's JSON, checked: `read()` parses it (parseJSONText's options) and shows its problem
 * in `problem` (an element to place under the field; the message carries `data-testid` `testid`).
 */
export function jsonField(textarea, { testid = 'json-error', ...options } = {}) {
  const problem = h('div', { class: 'field-problem' });
  const read = () => {
    const result = parseJSONText(textarea.value, options);
    put(problem, result.ok ? null : h('span', { 'data-testid': testid }, result.message));
    return result;
  };
  return { problem, read };
}
