// checks.js: an allocation's service checks as its client reports them
// (GET /v1/client/allocation/:id/checks, what `nomad alloc checks`
// prints). Check results are the client's and not in the event stream,
// so the section fetches them again every few seconds while it is shown.

import { get } from './api.js';
import { h, table, statusBadge, since, fromUnixSeconds } from './dom.js';

const pollMs = 5000;

// hasChecks reports whether the allocation's group or tasks define a
// service check: without one there is nothing to ask the client for.
export function hasChecks(alloc) {
  const tg = ((alloc.Job && alloc.Job.TaskGroups) || []).find((g) => g.Name === alloc.TaskGroup);
  if (!tg) return false;
  const services = [...(tg.Services || []), ...(tg.Tasks || []).flatMap((t) => t.Services || [])];
  return services.some((s) => (s.Checks || []).length > 0);
}

// checksSection returns the section's element and keeps it current until
// a redraw of the page replaces it. While the allocation is unknown its
// client cannot be asked: the section says so instead of waiting on it.
export function checksSection(alloc) {
  const box = h('div', { id: 'alloc-checks', 'data-state': 'loading' }, h('p', { class: 'muted' }, 'Loading checks…'));
  if (alloc.ClientStatus === 'unknown') {
    box.dataset.state = 'unreachable';
    box.replaceChildren(unreachable('check results are its to report'));
    return box;
  }
  const load = async () => {
    try {
      const res = await get(`/v1/client/allocation/${encodeURIComponent(alloc.ID)}/checks`);
      box.replaceChildren(checksTable(Object.values(res || {})));
      box.dataset.state = 'ok';
    } catch (err) {
      box.replaceChildren(h('p', { class: 'error-text' }, `Check results unavailable: ${err.message}`));
      box.dataset.state = 'error';
    }
  };
  const tick = async () => {
    if (!box.isConnected) return; // the page was redrawn or left
    await load();
    window.setTimeout(tick, pollMs);
  };
  load().then(() => window.setTimeout(tick, pollMs));
  return box;
}

function checksTable(results) {
  results.sort((a, b) => (a.Service + '\0' + a.Check).localeCompare(b.Service + '\0' + b.Check));
  return table({ class: 'checks' }, ['Service', 'Check', 'Task', 'Status', 'Mode', 'Last run', 'Output'],
    results.map((r) => h('tr', { 'data-check': r.Check, 'data-service': r.Service, 'data-status': r.Status },
      h('td', null, r.Service),
      h('td', null, r.Check),
      h('td', null, r.Task || '(group)'),
      h('td', null, statusBadge(r.Status), r.StatusCode ? h('span', { class: 'for' }, ` HTTP ${r.StatusCode}`) : null),
      h('td', null, r.Mode),
      h('td', null, since(fromUnixSeconds(r.Timestamp))),
      h('td', { class: 'mono' }, r.Output || ''))),
    'No check has run yet.');
}

// unreachable says that an unknown allocation's client cannot be asked
// for what (its check results, its logs) until it reconnects, where a
// page would otherwise wait on it.
export function unreachable(what) {
  return h('p', { class: 'muted unreachable' },
    `The client of this allocation cannot be reached, and ${what}: they show again when it reconnects.`);
}
