// dom.js: building elements node by node, so no job name, task event or
// node attribute from the API is ever parsed as markup.

// h makes an element: attrs sets attributes (data-*, class, href...),
// and children are nodes, strings (as text) or arrays of either; null
// and false are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// table renders rows under a header; empty says what an empty table means.
export function table(attrs, head, rows, empty) {
  if (!rows.length) return h('p', { class: 'muted', ...attrs }, empty);
  return h('table', attrs,
    h('thead', null, h('tr', null, head.map((c) => h('th', null, c)))),
    h('tbody', null, rows));
}

// link is an in-app link: the router intercepts it, so no reload.
export function link(href, ...children) {
  return h('a', { href, 'data-link': true }, ...children);
}

export function shortID(id) {
  return id ? id.slice(0, 8) : '';
}

// statusBadge marks a status word; the class gives its colour and
// data-status lets a test (or a user's stylesheet) find it.
export function statusBadge(status, extra) {
  return h('span', { class: `badge status-${status || 'none'}`, 'data-status': status || '' }, status || '-', extra || null);
}

// since is an element that shows how long ago t (a Date) was, kept
// current by tick(); it shows the absolute time on hover.
export function since(t, prefix) {
  if (!t || Number.isNaN(t.getTime()) || t.getTime() <= 0) return h('span', { class: 'muted' }, '-');
  return h('time', { datetime: t.toISOString(), title: t.toLocaleString(), 'data-since': t.getTime(), 'data-prefix': prefix || '' },
    (prefix || '') + ago(t.getTime()));
}

// lasting is an element that shows how long it has been since t: "3m12s".
export function lasting(t) {
  return h('time', { datetime: t.toISOString(), title: 'since ' + t.toLocaleString(), 'data-since': t.getTime(), 'data-form': 'for' },
    duration(Date.now() - t.getTime()));
}

// until is an element that shows how long until t: "in 58m12s", or
// "passed" once it has; kept current by tick().
export function until(t) {
  return h('time', { datetime: t.toISOString(), title: t.toLocaleString(), 'data-since': t.getTime(), 'data-form': 'in' },
    inTime(t.getTime()));
}

function inTime(ms) {
  return ms > Date.now() ? 'in ' + duration(ms - Date.now()) : 'passed';
}

// tick refreshes every since(), lasting() and until() element on the page.
export function tick() {
  for (const el of document.querySelectorAll('[data-since]')) {
    const ms = Number(el.dataset.since);
    const form = el.dataset.form;
    el.textContent = form === 'for' ? duration(Date.now() - ms) : form === 'in' ? inTime(ms) : (el.dataset.prefix || '') + ago(ms);
  }
}

export function ago(ms) {
  return duration(Date.now() - ms) + ' ago';
}

// duration renders a span the way the CLI does: 45s, 3m12s, 2h5m, 3d4h.
export function duration(ms) {
  let s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400); s -= d * 86400;
  const hr = Math.floor(s / 3600); s -= hr * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return `${d}d${hr}h`;
  if (hr) return `${hr}h${m}m`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

// fromUnixSeconds, fromUnixNanos and fromRFC3339 turn the API's three
// time shapes into Dates.
export function fromUnixSeconds(s) { return s ? new Date(s * 1000) : null; }
export function fromUnixNanos(ns) { return ns ? new Date(Math.floor(ns / 1e6)) : null; }
export function fromRFC3339(s) {
  if (!s || s.startsWith('0001-')) return null;
  return new Date(s);
}

export function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}
