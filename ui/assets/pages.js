// pages.js: one function per page. Each fetches what it shows and
// returns the page's element; app.js calls it again after every event
// that may change it.

import { get, APIError } from './api.js';
import {
  h, table, link, shortID, statusBadge, since, lasting, kv,
  fromUnixSeconds, fromUnixNanos, fromRFC3339,
} from './dom.js';
import { hasChecks, checksSection } from './checks.js';
import { deploymentsSection, nodeDrain, evalHref, logsHref } from './detail.js';

const enc = encodeURIComponent;

export const summaryColumns = ['Queued', 'Starting', 'Running', 'Failed', 'Complete', 'Lost', 'Unknown'];

function nsQuery(ns) {
  return ns ? `?namespace=${enc(ns)}` : '';
}

export function jobHref(id, ns) {
  return `/ui/jobs/${enc(id)}${ns && ns !== 'default' ? nsQuery(ns) : ''}`;
}

export function nodeHref(id) { return `/ui/clients/${enc(id)}`; }
export function allocHref(id) { return `/ui/allocations/${enc(id)}`; }

// summaryCells renders one group's counts; a non-zero Unknown or Lost is
// marked so a disconnected group stands out in a long list.
function summaryCells(s) {
  return summaryColumns.map((c) => {
    const n = (s && s[c]) || 0;
    const cls = n && (c === 'Unknown' || c === 'Lost' || c === 'Failed') ? `count count-${c.toLowerCase()}` : 'count';
    return h('td', { class: cls, 'data-col': c }, String(n));
  });
}

function groupRows(summary, jobID) {
  const groups = Object.keys((summary && summary.Summary) || {}).sort();
  return groups.map((g) => h('tr', { 'data-group': g, 'data-job': jobID },
    h('td', null, g), summaryCells(summary.Summary[g])));
}

// jobsPage lists every job the token may read, each with a row per group.
export async function jobsPage() {
  const jobs = await get('/v1/jobs?namespace=*');
  // Every namespace lists only what the token may read, which for a
  // missing or weak token is nothing: ask the default namespace, which
  // refuses such a token, so the page says so instead of "No jobs".
  if (!jobs.length) await get('/v1/jobs');
  jobs.sort((a, b) => (a.Namespace + a.ID).localeCompare(b.Namespace + b.ID));
  const rows = [];
  for (const j of jobs) {
    const groups = Object.keys((j.JobSummary && j.JobSummary.Summary) || {}).sort();
    const span = Math.max(groups.length, 1);
    const first = groups.length ? groups[0] : null;
    rows.push(h('tr', { 'data-job': j.ID, 'data-namespace': j.Namespace },
      h('td', { rowspan: span }, link(jobHref(j.ID, j.Namespace), j.ID)),
      h('td', { rowspan: span }, j.Namespace),
      h('td', { rowspan: span }, j.Type),
      h('td', { rowspan: span }, statusBadge(j.Status)),
      h('td', null, first || '-'),
      summaryCells(first ? j.JobSummary.Summary[first] : null)));
    for (const g of groups.slice(1)) {
      rows.push(h('tr', { 'data-job': j.ID, 'data-group': g },
        h('td', null, g), summaryCells(j.JobSummary.Summary[g])));
    }
  }
  return h('section', { id: 'jobs-page' },
    h('h1', null, 'Jobs'),
    table({ class: 'jobs' }, ['ID', 'Namespace', 'Type', 'Status', 'Group', ...summaryColumns], rows, 'No jobs.'));
}

// jobPage shows one job: its groups' summaries, its allocations (those on
// a disconnected node say since when) and its evaluations.
export async function jobPage(id, ns) {
  const q = nsQuery(ns);
  const base = `/v1/job/${enc(id)}`;
  const [job, summary, allocs, evals, deployments] = await Promise.all([
    get(base + q), get(`${base}/summary${q}`), get(`${base}/allocations${q}`), get(`${base}/evaluations${q}`),
    get(`${base}/deployments${q}`).catch(() => []),
  ]);
  const nodes = await nodesOf(allocs.filter((a) => a.ClientStatus === 'unknown'));
  allocs.sort((a, b) => b.CreateIndex - a.CreateIndex);
  evals.sort((a, b) => b.CreateIndex - a.CreateIndex);
  return h('section', { id: 'job-page', 'data-job': job.ID },
    h('h1', null, 'Job ', h('span', { class: 'mono' }, job.ID), ' ', statusBadge(job.Status)),
    kv([
      ['Namespace', job.Namespace], ['Type', job.Type], ['Priority', String(job.Priority)],
      ['Version', String(job.Version)], ['Datacenters', (job.Datacenters || []).join(', ')],
      ['Node pool', job.NodePool || 'default'], ['Submitted', since(fromUnixNanos(job.SubmitTime))],
    ]),
    h('h2', null, 'Task groups'),
    table({ class: 'groups' }, ['Group', ...summaryColumns], groupRows(summary, job.ID), 'No task groups.'),
    h('h2', null, 'Allocations'),
    allocTable(allocs, { nodes, showNode: true }),
    h('h2', null, 'Deployments'),
    deploymentsSection(deployments),
    h('h2', null, 'Evaluations'),
    table({ class: 'evals' }, ['ID', 'Priority', 'Triggered by', 'Status', 'Description', 'Modified'],
      evals.map((e) => h('tr', { 'data-eval-id': e.ID },
        h('td', { class: 'mono', title: e.ID }, link(evalHref(e.ID), shortID(e.ID))),
        h('td', null, String(e.Priority)),
        h('td', null, e.TriggeredBy),
        h('td', null, statusBadge(e.Status),
          Object.keys(e.FailedTGAllocs || {}).length ? h('span', { class: 'note failures' }, ' placement failures') : null),
        h('td', null, e.StatusDescription || ''),
        h('td', null, since(fromUnixNanos(e.ModifyTime))))),
      'No evaluations.'));
}

// nodesOf fetches the nodes of allocs, keyed by ID; a node that cannot be
// read (purged, or the token may not read nodes) is simply left out.
async function nodesOf(allocs) {
  const ids = [...new Set(allocs.map((a) => a.NodeID).filter(Boolean))];
  const out = {};
  await Promise.all(ids.map(async (id) => {
    try { out[id] = await get(`/v1/node/${enc(id)}`); } catch (err) { /* shown without it */ }
  }));
  return out;
}

// allocTable renders allocations. An unknown one is marked, and says when
// the servers marked its node disconnected: the node had missed its
// heartbeat deadline then, so that is the last the servers heard of it
// (to within one heartbeat TTL), and the task states shown are what the
// client last reported.
export function allocTable(allocs, { nodes, showNode, showJob }) {
  const head = ['ID', 'Task group', showJob ? 'Job' : null, showNode ? 'Node' : null, 'Desired', 'Status', 'Modified'].filter(Boolean);
  const rows = allocs.map((a) => {
    const unknown = a.ClientStatus === 'unknown';
    const node = nodes && nodes[a.NodeID];
    let note = null;
    if (unknown) {
      note = h('div', { class: 'note', 'data-node-heard': node ? node.Status : '' },
        node && node.Status !== 'ready'
          ? ['node ', node.Status, ' · ', lastHeard(node)]
          : 'node not heard from since its last report');
    }
    return h('tr', { 'data-alloc-id': a.ID, 'data-status': a.ClientStatus, class: unknown ? 'row-unknown' : null },
      h('td', { class: 'mono', title: a.ID }, link(allocHref(a.ID), shortID(a.ID))),
      h('td', null, a.TaskGroup),
      showJob ? h('td', null, link(jobHref(a.JobID, a.Namespace), a.JobID)) : null,
      showNode ? h('td', null, a.NodeID ? link(nodeHref(a.NodeID), a.NodeName || shortID(a.NodeID)) : '-') : null,
      h('td', null, a.DesiredStatus),
      h('td', null, statusBadge(a.ClientStatus), note),
      h('td', null, since(fromUnixNanos(a.ModifyTime))));
  });
  return table({ class: 'allocs' }, head, rows, 'No allocations.');
}

// lastHeard says when a node that is not ready was last heard from: the
// servers mark it disconnected (StatusUpdatedAt) when its heartbeat
// deadline passes, so its last heartbeat came at most one heartbeat TTL
// before that: "last heard from before 12:06:07 (2m ago)".
export function lastHeard(node) {
  const gone = fromUnixSeconds(node.StatusUpdatedAt);
  if (!gone) return h('span', { class: 'muted' }, 'last heard from: unknown');
  return h('span', { class: 'heard' }, 'last heard from before ',
    h('span', { class: 'abs' }, gone.toLocaleTimeString()), ' (', since(gone), ')');
}

// nodeStatus shows a node's status; a node that is not ready says for how
// long it has been so.
export function nodeStatus(n) {
  const el = statusBadge(n.Status);
  el.setAttribute('data-node-status', n.Status);
  const t = n.Status !== 'ready' ? fromUnixSeconds(n.StatusUpdatedAt) : null;
  return h('span', { class: 'node-status' }, el, t ? h('span', { class: 'for' }, ' for ', lasting(t)) : null);
}

// nodesPage lists the client nodes.
export async function nodesPage() {
  const nodes = await get('/v1/nodes');
  nodes.sort((a, b) => a.Name.localeCompare(b.Name));
  return h('section', { id: 'nodes-page' },
    h('h1', null, 'Clients'),
    table({ class: 'nodes' }, ['ID', 'Name', 'Node pool', 'Datacenter', 'Status', 'Eligibility', 'Drain', 'Version'],
      nodes.map((n) => h('tr', { 'data-node-id': n.ID, 'data-status': n.Status, class: n.Status !== 'ready' ? `row-${n.Status}` : null },
        h('td', { class: 'mono', title: n.ID }, link(nodeHref(n.ID), shortID(n.ID))),
        h('td', null, n.Name),
        h('td', null, n.NodePool),
        h('td', null, n.Datacenter),
        h('td', null, nodeStatus(n)),
        h('td', null, n.SchedulingEligibility),
        h('td', null, n.Drain ? 'draining' : 'no'),
        h('td', null, n.Version || ''))),
      'No client nodes.'));
}

// nodePage shows one node, its events (newest first) and allocations.
export async function nodePage(id) {
  const [n, allocs] = await Promise.all([get(`/v1/node/${enc(id)}`), get(`/v1/node/${enc(id)}/allocations`)]);
  allocs.sort((a, b) => b.CreateIndex - a.CreateIndex);
  const events = [...(n.Events || [])].reverse();
  const nodes = { [n.ID]: n };
  return h('section', { id: 'node-page', 'data-node-id': n.ID, 'data-status': n.Status },
    h('h1', null, 'Client ', h('span', { class: 'mono' }, n.Name), ' ', nodeStatus(n)),
    nodeDrain(n),
    kv([
      ['ID', h('span', { class: 'mono' }, n.ID)], ['Address', n.HTTPAddr || '-'],
      ['Datacenter', n.Datacenter], ['Node pool', n.NodePool], ['Class', n.NodeClass || '-'],
      ['Eligibility', n.SchedulingEligibility], ['Drain', n.Drain ? 'draining' : 'no'],
      ['Status description', n.StatusDescription || '-'],
      ['Status changed', since(fromUnixSeconds(n.StatusUpdatedAt))],
    ]),
    h('h2', null, 'Events'),
    table({ class: 'node-events' }, ['Time', 'Subsystem', 'Message', 'Details'],
      events.map((e) => h('tr', null,
        h('td', null, since(fromRFC3339(e.Timestamp))),
        h('td', null, e.Subsystem),
        h('td', null, e.Message),
        h('td', { class: 'mono' }, details(e.Details)))),
      'No events.'),
    h('h2', null, 'Allocations'),
    allocTable(allocs, { nodes, showJob: true }));
}

export function details(d) {
  return Object.entries(d || {}).sort().map(([k, v]) => `${k}: ${v}`).join(', ');
}

// allocPage shows an allocation, its service checks (checks.js) and,
// per task, its state and events.
export async function allocPage(id) {
  const a = await get(`/v1/allocation/${enc(id)}`);
  const unknown = a.ClientStatus === 'unknown';
  let node = null;
  if (a.NodeID) {
    try { node = await get(`/v1/node/${enc(a.NodeID)}`); } catch (err) { /* shown without it */ }
  }
  const tasks = Object.keys(a.TaskStates || {}).sort();
  return h('section', { id: 'alloc-page', 'data-alloc-id': a.ID, 'data-status': a.ClientStatus },
    h('h1', null, 'Allocation ', h('span', { class: 'mono' }, shortID(a.ID)), ' ', statusBadge(a.ClientStatus)),
    unknown ? h('p', { class: 'warn' },
      'The servers have not heard from this allocation\'s client since its node disconnected',
      node && node.Status !== 'ready' ? [' (', since(fromUnixSeconds(node.StatusUpdatedAt)), ')'] : null,
      '. The task states below are its last report.') : null,
    kv([
      ['ID', h('span', { class: 'mono' }, a.ID)], ['Name', a.Name],
      ['Job', link(jobHref(a.JobID, a.Namespace), a.JobID)], ['Task group', a.TaskGroup],
      ['Node', a.NodeID ? [link(nodeHref(a.NodeID), a.NodeName || shortID(a.NodeID)), node ? [' ', nodeStatus(node)] : null] : '-'],
      ['Desired', a.DesiredStatus + (a.DesiredDescription ? ` (${a.DesiredDescription})` : '')],
      ['Client status', a.ClientStatus + (a.ClientDescription ? ` (${a.ClientDescription})` : '')],
      ['Created', since(fromUnixNanos(a.CreateTime))], ['Modified', since(fromUnixNanos(a.ModifyTime))],
    ]),
    hasChecks(a) ? [h('h2', null, 'Checks'), checksSection(a)] : null,
    h('h2', null, 'Tasks'),
    tasks.length ? tasks.map((t) => taskSection(t, a.TaskStates[t], a.ID)) : h('p', { class: 'muted' }, 'No task has reported yet.'));
}

function taskSection(name, st, allocID) {
  const events = [...(st.Events || [])].reverse();
  return h('div', { class: 'task', 'data-task': name, 'data-state': st.State },
    h('h3', null, name, ' ', statusBadge(st.State), st.Failed ? h('span', { class: 'badge status-failed' }, 'failed') : null,
      ' ', h('span', { class: 'task-logs' }, link(logsHref(allocID, name), 'logs'))),
    kv([['Started', since(fromRFC3339(st.StartedAt))], ['Finished', since(fromRFC3339(st.FinishedAt))], ['Restarts', String(st.Restarts || 0)]]),
    table({ class: 'task-events' }, ['Time', 'Type', 'Description'],
      events.map((e) => h('tr', null,
        h('td', null, since(fromUnixNanos(e.Time))),
        h('td', null, e.Type),
        h('td', null, e.DisplayMessage || e.Message || e.DriverError || e.SetupError || ''))),
      'No events.'));
}

// errorPage says why a page cannot be shown, and what to do about a
// missing or weak token.
export function errorPage(err) {
  let hint = null;
  if (err instanceof APIError && err.status === 403) {
    hint = 'The agent refused this token (or the lack of one): set an ACL token with read access above.';
  } else if (err instanceof APIError && err.status === 404) {
    hint = 'Nothing by that ID: it may have been garbage collected.';
  }
  return h('section', { id: 'error-page' },
    h('h1', null, 'Cannot show this page'),
    h('p', { class: 'error-text' }, err.message || String(err)),
    hint ? h('p', null, hint) : null);
}
