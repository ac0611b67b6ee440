// Formatting of API values for display (always returned as plain strings).

const numberFormat = new Intl.NumberFormat('en-US');

export function number(value) {
  return value === null || value === undefined ? '—' : numberFormat.format(value);
}

export function percent(part, whole) {
  if (!whole) return '—';
  const value = (100 * part) / whole;
  return `${value >= 10 || value === 0 ? value.toFixed(0) : value.toFixed(1)}%`;
}

export function dateTime(text) {
  if (!text) return '—';
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return String(text);
  return date.toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function relative(text) {
  if (!text) return '—';
  const date = new Date(text);
  const seconds = Math.round((Date.now() - date.getTime()) / 1000);
  if (Number.isNaN(seconds)) return String(text);
  if (seconds < 45) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.round(hours / 24);
  if (days < 30) return `${days} d ago`;
  return date.toLocaleDateString('en-GB', { year: 'numeric', month: 'short', day: '2-digit' });
}

export function json(value) {
  return JSON.stringify(value, null, 2);
}

/** A message's target in words: "3 subscribers", "topic news", "segment vip", "where …". */
export function target(value) {
  if (!value || typeof value !== 'object') return '—';
  if (Array.isArray(value.to)) return value.to.length === 1 ? `subscriber ${value.to[0]}` : `${value.to.length} subscribers`;
  if (typeof value.to === 'string') return `subscriber ${value.to}`;
  if (value.topic) return `topic ${value.topic}`;
  if (value.segment) return `segment ${value.segment}`;
  if (value.where) return `where ${value.where}`;
  return '—';
}

export function shortToken(token) {
  if (!token) return '—';
  return token.length > 16 ? `${token.slice(0, 8)}…${token.slice(-6)}` : token;
}

/** A retention in words: whole days as days ("30 days", "1 day"), else hours ("36 h") or minutes. */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(Number(seconds))) return '—';
  if (seconds % 86400 === 0) return seconds === 86400 ? '1 day' : `${number(seconds / 86400)} days`;
  if (seconds % 3600 === 0) return `${number(seconds / 3600)} h`;
  return `${number(Math.round(seconds / 60))} min`;
}

export function bytes(count) {
  return count === 1 ? '1 byte' : `${number(count)} bytes`;
}
