// Charts as inline SVG built node by node (no library, no markup strings).
import { h, s } from './dom.js';
import { number, percent } from './format.js';

/** The sent → delivered → opened funnel: one bar per step, each labelled with its count and rate. */
export function funnel(steps, options = {}) {
  const width = 520;
  const rowHeight = 46;
  const labelWidth = 96;
  const barMax = width - labelWidth - 120;
  const top = steps[0]?.value || 0;
  const svg = s('svg', {
    class: 'chart funnel', viewBox: `0 0 ${width} ${rowHeight * steps.length}`, role: 'img',
    'aria-label': steps.map((step) => `${step.label} ${step.value}`).join(', '), 'data-testid': options.testid,
  });
  steps.forEach((step, i) => {
    const y = i * rowHeight;
    const length = top ? Math.max(2, Math.round((barMax * step.value) / top)) : 2;
    svg.append(
      s('text', { x: 0, y: y + 27, class: 'chart-label' }, step.label),
      s('rect', { x: labelWidth, y: y + 8, width: barMax, height: 28, rx: 6, class: 'chart-track' }),
      s('rect', { x: labelWidth, y: y + 8, width: length, height: 28, rx: 6, class: `chart-bar step-${i}` }),
      s('text', { x: labelWidth + barMax + 12, y: y + 22, class: 'chart-value' }, number(step.value)),
      s('text', { x: labelWidth + barMax + 12, y: y + 38, class: 'chart-note' }, i === 0 ? '100%' : percent(step.value, top)),
    );
  });
  return svg;
}

/**
 * Vertical bars over time: points [{at, value, value2?}] (value2 stacked above in the warning tone).
 * `tick(at)` labels the axis (every `every`-th point).
 */
export function bars(points, options = {}) {
  const width = 640;
  const height = 180;
  const bottom = 24;
  const left = 36;
  const max = Math.max(1, ...points.map((p) => (p.value || 0) + (p.value2 || 0)));
  const step = (width - left) / Math.max(1, points.length);
  const barWidth = Math.max(2, step * 0.66);
  const scale = (height - bottom - 10) / max;
  const svg = s('svg', {
    class: 'chart bars', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': options.label || 'chart',
    'data-testid': options.testid,
  });
  for (const fraction of [0, 0.5, 1]) {
    const y = height - bottom - fraction * max * scale;
    svg.append(s('line', { x1: left, x2: width, y1: y, y2: y, class: 'chart-grid' }),
      s('text', { x: left - 6, y: y + 4, class: 'chart-axis', 'text-anchor': 'end' }, number(Math.round(fraction * max))));
  }
  points.forEach((p, i) => {
    const x = left + i * step + (step - barWidth) / 2;
    const a = (p.value || 0) * scale;
    const b = (p.value2 || 0) * scale;
    const group = s('g', {}, s('title', {}, `${options.tick ? options.tick(p.at, true) : p.at}: ${number(p.value || 0)}${p.value2 ? `, ${number(p.value2)} failed` : ''}`));
    if (a > 0) group.append(s('rect', { x, y: height - bottom - a, width: barWidth, height: a, rx: 2, class: 'chart-bar' }));
    if (b > 0) group.append(s('rect', { x, y: height - bottom - a - b, width: barWidth, height: b, rx: 2, class: 'chart-bar-bad' }));
    group.append(s('rect', { x: left + i * step, y: 0, width: step, height: height - bottom, class: 'chart-hit' }));
    svg.append(group);
    if (options.tick && i % (options.every || 1) === 0) {
      svg.append(s('text', { x: x + barWidth / 2, y: height - 6, class: 'chart-axis', 'text-anchor': 'middle' }, options.tick(p.at)));
    }
  });
  return svg;
}

/** Horizontal bars for a ranking (failure reasons, event names): rows [{label, value, note?}]. */
export function ranking(rows, options = {}) {
  const max = Math.max(1, ...rows.map((r) => r.value));
  return h('ul', { class: 'ranking', 'data-testid': options.testid }, rows.map((row) => h('li', {},
    h('div', { class: 'ranking-text' }, h('span', { class: 'ranking-label' }, row.label), row.note ?? null,
      h('span', { class: 'ranking-value' }, number(row.value))),
    h('div', { class: 'ranking-track' }, (() => {
      const bar = h('div', { class: ['ranking-bar', options.tone ? `ranking-${options.tone}` : null] });
      bar.style.width = `${Math.max(1, (100 * row.value) / max)}%`;
      return bar;
    })()))));
}
