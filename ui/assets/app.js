// app.js: the router, the token field and live updates. Pages are plain
// paths under /ui/ (the agent serves index.html for each), rendered by
// pages.js from the API.

import { follow, getToken, setToken } from './api.js';
import { tick } from './dom.js';
import * as pages from './pages.js';
import { fleetPage } from './fleet.js';
import { logsPage, deploymentPage, evalPage } from './detail.js';
import { fillActions, runPage } from './actions.js';

// route maps a path to the function that renders it.
function route(path, params) {
  const parts = path.replace(/^\/ui\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [kind, id] = parts;
  switch (kind) {
    case undefined:
    case 'jobs':
      // Typed HCL must survive the event stream: the run page is not redrawn.
      if (id === 'run' && parts.length === 2) return { nav: 'jobs', render: runPage, static: true };
      return { nav: 'jobs', render: id ? () => pages.jobPage(id, params.get('namespace') || '') : pages.jobsPage };
    case 'fleet':
      return { nav: 'fleet', render: fleetPage };
    case 'clients':
      return { nav: 'clients', render: id ? () => pages.nodePage(id) : pages.nodesPage };
    case 'allocations':
      if (id && parts[2] === 'logs' && parts[3]) return { nav: 'jobs', render: () => logsPage(id, parts[3]) };
      if (id) return { nav: 'jobs', render: () => pages.allocPage(id) };
      break;
    case 'deployments':
      if (id) return { nav: 'jobs', render: () => deploymentPage(id) };
      break;
    case 'evaluations':
      if (id) return { nav: 'jobs', render: () => evalPage(id) };
      break;
  }
  return { nav: '', render: async () => { throw new Error(`No page at ${path}`); } };
}

let current = null;
let generation = 0;

// render draws the current page; a slower earlier render that finishes
// after a later one is dropped, so the page never goes back in time.
async function render() {
  const mine = ++generation;
  const r = current;
  let el;
  try {
    el = await r.render();
    await fillActions(el);
  } catch (err) {
    el = pages.errorPage(err);
  }
  if (mine !== generation || r !== current) return;
  const app = document.getElementById('app');
  app.replaceChildren(el);
  app.dataset.rendered = String(mine);
}

function navigate() {
  current = route(window.location.pathname, new URLSearchParams(window.location.search));
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === current.nav);
  }
  render();
}

// refresh coalesces bursts of events (a reconnect touches many
// allocations at once) into one redraw.
let pending = null;
function refresh() {
  if (pending || (current && current.static)) return;
  pending = window.setTimeout(() => { pending = null; render(); }, 150);
}

function setupToken() {
  const input = document.getElementById('token-input');
  input.value = getToken();
  document.getElementById('token-save').addEventListener('click', () => {
    setToken(input.value.trim());
    // A new token may see other namespaces and may follow the stream
    // where the last could not: start over with it.
    window.location.reload();
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    setToken('');
    window.location.reload();
  });
}

function setupLinks() {
  document.addEventListener('click', (ev) => {
    const a = ev.target.closest('a[data-link], a[data-nav], a.brand');
    if (!a || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) return;
    ev.preventDefault();
    window.history.pushState(null, '', a.getAttribute('href'));
    navigate();
  });
  window.addEventListener('popstate', navigate);
}

function setLive(state) {
  const el = document.getElementById('live');
  el.dataset.state = state;
  el.textContent = state;
}

setupToken();
setupLinks();
navigate();
window.setInterval(tick, 1000);
follow(refresh, setLive);
