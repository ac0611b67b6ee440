// DOM building without HTML strings: every value becomes a text node or an attribute value, so
// data from the API is always shown as the characters it holds (never parsed as markup).

const SVG_NS = 'http://www.w3.org/2000/svg';

function setProps(el, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') el.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name === 'value' || name === 'checked' || name === 'disabled' || name === 'selected') el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
}

function appendChildren(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: h('a', {href: '#/x', class: 'link'}, 'text', otherNode). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  appendChildren(el, children);
  return el;
}

/** An SVG element (same shape as h). */
export function s(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  appendChildren(el, children);
  return el;
}

/** Replaces the children of el. */
export function put(el, ...children) {
  el.replaceChildren();
  appendChildren(el, children);
  return el;
}

/** Calls fn at most once per `ms`, after the last call (typing). */
export function debounce(fn, ms) {
  let timer = null;
  const wrapped = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  wrapped.cancel = () => clearTimeout(timer);
  return wrapped;
}

/** A small icon from a path list (24x24 strokes). */
export function icon(paths, cls = 'icon') {
  return s('svg', { class: cls, viewBox: '0 0 24 24', 'aria-hidden': 'true' },
    paths.map((d) => s('path', { d })));
}
