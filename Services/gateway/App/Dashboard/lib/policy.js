// The send policy's forms and words (Categories page, a subscriber's preferences): what a
// frequency cap row sends, where the API's problems go, what a preference choice and a history
// entry say. Pure: no DOM, no API calls.

/**
 * A 422's issues placed at the fields a form shows: `{at: Map(path -> [message]), rest: [issue]}`.
 * An issue whose path is not one of `paths` (or has none) stays in `rest`, shown above the form.
 */
export function placeIssues(issues, paths) {
  const known = new Set(paths);
  const at = new Map();
  const rest = [];
  for (const issue of issues ?? []) {
    if (issue?.path && known.has(issue.path)) {
      if (!at.has(issue.path)) at.set(issue.path, []);
      at.get(issue.path).push(issue.message ?? '');
    } else {
      rest.push(issue);
    }
  }
  return { at, rest };
}

/** The field paths of the settings form with `count` cap rows, as the API names them. */
export function settingsPaths(count) {
  const paths = ['defaultCategory', 'frequencyCaps'];
  for (let i = 0; i < count; i += 1) {
    paths.push(`frequencyCaps[${i}]`, `frequencyCaps[${i}].category`, `frequencyCaps[${i}].limit`, `frequencyCaps[${i}].window`);
  }
  return paths;
}

/**
 * A cap row as typed ({category: '' for every non-critical push, limit, window}) as the API takes
 * it. What is typed is sent as it is (a limit that is not a whole number stays text, a window is
 * not checked here), so the API says what is wrong at the field's own path.
 */
export function capBody({ category, limit, window }) {
  const text = String(limit ?? '').trim();
  const body = { limit: /^\d+$/.test(text) ? Number(text) : text, window: String(window ?? '').trim() };
  if (category) body.category = category;
  return body;
}

/**
 * A category's switch for a subscriber: `category` an entry of the preferences' `effective`,
 * `chosen` the subscriber's own choices (`categories`). On or off is the subscriber's choice, else
 * the category's default; a critical category is always on and cannot be switched.
 */
export function choice(category, chosen) {
  const byDefault = category.defaultEnabled ? 'on' : 'off';
  if (category.critical) return { enabled: true, locked: true, note: 'Critical: always delivered' };
  const own = chosen?.[category.key];
  if (typeof own === 'boolean') return { enabled: own, locked: false, note: `Chosen (default ${byDefault})` };
  return { enabled: category.defaultEnabled, locked: false, note: `Default (${byDefault})` };
}

const onOff = (value) => (value === null || value === undefined ? 'default' : value ? 'on' : 'off');

/**
 * A history entry's changes as lines, the global switch first: [{member, from, to}] with each
 * value in words (`on`, `off`, `default` for a member that had no choice before).
 */
export function historyLines(entry) {
  const lines = [];
  if (entry.all) lines.push({ member: 'all', from: onOff(entry.all.from), to: onOff(entry.all.to) });
  for (const key of Object.keys(entry.categories ?? {}).sort()) {
    const change = entry.categories[key];
    lines.push({ member: key, from: onOff(change.from), to: onOff(change.to) });
  }
  return lines;
}

/**
 * One use of a category that keeps it from being deleted (`409 category_in_use`'s
 * `details.usedBy`) in words, with the page that shows it: {text, href}.
 */
export function useOf(use) {
  switch (use?.kind) {
    case 'workflow':
      return { text: `the enabled workflow ${use.key} sends in it`, href: `#/workflows/${encodeURIComponent(use.key)}` };
    case 'defaultCategory':
      return { text: 'it is the default category', href: '#/categories' };
    case 'frequencyCap':
      return { text: `frequency cap ${Number(use.index) + 1} counts it`, href: '#/categories' };
    default:
      return { text: `used by ${JSON.stringify(use)}`, href: null };
  }
}
