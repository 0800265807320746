// fleet.js: the fleet page (/ui/fleet), an edge operator's first look in
// an outage: which sites are cut off, since when, and what will happen to
// their workloads. It composes the /v1 API the other pages read; nothing
// here asks the servers for anything they do not already serve.

import { get } from './api.js';
import {
  h, table, link, shortID, statusBadge, since, until,
  fromUnixSeconds, fromUnixNanos, fromRFC3339,
} from './dom.js';
import { jobHref, nodeHref, allocHref, lastHeard, nodeStatus, details } from './pages.js';

const enc = encodeURIComponent;

// timelineMs is how far back the timeline reaches.
const timelineMs = 6 * 3600 * 1000;

// fetchers bounds the requests in flight, so a large outage (hundreds of
// disconnected nodes) does not flood the agent on every redraw.
const fetchers = 6;

// eventKinds names the node events of the disconnect lifecycle (the
// servers' texts: nomad/structs NodeEvent*, heartbeatEventMessage, the
// site outage messages), walking one node's events oldest first. The
// servers' "Node ready" does not say where the node came from: after a
// missed heartbeat it is the reconnect.
function eventKinds(events) {
  let away = false;
  return events.map((e) => {
    const m = e.Message || '';
    if (/heartbeat missed|status changed to (disconnected|down)/i.test(m)) { away = true; return 'disconnect'; }
    if (/^site outage/i.test(m)) return 'site-outage';
    if (/reconnected|reregistered|re-registered/i.test(m) || (away && /^node ready$|status changed to initializing/i.test(m))) {
      if (/ready|reregistered|re-registered/i.test(m)) away = false;
      return 'reconnect';
    }
    if (/^node ready$/i.test(m)) return 'ready';
    return null;
  });
}

// fleetPage shows the fleet by datacenter and node pool, the declared site
// outages, the disconnected nodes, their unknown allocations with their
// replacements, and a timeline of disconnects and reconnects.
export async function fleetPage() {
  const [nodes, pools] = await Promise.all([get('/v1/nodes'), get('/v1/node/pools')]);
  const outages = await siteOutages(pools);
  const from = Date.now() - timelineMs;
  // Only nodes that are away, or changed status within the timeline, have
  // anything to show beyond their list entry: read the rest of them only.
  const watched = nodes.filter((n) => n.Status !== 'ready' || n.StatusUpdatedAt * 1000 >= from);
  const detail = (await mapLimit(watched, async (n) => {
    try {
      const [node, allocs] = await Promise.all([get(`/v1/node/${enc(n.ID)}`), get(`/v1/node/${enc(n.ID)}/allocations`)]);
      return { node, allocs };
    } catch (err) {
      return null; // purged meanwhile: shown from the list alone
    }
  })).filter(Boolean);
  const byNode = Object.fromEntries(detail.map((d) => [d.node.ID, d]));
  const unknown = await unknownAllocs(detail, outages);
  nodes.sort((a, b) => a.Name.localeCompare(b.Name));
  const disconnected = nodes.filter((n) => n.Status === 'disconnected');
  return h('section', { id: 'fleet-page', 'data-disconnected': disconnected.length, 'data-unknown': unknown.length },
    h('h1', null, 'Fleet'),
    h('p', { class: disconnected.length ? 'warn' : 'muted', id: 'fleet-summary' },
      `${disconnected.length} of ${nodes.length} client nodes disconnected`,
      unknown.length ? `, ${unknown.length} allocations unknown` : '',
      outages.length ? `, ${outages.length} site outages declared` : '', '.'),
    h('h2', null, 'Datacenters'),
    tiles('datacenter', nodes, (n) => n.Datacenter, outages),
    h('h2', null, 'Node pools'),
    tiles('pool', nodes, (n) => n.NodePool || 'default', outages),
    h('h2', null, 'Site outages'),
    outageSection(pools, outages),
    h('h2', null, 'Disconnected nodes'),
    disconnectedTable(disconnected, byNode, unknown, outages),
    h('h2', null, 'Unknown allocations'),
    unknownTable(unknown),
    h('h2', null, 'Timeline ', h('span', { class: 'for' }, '(last 6 hours, newest first)')),
    timeline(detail, unknown, from));
}

// mapLimit is Promise.all(items.map(fn)) with at most `fetchers` running.
async function mapLimit(items, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(fetchers, items.length) }, worker));
  return out;
}

// siteOutages reads the outages declared for every pool's sites
// (GET /v1/node/pool/:name/site-outages). The built-in "all" pool holds
// no nodes of its own.
async function siteOutages(pools) {
  const lists = await mapLimit(pools.filter((p) => p.Name !== 'all'), async (p) => {
    try { return await get(`/v1/node/pool/${enc(p.Name)}/site-outages`); } catch (err) { return []; }
  });
  return lists.flat();
}

function covers(o, node) {
  return (node.NodePool || 'default') === o.Pool && (!o.Datacenter || o.Datacenter === node.Datacenter);
}

// siteName is how the servers name a site (structs SiteOutage.Site).
function siteName(o) {
  return o.Datacenter ? `${o.Datacenter} in node pool ${o.Pool}` : `node pool ${o.Pool}`;
}

// tiles shows one tile per datacenter (or pool) with its nodes' counts; a
// tile with a disconnected node, or in a declared outage, stands out.
function tiles(kind, nodes, keyOf, outages) {
  const groups = new Map();
  for (const n of nodes) {
    const k = keyOf(n);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(n);
  }
  if (!groups.size) return h('p', { class: 'muted' }, 'No client nodes.');
  return h('div', { class: 'tiles', 'data-kind': kind }, [...groups.keys()].sort().map((k) => {
    const ns = groups.get(k);
    const count = (f) => ns.filter(f).length;
    const c = {
      ready: count((n) => n.Status === 'ready'),
      disconnected: count((n) => n.Status === 'disconnected'),
      down: count((n) => n.Status === 'down'),
      initializing: count((n) => n.Status === 'initializing'),
      ineligible: count((n) => n.SchedulingEligibility === 'ineligible'),
      draining: count((n) => n.Drain),
    };
    const inOutage = outages.filter((o) => ns.some((n) => covers(o, n)) && (kind === 'pool' ? o.Pool === k : !o.Datacenter || o.Datacenter === k));
    const cls = ['tile', c.disconnected ? 'tile-alert' : '', !c.disconnected && c.down ? 'tile-down' : ''].filter(Boolean).join(' ');
    return h('div', {
      class: cls, 'data-kind': kind, 'data-name': k, 'data-ready': c.ready,
      'data-disconnected': c.disconnected, 'data-down': c.down, 'data-outage': inOutage.length ? 'declared' : null,
    },
    h('div', { class: 'tile-name' }, k, h('span', { class: 'for' }, ` · ${ns.length} ${ns.length === 1 ? 'node' : 'nodes'}`)),
    h('div', { class: 'tile-counts' },
      h('span', { class: 'tile-count status-ready', 'data-col': 'ready' }, h('b', null, String(c.ready)), ' ready'),
      h('span', { class: `tile-count${c.disconnected ? ' count-unknown' : ''}`, 'data-col': 'disconnected' }, h('b', null, String(c.disconnected)), ' disconnected'),
      h('span', { class: `tile-count${c.down ? ' count-lost' : ''}`, 'data-col': 'down' }, h('b', null, String(c.down)), ' down')),
    h('div', { class: 'tile-extra for' }, [
      c.initializing ? `${c.initializing} initializing` : null,
      c.ineligible ? `${c.ineligible} ineligible` : null,
      c.draining ? `${c.draining} draining` : null,
    ].filter(Boolean).join(' · ') || null),
    inOutage.length ? h('div', { class: 'note' }, 'site outage declared ', since(fromUnixNanos(inOutage[0].DeclaredAt))) : null);
  }));
}

// outageSection shows the declared outages; without any, which pools the
// servers watch for one (disconnect.site_outage on the pool).
function outageSection(pools, outages) {
  const watching = pools.filter((p) => p.Disconnect && p.Disconnect.SiteOutage);
  const rows = outages.map((o) => h('tr', { 'data-outage': o.ID, class: 'row-disconnected' },
    h('td', null, siteName(o)),
    h('td', null, since(fromUnixNanos(o.DeclaredAt))),
    h('td', null, `${o.Disconnected} of ${o.Nodes} nodes disconnected within ${dur(o.Window)}`),
    h('td', null, 'replacements of its unknown allocations are held until the outage clears or they are lost')));
  if (rows.length) return table({ class: 'outages' }, ['Site', 'Declared', 'Why', 'Effect'], rows, '');
  if (!watching.length) {
    return h('p', { class: 'muted', id: 'no-outages' }, 'No site outage declared. No node pool sets disconnect { site_outage }, so the servers do not watch for one.');
  }
  return h('p', { class: 'muted', id: 'no-outages' }, 'No site outage declared. The servers watch node pools ',
    watching.map((p) => {
      const s = p.Disconnect.SiteOutage;
      return `${p.Name} (${Math.round(s.Threshold * 100)}% of a ${s.Scope === 'pool' ? 'pool' : 'datacenter'}'s nodes, at least ${s.MinNodes}, within ${dur(s.Window)})`;
    }).join(', '), '.');
}

// dur renders a Go time.Duration (nanoseconds in JSON) as the CLI does.
function dur(ns) {
  let s = Math.round((ns || 0) / 1e9);
  const hr = Math.floor(s / 3600); s -= hr * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  return [hr ? `${hr}h` : '', m ? `${m}m` : '', s || (!hr && !m) ? `${s}s` : ''].join('');
}

function disconnectedTable(nodes, byNode, unknown, outages) {
  return table({ class: 'disconnected' }, ['Name', 'Datacenter', 'Node pool', 'Status', 'Last heard from', 'Unknown allocations', 'First window ends'],
    nodes.map((n) => {
      const mine = unknown.filter((u) => u.alloc.NodeID === n.ID);
      const ends = mine.map((u) => u.lostAt).filter(Boolean).sort((a, b) => a - b);
      const outage = outages.find((o) => covers(o, n));
      return h('tr', { 'data-node-id': n.ID, 'data-status': n.Status, class: 'row-disconnected' },
        h('td', null, link(nodeHref(n.ID), n.Name)),
        h('td', null, n.Datacenter),
        h('td', null, n.NodePool),
        h('td', null, nodeStatus(n), outage ? h('div', { class: 'note' }, 'in the site outage of ', siteName(outage)) : null),
        h('td', null, lastHeard(n)),
        h('td', { class: 'count', 'data-col': 'unknown' }, byNode[n.ID] ? String(mine.length) : '?'),
        h('td', null, ends.length ? until(ends[0]) : h('span', { class: 'muted' }, mine.length ? 'no window' : '-')));
    }),
    'No client node is disconnected.');
}

// unknownAllocs gathers the unknown allocations of the nodes read, each
// with its resolved disconnect policy (GET /v1/allocation/:id, the one the
// scheduler applies), when its window ends, and its replacement or why it
// has none.
async function unknownAllocs(detail, outages) {
  const list = detail.flatMap((d) => d.allocs.filter((a) => a.ClientStatus === 'unknown').map((a) => ({ a, node: d.node })));
  const evals = {};
  const evalsOf = (a) => {
    const key = `${a.Namespace}\0${a.JobID}`;
    if (!evals[key]) evals[key] = get(`/v1/job/${enc(a.JobID)}/evaluations?namespace=${enc(a.Namespace)}`).catch(() => []);
    return evals[key];
  };
  const out = await mapLimit(list, async ({ a, node }) => {
    let full = a;
    try { full = await get(`/v1/allocation/${enc(a.ID)}`); } catch (err) { /* shown from the node's copy */ }
    const policy = full.DisconnectPolicy || null;
    const unknownAt = unknownSince(full) || fromUnixSeconds(node.StatusUpdatedAt);
    const lostAt = policy && policy.LostAfter > 0 && unknownAt ? new Date(unknownAt.getTime() + policy.LostAfter / 1e6) : null;
    const u = { alloc: full, node, policy, unknownAt, lostAt, replacement: null, why: null, whyKind: null };
    if (full.NextAllocation) {
      u.replacement = await latestOf(full.NextAllocation);
      if (u.replacement) return u;
    }
    const outage = outages.find((o) => covers(o, node));
    if (policy && !policy.Replace) {
      u.whyKind = 'replace-false';
      u.why = 'replace = false: it waits for its node, and is replaced only once lost';
    } else if (outage) {
      u.whyKind = 'site-outage';
      u.why = `held by the site outage of ${siteName(outage)}: it waits for its node, and is replaced once lost or once the outage clears`;
    } else {
      const failed = failedPlacement(await evalsOf(full), full.TaskGroup, unknownAt);
      u.whyKind = failed ? 'placement-failed' : 'pending';
      u.why = failed || 'pending: the group\'s reschedule policy sets when it is replaced';
    }
    return u;
  });
  return out.sort((x, y) => (x.unknownAt || 0) - (y.unknownAt || 0) || x.alloc.ID.localeCompare(y.alloc.ID));
}

// latestOf follows a replacement chain (NextAllocation) to its newest
// member: the copy that serves the instance now.
async function latestOf(id) {
  let cur = null;
  for (let i = 0; id && i < 5; i++) {
    try { cur = await get(`/v1/allocation/${enc(id)}`); } catch (err) { break; }
    id = cur.NextAllocation;
  }
  return cur;
}

// unknownSince is when the servers marked the allocation unknown: its
// newest client status change (AllocStates), if that is "unknown". It is
// what the servers count the disconnect window from (structs
// Allocation.DisconnectTimeout).
export function unknownSince(a) {
  const states = a.AllocStates || [];
  for (let i = states.length - 1; i >= 0; i--) {
    const s = states[i];
    if (!s || s.Field !== 0) continue;
    return s.Value === 'unknown' ? fromRFC3339(s.Time) : null;
  }
  return null;
}

// failedPlacement describes the newest evaluation of the job, since the
// allocation became unknown, that could not place the group.
function failedPlacement(evals, group, after) {
  const floor = after ? after.getTime() * 1e6 - 5e9 : 0;
  const failed = evals.filter((e) => e.FailedTGAllocs && e.FailedTGAllocs[group] && (e.CreateTime || 0) >= floor)
    .sort((x, y) => y.CreateIndex - x.CreateIndex)[0];
  if (!failed) return null;
  const m = failed.FailedTGAllocs[group];
  const parts = [`${m.NodesEvaluated || 0} nodes evaluated`];
  if (m.NodesFiltered) parts.push(`${m.NodesFiltered} filtered`);
  if (m.NodesExhausted) parts.push(`${m.NodesExhausted} exhausted`);
  for (const [dim, n] of Object.entries(m.DimensionExhausted || {})) parts.push(`${dim}: ${n}`);
  const blocked = evals.some((e) => e.Status === 'blocked');
  return `placement failed (evaluation ${shortID(failed.ID)}: ${parts.join(', ')})${blocked ? '; a blocked evaluation waits for capacity' : ''}`;
}

function unknownTable(unknown) {
  return table({ class: 'unknown-allocs' }, ['ID', 'Job', 'Group', 'Node', 'Unknown since', 'Disconnect policy', 'Lost if still away', 'Replacement'],
    unknown.map((u) => {
      const a = u.alloc;
      const r = u.replacement;
      return h('tr', { 'data-alloc-id': a.ID, 'data-status': a.ClientStatus, 'data-replacement': r ? 'placed' : u.whyKind, class: 'row-unknown' },
        h('td', { class: 'mono', title: a.ID }, link(allocHref(a.ID), shortID(a.ID))),
        h('td', null, link(jobHref(a.JobID, a.Namespace), a.JobID)),
        h('td', null, a.TaskGroup),
        h('td', null, link(nodeHref(a.NodeID), a.NodeName || shortID(a.NodeID))),
        h('td', null, since(u.unknownAt)),
        h('td', { class: 'for' }, u.policy ? u.policy.Summary || '' : '-'),
        h('td', null, u.lostAt ? until(u.lostAt) : h('span', { class: 'muted' }, 'never: no window')),
        h('td', null, r
          ? [h('span', { class: 'mono', title: r.ID }, link(allocHref(r.ID), shortID(r.ID))), ' ', statusBadge(r.ClientStatus),
            ' on ', link(nodeHref(r.NodeID), r.NodeName || shortID(r.NodeID))]
          : h('span', { class: 'note' }, u.why)));
    }),
    'No allocation is unknown.');
}

// timeline merges, newest first, the disconnect lifecycle's node events,
// the allocations' server-observed status changes (AllocStates) and their
// reconnect decisions (ReconnectDecision), over the nodes read.
function timeline(detail, unknown, from) {
  const items = [];
  const names = {};
  for (const d of detail) for (const a of d.allocs) names[a.ID] = a;
  for (const u of unknown) if (u.replacement) names[u.replacement.ID] = u.replacement;
  const allocRef = (id) => (id ? link(allocHref(id), shortID(id)) : 'none');
  for (const d of detail) {
    const n = d.node;
    const events = n.Events || [];
    const kinds = eventKinds(events);
    for (const [i, e] of events.entries()) {
      const t = fromRFC3339(e.Timestamp);
      const kind = kinds[i];
      if (!kind || !t || t.getTime() < from) continue;
      items.push({ t, kind, el: [link(nodeHref(n.ID), n.Name), ': ', e.Message, e.Details && Object.keys(e.Details).length ? h('span', { class: 'for mono' }, ' ', details(e.Details)) : null] });
    }
  }
  const seen = new Set();
  const allocs = [...new Map([...detail.flatMap((d) => d.allocs), ...unknown.map((u) => u.alloc), ...unknown.map((u) => u.replacement).filter(Boolean)].map((a) => [a.ID, a])).values()];
  for (const a of allocs) {
    for (const s of a.AllocStates || []) {
      const t = s && s.Field === 0 ? fromRFC3339(s.Time) : null;
      if (!t || t.getTime() < from) continue;
      items.push({
        t, kind: s.Value === 'unknown' ? 'unknown' : 'status',
        el: ['allocation ', allocRef(a.ID), ` (${a.JobID}.${a.TaskGroup}) on ${a.NodeName || shortID(a.NodeID)}: `,
          s.Value === 'unknown' ? 'unknown, its node disconnected' : `${s.Value}, reported after its node reconnected`],
      });
    }
    const r = a.ReconnectDecision;
    const t = r && fromUnixNanos(r.Time);
    if (!t || t.getTime() < from) continue;
    const key = `${r.EvalID}\0${r.KeptAllocID}\0${r.StoppedAllocID}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const job = names[r.KeptAllocID] || names[r.StoppedAllocID] || a;
    items.push({
      t, kind: 'decision',
      el: [`reconnect decision (${job.JobID}.${job.TaskGroup}): kept `, allocRef(r.KeptAllocID), ', stopped ', allocRef(r.StoppedAllocID),
        ` by rule "${r.Rule}"`, r.Strategy ? ` (reconcile ${r.Strategy})` : '', r.EvalID ? h('span', { class: 'for' }, ` · evaluation ${shortID(r.EvalID)}`) : null],
    });
  }
  items.sort((x, y) => y.t - x.t);
  return table({ class: 'timeline' }, ['Time', 'What', ''],
    items.map((i) => h('tr', { 'data-kind': i.kind },
      h('td', null, since(i.t)),
      h('td', null, h('span', { class: `badge kind-${i.kind}` }, i.kind)),
      h('td', null, i.el))),
    'No disconnect, reconnect or reconnect decision in the last 6 hours.');
}
