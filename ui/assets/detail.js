// detail.js: the read-only detail pages behind the job, allocation and
// node pages: a task's logs (followed as `nomad alloc logs -f` does), a
// deployment, an evaluation with its placement failures explained in the
// CLI's words, and the node page's drain and eligibility block.

import { get, getStream } from './api.js';
import {
  h, table, link, shortID, statusBadge, since, until, kv, duration,
  fromUnixNanos, fromRFC3339,
} from './dom.js';
import { jobHref, nodeHref, allocHref, allocTable } from './pages.js';
import { unreachable } from './checks.js';

const enc = encodeURIComponent;

export function evalHref(id) { return `/ui/evaluations/${enc(id)}`; }
export function deploymentHref(id) { return `/ui/deployments/${enc(id)}`; }
export function logsHref(allocID, task) { return `/ui/allocations/${enc(allocID)}/logs/${enc(task)}`; }

// ---- task logs ----

// tailBytes is how far back from the end a log view starts, and
// keepChars how much of it the page keeps: a task that writes all day
// must not grow the page without bound.
const tailBytes = 50 << 10;
const keepChars = 1 << 20;

// logView is the logs page being shown. The router redraws a page on
// every event; the view (its text, its stream, its switches) outlives
// those redraws, and only the allocation's header is drawn again.
let logView = null;

// logsPage shows a task's stdout or stderr from GET
// /v1/client/fs/logs/<alloc>: the last 50 KiB, then what the task writes
// while "Follow" is on.
export async function logsPage(allocID, task) {
  const a = await get(`/v1/allocation/${enc(allocID)}`);
  const key = a.ID + '\0' + task;
  if (!logView || logView.key !== key || !logView.root.isConnected) {
    if (logView) logView.close();
    logView = new LogView(a, task);
  }
  logView.update(a);
  return logView.root;
}

class LogView {
  constructor(alloc, task) {
    this.key = alloc.ID + '\0' + task;
    this.allocID = alloc.ID;
    this.task = task;
    this.type = 'stdout';
    this.follow = true;
    this.unknown = false;
    this.gen = 0;
    this.ctl = null;
    this.head = h('div', { class: 'logs-head' });
    this.stateEl = h('span', { class: 'logs-state muted' });
    this.out = h('pre', { id: 'logs-output', class: 'logs', 'data-type': this.type, 'data-state': 'loading' });
    this.typeButtons = ['stdout', 'stderr'].map((t) => {
      const b = h('button', { type: 'button', 'data-type': t, 'aria-pressed': String(t === this.type) }, t);
      b.addEventListener('click', () => this.setType(t));
      return b;
    });
    this.followBox = h('input', { type: 'checkbox', id: 'logs-follow', checked: true });
    this.followBox.addEventListener('change', () => this.setFollow(this.followBox.checked));
    this.root = h('section', { id: 'logs-page', 'data-alloc-id': alloc.ID, 'data-task': task },
      h('h1', null, 'Logs of ', h('span', { class: 'mono' }, task), ' in allocation ',
        link(allocHref(alloc.ID), h('span', { class: 'mono' }, shortID(alloc.ID)))),
      this.head,
      h('div', { class: 'logs-controls' },
        h('span', { class: 'switch', role: 'group', 'aria-label': 'stream' }, this.typeButtons),
        h('label', { for: 'logs-follow' }, this.followBox, ' Follow'),
        this.stateEl),
      this.out);
    // Leaving the page ends its stream.
    this.watch = window.setInterval(() => { if (!this.root.isConnected) this.close(); }, 1000);
  }

  // update redraws the allocation's header; while the allocation is
  // unknown its client cannot serve the log, so the view says so rather
  // than wait on a stream that cannot come, and starts again once the
  // client is back.
  update(a) {
    const unknown = a.ClientStatus === 'unknown';
    this.head.replaceChildren(kv([
      ['Job', link(jobHref(a.JobID, a.Namespace), a.JobID)], ['Task group', a.TaskGroup],
      ['Node', a.NodeID ? link(nodeHref(a.NodeID), a.NodeName || shortID(a.NodeID)) : '-'],
      ['Client status', statusBadge(a.ClientStatus)],
    ]), unknown ? unreachable('its logs are kept on it') : null);
    this.root.dataset.status = a.ClientStatus;
    if (unknown && !this.unknown) {
      this.unknown = true;
      this.stop('unreachable', 'client unreachable');
    } else if (!unknown && (this.unknown || this.gen === 0)) {
      this.unknown = false;
      this.start();
    }
  }

  setType(t) {
    if (t === this.type) return;
    this.type = t;
    this.out.dataset.type = t;
    for (const b of this.typeButtons) b.setAttribute('aria-pressed', String(b.dataset.type === t));
    if (!this.unknown) this.start();
  }

  // setFollow off closes the stream and keeps what it showed; on, the
  // view starts again from the tail and follows it.
  setFollow(on) {
    this.follow = on;
    if (this.unknown) return;
    if (on) this.start();
    else this.stop('paused', 'not following');
  }

  stop(state, text) {
    this.gen++;
    if (this.ctl) this.ctl.abort();
    this.ctl = null;
    this.setState(state, text);
  }

  close() {
    window.clearInterval(this.watch);
    this.stop('closed', '');
  }

  setState(state, text) {
    this.out.dataset.state = state;
    this.stateEl.textContent = text;
  }

  clear() {
    this.out.replaceChildren();
    this.chars = 0;
    delete this.out.dataset.trimmed;
  }

  async start() {
    this.stop('loading', 'loading…');
    const gen = this.gen;
    const ctl = new AbortController();
    this.ctl = ctl;
    this.clear();
    const q = new URLSearchParams({
      task: this.task, type: this.type, origin: 'end', offset: String(tailBytes), plain: 'false',
    });
    if (this.follow) q.set('follow', 'true');
    const decoder = new TextDecoder();
    try {
      const body = await getStream(`/v1/client/fs/logs/${enc(this.allocID)}?${q}`, ctl.signal);
      if (gen !== this.gen) return;
      this.setState(this.follow ? 'following' : 'loaded', this.follow ? 'following' : 'the last 50 KiB');
      await readFrames(body, (f) => {
        if (gen !== this.gen || !f.Data) return; // an empty frame is the stream's heartbeat
        this.append(decoder.decode(base64Bytes(f.Data), { stream: true }));
      });
      if (gen !== this.gen) return;
      this.setState(this.follow ? 'ended' : 'loaded', this.follow ? 'end of log: the allocation has stopped' : 'the last 50 KiB');
    } catch (err) {
      if (gen !== this.gen || ctl.signal.aborted) return;
      this.setState('error', `logs unavailable: ${err.message}`);
    }
  }

  // append adds text; past keepChars the oldest output goes, cut at a
  // line boundary, and the view says it did.
  append(text) {
    if (!text) return;
    const stick = this.out.scrollTop + this.out.clientHeight >= this.out.scrollHeight - 4;
    this.out.appendChild(document.createTextNode(text));
    this.chars += text.length;
    if (this.chars > keepChars * 1.25) {
      let kept = this.out.textContent.slice(-keepChars);
      const nl = kept.indexOf('\n');
      if (nl >= 0) kept = kept.slice(nl + 1);
      this.out.textContent = kept;
      this.chars = kept.length;
      this.out.dataset.trimmed = 'true';
      this.out.title = 'Earlier output dropped: the page keeps the last 1 MiB';
    }
    if (this.follow && stick) this.out.scrollTop = this.out.scrollHeight;
  }
}

// readFrames calls onFrame with each JSON object of a stream of them
// (the agent separates frames with newlines, upstream need not), until
// the stream ends.
async function readFrames(body, onFrame) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let i = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let start = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    for (; i < buf.length; i++) {
      const c = buf[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
      } else if (c === '"') {
        inString = true;
      } else if (c === '{') {
        if (depth++ === 0) start = i;
      } else if (c === '}' && --depth === 0) {
        const frame = JSON.parse(buf.slice(start, i + 1));
        if (frame.Error) throw new Error(frame.Error);
        onFrame(frame);
      }
    }
    if (depth === 0) {
      buf = '';
      i = 0;
    } else {
      buf = buf.slice(start);
      i -= start;
      start = 0;
    }
  }
}

function base64Bytes(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// ---- deployments ----

// deploymentsSection is the job page's: the newest deployment's groups
// and every deployment of the job (GET /v1/job/<id>/deployments).
export function deploymentsSection(deps) {
  const list = [...(deps || [])].sort((a, b) => b.CreateIndex - a.CreateIndex);
  if (!list.length) return h('div', { id: 'job-deployments' }, h('p', { class: 'muted' }, 'No deployments.'));
  const latest = list[0];
  return h('div', { id: 'job-deployments' },
    h('h3', null, 'Latest deployment ', link(deploymentHref(latest.ID), h('span', { class: 'mono' }, shortID(latest.ID))),
      ' ', statusBadge(latest.Status)),
    latest.StatusDescription ? h('p', { class: 'deployment-description' }, latest.StatusDescription) : null,
    h('div', { id: 'deployment-actions', 'data-deployment-id': latest.ID, 'data-namespace': latest.Namespace, 'data-status': latest.Status }),
    deploymentGroups(latest),
    list.length > 1 ? table({ class: 'deployments' }, ['ID', 'Job version', 'Status', 'Description'],
      list.map((d) => h('tr', { 'data-deployment-id': d.ID, 'data-status': d.Status },
        h('td', { class: 'mono', title: d.ID }, link(deploymentHref(d.ID), shortID(d.ID))),
        h('td', null, String(d.JobVersion)),
        h('td', null, statusBadge(d.Status)),
        h('td', null, d.StatusDescription || ''))), '') : null);
}

// deploymentGroups is a deployment's per-group progress, the columns of
// `nomad deployment status`; Promoted is N/A for a group without canaries.
function deploymentGroups(d) {
  const names = Object.keys(d.TaskGroups || {}).sort();
  return table({ class: 'deployment-groups', 'data-deployment-id': d.ID },
    ['Task group', 'Auto revert', 'Promoted', 'Desired', 'Canaries', 'Placed', 'Healthy', 'Unhealthy', 'Progress deadline'],
    names.map((g) => {
      const s = d.TaskGroups[g];
      const canaries = s.DesiredCanaries || 0;
      const deadline = fromRFC3339(s.RequireProgressBy);
      return h('tr', {
        'data-group': g, 'data-desired': s.DesiredTotal || 0, 'data-placed': s.PlacedAllocs || 0,
        'data-healthy': s.HealthyAllocs || 0, 'data-unhealthy': s.UnhealthyAllocs || 0,
        'data-canaries': canaries, 'data-promoted': canaries ? String(!!s.Promoted) : 'N/A',
      },
      h('td', null, g),
      h('td', null, String(!!s.AutoRevert)),
      h('td', null, canaries ? String(!!s.Promoted) : 'N/A'),
      h('td', { class: 'count', 'data-col': 'Desired' }, String(s.DesiredTotal || 0)),
      h('td', { class: 'count', 'data-col': 'Canaries' }, canaries ? `${(s.PlacedCanaries || []).length} of ${canaries} placed` : '0'),
      h('td', { class: 'count', 'data-col': 'Placed' }, String(s.PlacedAllocs || 0)),
      h('td', { class: 'count', 'data-col': 'Healthy' }, String(s.HealthyAllocs || 0)),
      h('td', { class: s.UnhealthyAllocs ? 'count count-failed' : 'count', 'data-col': 'Unhealthy' }, String(s.UnhealthyAllocs || 0)),
      h('td', null, deadline ? [until(deadline), s.ProgressDeadline ? h('span', { class: 'for' }, ` (${duration(s.ProgressDeadline / 1e6)} after progress)`) : null] : 'N/A'));
    }),
    'No task groups.');
}

// deploymentPage shows one deployment (GET /v1/deployment/<id>), its
// groups' progress and its allocations. #deployment-actions is where the
// UI's buttons for it go.
export async function deploymentPage(id) {
  const d = await get(`/v1/deployment/${enc(id)}`);
  let allocs = [];
  try { allocs = await get(`/v1/deployment/allocations/${enc(d.ID)}`); } catch (err) { /* shown without them */ }
  allocs.sort((a, b) => b.CreateIndex - a.CreateIndex);
  return h('section', { id: 'deployment-page', 'data-deployment-id': d.ID, 'data-status': d.Status },
    h('h1', null, 'Deployment ', h('span', { class: 'mono' }, shortID(d.ID)), ' ', statusBadge(d.Status)),
    kv([
      ['ID', h('span', { class: 'mono' }, d.ID)],
      ['Job', link(jobHref(d.JobID, d.Namespace), d.JobID)], ['Namespace', d.Namespace],
      ['Job version', String(d.JobVersion)], ['Status', d.Status],
      ['Description', d.StatusDescription || '-'],
      ['Created', since(fromUnixNanos(d.CreateTime))], ['Modified', since(fromUnixNanos(d.ModifyTime))],
    ]),
    h('div', { id: 'deployment-actions', 'data-deployment-id': d.ID, 'data-namespace': d.Namespace, 'data-status': d.Status }),
    h('h2', null, 'Task groups'),
    deploymentGroups(d),
    h('h2', null, 'Allocations'),
    allocTable(allocs, { showNode: true }));
}

// ---- evaluations ----

// goQuote renders s as Go's %q does for the strings the scheduler
// records (constraints, classes, dimensions): in double quotes, with
// quotes and backslashes escaped.
function goQuote(s) {
  return JSON.stringify(String(s));
}

function sortedKeys(m) {
  return Object.keys(m || {}).sort();
}

// placementLines explains one group's AllocMetric in the words `nomad
// eval status` and `nomad job status` print (formatAllocMetrics in
// command/format.go, the one wording source; the browser test compares
// this page against the CLI's output): which nodes were filtered out and
// by what, which ran out of which resource.
export function placementLines(m) {
  if (!m) return [];
  const out = [];
  if (!m.NodesEvaluated) out.push('No nodes were eligible for evaluation');
  for (const dc of sortedKeys(m.NodesAvailable)) {
    if (m.NodesAvailable[dc] === 0) out.push(`No nodes are available in datacenter ${goQuote(dc)}`);
  }
  for (const c of sortedKeys(m.ClassFiltered)) out.push(`Class ${goQuote(c)}: ${m.ClassFiltered[c]} nodes excluded by filter`);
  for (const c of sortedKeys(m.ConstraintFiltered)) out.push(`Constraint ${goQuote(c)}: ${m.ConstraintFiltered[c]} nodes excluded by filter`);
  if (m.NodesExhausted > 0) out.push(`Resources exhausted on ${m.NodesExhausted} nodes`);
  for (const c of sortedKeys(m.ClassExhausted)) out.push(`Class ${goQuote(c)} exhausted on ${m.ClassExhausted[c]} nodes`);
  for (const d of sortedKeys(m.DimensionExhausted)) out.push(`Dimension ${goQuote(d)} exhausted on ${m.DimensionExhausted[d]} nodes`);
  for (const q of m.QuotaExhausted || []) out.push(`Quota limit hit ${goQuote(q)}`);
  return out;
}

// placementFailures renders an evaluation's FailedTGAllocs, groups in
// name order, each headed as the CLI heads it.
export function placementFailures(failed) {
  return h('div', { id: 'placement-failures' }, sortedKeys(failed).map((g) => {
    const m = failed[g] || {};
    const n = 1 + (m.CoalescedFailures || 0);
    return h('div', { class: 'placement-failure', 'data-group': g },
      h('h3', null, `Task Group ${goQuote(g)} (failed to place ${n} ${n === 1 ? 'allocation' : 'allocations'}):`),
      h('ul', { class: 'reasons' }, placementLines(m).map((l) => h('li', null, l))),
      h('p', { class: 'for' }, `${m.NodesEvaluated || 0} nodes evaluated, ${m.NodesFiltered || 0} filtered, ${m.NodesExhausted || 0} exhausted`,
        m.NodesInPool ? `, ${m.NodesInPool} in the node pool` : ''));
  }));
}

// evalPage shows one evaluation (GET /v1/evaluation/<id>): what
// triggered it, how it ended, the evaluations before, after and blocked
// behind it, why it could not place what it could not, and what it placed.
export async function evalPage(id) {
  const e = await get(`/v1/evaluation/${enc(id)}`);
  let allocs = [];
  try { allocs = await get(`/v1/evaluation/${enc(e.ID)}/allocations`); } catch (err) { /* shown without them */ }
  allocs.sort((a, b) => b.CreateIndex - a.CreateIndex);
  const failed = e.FailedTGAllocs || {};
  const hasFailures = Object.keys(failed).length > 0;
  const evalLink = (eid) => (eid ? link(evalHref(eid), h('span', { class: 'mono', title: eid }, shortID(eid))) : '-');
  const queued = sortedKeys(e.QueuedAllocations).filter((g) => e.QueuedAllocations[g]).map((g) => `${g}: ${e.QueuedAllocations[g]}`);
  const waitUntil = fromRFC3339(e.WaitUntil);
  return h('section', { id: 'eval-page', 'data-eval-id': e.ID, 'data-status': e.Status, 'data-failures': String(hasFailures) },
    h('h1', null, 'Evaluation ', h('span', { class: 'mono' }, shortID(e.ID)), ' ', statusBadge(e.Status)),
    kv([
      ['ID', h('span', { class: 'mono' }, e.ID)],
      ['Job', link(jobHref(e.JobID, e.Namespace), e.JobID)], ['Namespace', e.Namespace],
      ['Type', e.Type], ['Triggered by', e.TriggeredBy], ['Priority', String(e.Priority)],
      ['Status', e.Status], ['Status description', e.StatusDescription || e.Status],
      e.NodeID ? ['Node', link(nodeHref(e.NodeID), h('span', { class: 'mono' }, shortID(e.NodeID)))] : null,
      e.DeploymentID ? ['Deployment', link(deploymentHref(e.DeploymentID), h('span', { class: 'mono' }, shortID(e.DeploymentID)))] : null,
      waitUntil ? ['Wait until', until(waitUntil)] : null,
      ['Previous eval', evalLink(e.PreviousEval)], ['Next eval', evalLink(e.NextEval)], ['Blocked eval', evalLink(e.BlockedEval)],
      queued.length ? ['Queued allocations', queued.join(', ')] : null,
      ['Placement failures', hasFailures ? 'true' : e.Status === 'pending' ? 'N/A - In Progress' : 'false'],
      ['Created', since(fromUnixNanos(e.CreateTime))], ['Modified', since(fromUnixNanos(e.ModifyTime))],
    ].filter(Boolean)),
    hasFailures ? [
      h('h2', null, 'Failed placements'),
      placementFailures(failed),
      e.BlockedEval ? h('p', { class: 'blocked-note' }, 'Evaluation ', evalLink(e.BlockedEval),
        ' waiting for additional capacity to place remainder') : null,
    ] : null,
    h('h2', null, 'Allocations placed'),
    allocTable(allocs, { showNode: true }));
}

// ---- nodes ----

// nodeDrain is the node page's drain and eligibility block, in the terms
// of `nomad node status`: eligibility, the drain in progress with its
// deadline and options, or the last drain; #node-actions is where the
// UI's buttons for the node go.
export function nodeDrain(n) {
  const d = n.DrainStrategy;
  const last = n.LastDrain;
  let drain;
  if (d) {
    const force = fromRFC3339(d.ForceDeadline);
    drain = [statusBadge('draining'), ' ',
      d.Deadline < 0 ? 'force drain' : force ? ['deadline ', until(force)] : 'no deadline',
      d.IgnoreSystemJobs ? '; ignoring system jobs' : '',
      fromRFC3339(d.StartedAt) ? ['; started ', since(fromRFC3339(d.StartedAt))] : null];
  } else {
    drain = n.Drain ? statusBadge('draining') : 'not draining';
  }
  const eligibility = n.SchedulingEligibility || 'eligible';
  return h('div', { id: 'node-drain', class: d || eligibility !== 'eligible' ? 'drain-block drain-alert' : 'drain-block', 'data-drain': String(!!(d || n.Drain)), 'data-eligibility': eligibility },
    kv([
      ['Eligibility', [statusBadge(eligibility), eligibility === 'ineligible' ? h('span', { class: 'for' }, ' no new allocations are placed here') : null]],
      ['Drain', h('span', { class: 'drain-status' }, drain)],
      last ? ['Last drain', h('span', { class: 'last-drain', 'data-status': last.Status || '' },
        last.Status || '-', ', started ', since(fromRFC3339(last.StartedAt)), ', updated ', since(fromRFC3339(last.UpdatedAt)),
        Object.keys(last.Meta || {}).length ? `; ${sortedKeys(last.Meta).map((k) => `${k}=${last.Meta[k]}`).join(', ')}` : '')] : null,
    ].filter(Boolean)),
    h('div', { id: 'node-actions', 'data-node-id': n.ID }));
}
