// actions.js: the buttons that change something, and the page that runs
// a job from its HCL. Every action is a request to the same /v1 API the
// CLI uses, sent with the page's ACL token, after a dialog that says
// what will happen and how to undo it. A refusal is shown as the API
// words it (a 403 names the capability the token lacks).
//
// Pages (pages.js, detail.js) stay read-only: fillActions adds the
// buttons to a rendered page before app.js puts it on screen. The dialog
// lives outside #app, so a redraw from the event stream does not close
// it.

import { get, send } from './api.js';
import { h, shortID } from './dom.js';
import { jobHref } from './pages.js';

const enc = encodeURIComponent;

function nsQuery(ns) {
  return ns ? `?namespace=${enc(ns)}` : '';
}

const terminal = new Set(['complete', 'failed', 'lost']);

// live counts the allocations that are meant to run and have not ended.
function live(allocs) {
  return allocs.filter((a) => a.DesiredStatus === 'run' && !terminal.has(a.ClientStatus)).length;
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many || one + 's'}`;
}

// fillActions adds the action buttons to page element el (not yet on
// screen). A page whose data cannot be read for them is shown without.
export async function fillActions(el) {
  if (!el) return;
  try {
    switch (el.id) {
      case 'jobs-page': jobsActions(el); break;
      case 'job-page': await jobActions(el); break;
      case 'alloc-page': await allocActions(el); break;
      case 'node-page': await nodeActions(el); break;
    }
    const dep = el.querySelector('#deployment-actions');
    if (dep) await deploymentActions(el, dep);
  } catch (err) {
    // The page itself says what it could not read; it simply has no buttons.
  }
}

// bar returns the container for a page's buttons: the one the page left
// (#node-actions, #deployment-actions) or a new one under its heading.
function bar(el, id) {
  let box = el.querySelector('#' + id);
  if (!box) {
    box = h('div', { id });
    const h1 = el.querySelector('h1');
    if (h1) h1.after(box); else el.prepend(box);
  }
  box.classList.add('actions');
  return box;
}

function button(action, label, onClick, attrs) {
  const b = h('button', { type: 'button', class: 'action', 'data-action': action, ...attrs }, label);
  b.addEventListener('click', onClick);
  return b;
}

function jobsActions(el) {
  const box = bar(el, 'jobs-actions');
  box.append(h('a', { href: '/ui/jobs/run', 'data-link': true, class: 'action', 'data-action': 'run-job' }, 'Run job'));
}

// ---- the confirmation dialog

// confirmAction opens the dialog: title, what (text or a function of the
// fields' values, kept current as they change), fields (inputs), the
// confirm button's label, and run(values), the request. On success the
// dialog closes and the result line says done(result); on failure the
// dialog stays open with the API's message.
function confirmAction({ action, title, what, fields, verb, run, done }) {
  let dlg = document.getElementById('action-dialog');
  if (dlg) dlg.remove();
  const inputs = fields || [];
  const whatEl = h('p', { class: 'action-what' });
  const errEl = h('p', { class: 'action-error', hidden: true });
  const values = () => Object.fromEntries(inputs.map((f) => [f.name, f.input.type === 'checkbox' ? f.input.checked : f.input.value]));
  const describe = () => whatEl.replaceChildren(typeof what === 'function' ? what(values()) : what);
  const cancel = h('button', { type: 'button', class: 'action-cancel' }, 'Cancel');
  const ok = h('button', { type: 'button', class: 'action-confirm' }, verb);
  dlg = h('dialog', { id: 'action-dialog', 'data-action': action },
    h('h2', null, title),
    whatEl,
    inputs.length ? h('div', { class: 'action-fields' }, inputs.map((f) => f.el)) : null,
    errEl,
    h('div', { class: 'action-buttons' }, cancel, ok));
  for (const f of inputs) f.input.addEventListener('input', describe);
  describe();
  cancel.addEventListener('click', () => dlg.close());
  dlg.addEventListener('close', () => dlg.remove());
  ok.addEventListener('click', async () => {
    ok.disabled = true; cancel.disabled = true;
    errEl.hidden = true;
    dlg.dataset.state = 'sending';
    try {
      const result = await run(values());
      dlg.dataset.state = 'done';
      dlg.close();
      flash(done ? done(result) : `${title}: done.`, false);
    } catch (err) {
      dlg.dataset.state = 'failed';
      errEl.textContent = err.message || String(err);
      errEl.hidden = false;
      ok.disabled = false; cancel.disabled = false;
    }
  });
  document.body.append(dlg);
  dlg.showModal();
  return dlg;
}

function field(name, label, attrs) {
  const input = h('input', { name, ...attrs });
  const el = attrs.type === 'checkbox'
    ? h('label', { class: 'action-check' }, input, ' ', label)
    : h('label', null, label, ' ', input);
  return { name, input, el };
}

// flash shows the outcome of the last action above the page, where a
// redraw of the page does not remove it.
function flash(text, failed) {
  let el = document.getElementById('action-result');
  if (!el) {
    el = h('div', { id: 'action-result', role: 'status' });
    document.getElementById('app').before(el);
  }
  el.className = failed ? 'action-result failed' : 'action-result';
  el.textContent = text;
  el.hidden = false;
}

function evalNote(r) {
  return r && r.EvalID ? ` Evaluation ${shortID(r.EvalID)}.` : '';
}

// ---- job page: stop, start, scale

async function jobActions(el) {
  const ns = new URLSearchParams(window.location.search).get('namespace') || '';
  const id = el.dataset.job;
  const q = nsQuery(ns);
  const base = `/v1/job/${enc(id)}`;
  const [job, allocs] = await Promise.all([get(base + q), get(`${base}/allocations${q}`)]);
  const box = bar(el, 'job-actions');
  const name = `job ${job.ID} in namespace ${job.Namespace}`;
  if (job.Stop) {
    box.append(button('start-job', 'Start', () => startJob(job, name)));
  } else {
    box.append(button('stop-job', 'Stop', () => stopJob(job, name, live(allocs))));
    for (const g of job.TaskGroups || []) {
      if (job.Type === 'system' || job.Type === 'sysbatch') continue;
      box.append(button('scale', `Scale ${g.Name}`, () => scaleGroup(job, g), { 'data-group': g.Name }));
    }
  }
}

function stopJob(job, name, n) {
  const purge = field('purge', 'Purge: remove the job at once instead of leaving it stopped', { type: 'checkbox' });
  confirmAction({
    action: 'stop-job', title: `Stop job ${job.ID}`, verb: 'Stop job', fields: [purge],
    what: (v) => `Stop ${name}: its ${plural(n, 'allocation')} stop. ` + (v.purge
      ? 'Purged, the job is removed from the servers at once: to run it again, submit its file (Run job).'
      : 'The job stays registered, stopped, until garbage collected: Start registers it again.'),
    run: (v) => send('DELETE', `/v1/job/${enc(job.ID)}?namespace=${enc(job.Namespace)}${v.purge ? '&purge=true' : ''}`),
    done: (r) => `Stopped ${name}.${evalNote(r)}`,
  });
}

// startJob registers the stopped job again without its stop flag, as
// upstream's UI does ("Start"): the servers make it a new version. The
// modify index it was read at is enforced, so a job changed meanwhile is
// not overwritten.
function startJob(job, name) {
  const groups = (job.TaskGroups || []).map((g) => `${g.Name} × ${g.Count}`).join(', ');
  confirmAction({
    action: 'start-job', title: `Start job ${job.ID}`, verb: 'Start job',
    what: `Start ${name} again: version ${job.Version} is registered again without its stop, as a new version, and the scheduler places its groups (${groups}). Stop stops it again.`,
    run: async () => {
      const fresh = await get(`/v1/job/${enc(job.ID)}?namespace=${enc(job.Namespace)}`);
      fresh.Stop = false;
      return send('POST', `/v1/jobs?namespace=${enc(job.Namespace)}`,
        { Job: fresh, EnforceIndex: true, JobModifyIndex: fresh.JobModifyIndex });
    },
    done: (r) => `Started ${name}.${evalNote(r)}`,
  });
}

function scaleGroup(job, g) {
  const count = field('count', 'Count', { type: 'number', min: 0, value: g.Count, required: true });
  const msg = field('message', 'Message', { type: 'text', value: 'scaled from the web UI', size: 40 });
  confirmAction({
    action: 'scale', title: `Scale group ${g.Name}`, verb: 'Scale', fields: [count, msg],
    what: (v) => `Scale group ${g.Name} of job ${job.ID} in namespace ${job.Namespace} from ${g.Count} to ${v.count}: ` +
      'the scheduler places or stops allocations to match. The servers refuse while a deployment of the job is running. Scale again to undo.',
    run: (v) => {
      const n = Number(v.count);
      if (v.count === '' || !Number.isInteger(n) || n < 0) throw new Error('Count must be a whole number, 0 or more.');
      return send('POST', `/v1/job/${enc(job.ID)}/scale?namespace=${enc(job.Namespace)}`,
        { Count: n, Target: { Job: job.ID, Group: g.Name }, Message: v.message });
    },
    done: (r) => `Scaled group ${g.Name} of job ${job.ID}.${evalNote(r)}`,
  });
}

// ---- allocation page: restart, stop

async function allocActions(el) {
  const a = await get(`/v1/allocation/${enc(el.dataset.allocId)}`);
  if (a.DesiredStatus !== 'run' || terminal.has(a.ClientStatus)) return;
  const box = bar(el, 'alloc-actions');
  const name = `allocation ${shortID(a.ID)} of job ${a.JobID} (group ${a.TaskGroup})`;
  const ns = enc(a.Namespace);
  if (a.ClientStatus === 'running') {
    box.append(button('restart-alloc', 'Restart', () => confirmAction({
      action: 'restart-alloc', title: `Restart allocation ${shortID(a.ID)}`, verb: 'Restart',
      what: `Restart every task of ${name} in place on node ${a.NodeName || shortID(a.NodeID)}: ` +
        'each task is killed and started again; the allocation keeps its ID and node. Not undone: it is a restart.',
      run: () => send('PUT', `/v1/client/allocation/${enc(a.ID)}/restart?namespace=${ns}`, { AllTasks: true }),
      done: () => `Restarted the tasks of ${name}.`,
    })));
  }
  box.append(button('stop-alloc', 'Stop', () => confirmAction({
    action: 'stop-alloc', title: `Stop allocation ${shortID(a.ID)}`, verb: 'Stop allocation',
    what: `Stop ${name}: the servers stop it and the scheduler places a replacement, on this node or another. ` +
      'The stopped allocation does not come back; its replacement takes its place.',
    run: () => send('POST', `/v1/allocation/${enc(a.ID)}/stop?namespace=${ns}`),
    done: (r) => `Stopped ${name}; a replacement is being placed.${evalNote(r)}`,
  })));
}

// ---- node page: drain, eligibility

async function nodeActions(el) {
  const id = el.dataset.nodeId;
  const [n, allocs] = await Promise.all([get(`/v1/node/${enc(id)}`), get(`/v1/node/${enc(id)}/allocations`)]);
  const box = bar(el, 'node-actions');
  const name = `node ${n.Name} (${shortID(n.ID)})`;
  const k = live(allocs);
  const path = (what) => `/v1/node/${enc(n.ID)}/${what}`;
  if (n.DrainStrategy) {
    const keep = field('keep', 'Keep it ineligible', { type: 'checkbox' });
    box.append(button('drain-disable', 'Stop drain', () => confirmAction({
      action: 'drain-disable', title: `Stop draining ${n.Name}`, verb: 'Stop drain', fields: [keep],
      what: (v) => `Stop draining ${name}: allocations not yet migrated stay where they are. ` +
        (v.keep ? 'The node stays ineligible for new allocations.' : 'The node becomes eligible for new allocations again.'),
      run: (v) => send('POST', path('drain'), { NodeID: n.ID, DrainSpec: null, MarkEligible: !v.keep }),
      done: () => `Stopped draining ${name}.`,
    })));
  } else {
    const deadline = field('deadline', 'Deadline', { type: 'text', value: '1h', size: 8 });
    const ignore = field('ignore', 'Ignore system jobs: leave their allocations running', { type: 'checkbox' });
    box.append(button('drain', 'Drain', () => confirmAction({
      action: 'drain', title: `Drain ${n.Name}`, verb: 'Drain node', fields: [deadline, ignore],
      what: (v) => `Drain ${name}: it becomes ineligible for new allocations and its ${plural(k, 'allocation')} ` +
        `migrate to other nodes, those still here after ${v.deadline || '?'} being stopped` +
        (v.ignore ? ' (system jobs\' allocations stay).' : '.') +
        ' Stop drain ends it; the node stays ineligible until made eligible.',
      run: (v) => {
        const ns = parseDuration(v.deadline);
        if (ns === null) throw new Error(`Deadline ${JSON.stringify(v.deadline)}: give a duration such as 1h, 30m or 90s.`);
        return send('POST', path('drain'), { NodeID: n.ID, DrainSpec: { Deadline: ns, IgnoreSystemJobs: v.ignore }, MarkEligible: false });
      },
      done: () => `Draining ${name}.`,
    })));
  }
  const eligible = n.SchedulingEligibility === 'eligible';
  const to = eligible ? 'ineligible' : 'eligible';
  box.append(button('eligibility', eligible ? 'Mark ineligible' : 'Mark eligible', () => confirmAction({
    action: 'eligibility', title: `Mark ${n.Name} ${to}`, verb: `Mark ${to}`,
    what: eligible
      ? `Mark ${name} ineligible: the scheduler places no new allocations on it; its ${plural(k, 'allocation')} keep running. Mark it eligible to undo.`
      : `Mark ${name} eligible: the scheduler may place allocations on it again. Mark it ineligible to undo.`,
    run: () => send('POST', path('eligibility'), { NodeID: n.ID, Eligibility: to }),
    done: () => `Marked ${name} ${to}.`,
  }), { 'data-to': to }));
}

// parseDuration reads a Go-style duration ("1h30m", "90s") into
// nanoseconds, or returns null.
export function parseDuration(s) {
  const m = /^\s*(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?\s*$/.exec(s || '');
  if (!m || !(m[1] || m[2] || m[3])) return null;
  const sec = Number(m[1] || 0) * 3600 + Number(m[2] || 0) * 60 + Number(m[3] || 0);
  return sec * 1e9;
}

// ---- deployment: promote, fail

async function deploymentActions(el, box) {
  const id = box.dataset.deploymentId || (box.closest('[data-deployment-id]') || {}).dataset?.deploymentId ||
    (el.dataset && el.dataset.deploymentId);
  if (!id) return;
  const d = await get(`/v1/deployment/${enc(id)}`);
  box.classList.add('actions');
  const active = d.Status === 'running' || d.Status === 'paused' || d.Status === 'pending';
  if (!active) return;
  const name = `deployment ${shortID(d.ID)} of job ${d.JobID} (version ${d.JobVersion})`;
  const base = (what) => `/v1/deployment/${what}/${enc(d.ID)}?namespace=${enc(d.Namespace)}`;
  const groups = Object.entries(d.TaskGroups || {});
  const unpromoted = groups.filter(([, s]) => s.DesiredCanaries > 0 && !s.Promoted);
  if (unpromoted.length) {
    const placed = unpromoted.map(([g, s]) => `${g}: ${(s.PlacedCanaries || []).length} of ${s.DesiredCanaries} canaries placed, ${s.HealthyAllocs} healthy`).join('; ');
    box.append(button('promote', 'Promote', () => confirmAction({
      action: 'promote', title: `Promote ${shortID(d.ID)}`, verb: 'Promote all',
      what: `Promote the canaries of every group of ${name} (${placed}): the servers then replace the remaining allocations of the old version. ` +
        'The servers refuse while a canary is not healthy. Not undone by a button: revert the job to its previous version (nomad job revert).',
      run: () => send('POST', base('promote'), { DeploymentID: d.ID, All: true }),
      done: (r) => `Promoted ${name}.${evalNote(r)}`,
    })));
  }
  box.append(button('fail', 'Fail', () => confirmAction({
    action: 'fail', title: `Fail ${shortID(d.ID)}`, verb: 'Fail deployment',
    what: `Fail ${name}: the servers stop it; if the job's update block has auto_revert, the job goes back to its last stable version. ` +
      'To try the version again, run the job again.',
    run: () => send('POST', base('fail'), { DeploymentID: d.ID }),
    done: (r) => `Failed ${name}.${r && r.RevertedJobVersion != null ? ` Reverted to version ${r.RevertedJobVersion}.` : ''}${evalNote(r)}`,
  })));
}

// ---- /ui/jobs/run: parse, plan, confirm, run

// runPage is the page that runs a job from HCL: parse it on the agent,
// plan it (the diff and the scheduler's dry run, as nomad job plan shows
// them), then register it with the plan's job modify index enforced, as
// nomad job run -check-index does. app.js does not redraw it on events,
// so what is typed stays.
export async function runPage() {
  const text = h('textarea', { id: 'run-hcl', rows: 18, cols: 90, spellcheck: 'false', placeholder: 'job "example" {\n  ...\n}' });
  const file = h('input', { id: 'run-file', type: 'file', accept: '.hcl,.nomad,text/plain' });
  const planBtn = h('button', { type: 'button', id: 'run-plan-button', class: 'action' }, 'Plan');
  const errEl = h('pre', { id: 'run-error', class: 'action-error', hidden: true });
  const planEl = h('div', { id: 'run-plan', hidden: true });
  file.addEventListener('change', async () => {
    if (file.files && file.files[0]) text.value = await file.files[0].text();
  });
  planBtn.addEventListener('click', async () => {
    errEl.hidden = true;
    planEl.hidden = true;
    planEl.replaceChildren();
    planBtn.disabled = true;
    try {
      const job = await send('POST', '/v1/jobs/parse', { JobHCL: text.value, Canonicalize: true });
      const ns = job.Namespace || 'default';
      const plan = await send('POST', `/v1/job/${enc(job.ID)}/plan?namespace=${enc(ns)}`, { Job: job, Diff: true });
      planEl.replaceChildren(...planView(job, ns, plan));
      planEl.hidden = false;
      planEl.dataset.jobId = job.ID;
    } catch (err) {
      errEl.textContent = err.message || String(err);
      errEl.hidden = false;
    } finally {
      planBtn.disabled = false;
    }
  });
  return h('section', { id: 'run-page' },
    h('h1', null, 'Run a job'),
    h('p', { class: 'muted' }, 'Paste a job file (HCL2) or pick one; Plan shows what the servers would do, Run submits it.'),
    h('div', { class: 'run-input' }, text),
    h('p', null, h('label', null, 'Job file ', file), ' ', planBtn),
    errEl,
    planEl);
}

function planView(job, ns, plan) {
  const updates = (plan.Annotations && plan.Annotations.DesiredTGUpdates) || {};
  const summary = Object.keys(updates).sort().map((g) => `${g}: ${updateWords(updates[g]) || 'no change'}`).join('; ');
  const runBtn = h('button', { type: 'button', id: 'run-submit', class: 'action', 'data-action': 'run-job' }, 'Run');
  runBtn.addEventListener('click', () => confirmAction({
    action: 'run-job', title: `Run job ${job.ID}`, verb: 'Run job',
    what: `Run job ${job.ID} in namespace ${ns} as planned (${summary || 'no groups'}). ` +
      `The servers refuse it if the job changed since the plan (job modify index ${plan.JobModifyIndex}): then plan again. ` +
      'To undo, stop the job, or revert it to its previous version (nomad job revert).',
    run: () => send('POST', `/v1/jobs?namespace=${enc(ns)}`, { Job: job, EnforceIndex: true, JobModifyIndex: plan.JobModifyIndex }),
    done: (r) => `Submitted job ${job.ID}.${evalNote(r)}`,
  }).addEventListener('close', (ev) => {
    if (ev.target.dataset.state !== 'done') return;
    const href = jobHref(job.ID, ns);
    window.history.pushState(null, '', href);
    window.dispatchEvent(new PopStateEvent('popstate'));
  }));
  const out = [
    h('h2', null, 'Plan'),
    plan.Diff ? h('pre', { id: 'run-diff', class: 'plan-diff' }, diffText(plan.Diff)) : null,
    h('h3', null, 'Scheduler dry-run'),
    h('pre', { id: 'run-dryrun', class: 'plan-dryrun' }, dryRunText(plan.FailedTGAllocs)),
  ];
  if (plan.Warnings) out.push(h('pre', { class: 'warn' }, 'Job Warnings:\n' + plan.Warnings));
  out.push(h('p', { id: 'run-index' }, `Job Modify Index: ${plan.JobModifyIndex}. Run submits the job with it (as nomad job run -check-index), so a job changed since this plan is refused.`));
  out.push(h('p', null, runBtn));
  return out.filter(Boolean);
}

// updateWords is a group's planned changes in nomad job plan's words.
function updateWords(u) {
  const kinds = [['Place', 'create'], ['Stop', 'destroy'], ['Migrate', 'migrate'], ['Canary', 'canary'],
    ['InPlaceUpdate', 'in-place update'], ['DestructiveUpdate', 'create/destroy update'], ['Ignore', 'ignore']];
  return kinds.filter(([k]) => u[k] > 0).map(([k, w]) => `${u[k]} ${w}`).join(', ');
}

// diffText renders a job diff as nomad job plan prints it (not verbose).
export function diffText(d) {
  const lines = [];
  const line = (indent, s) => lines.push(' '.repeat(indent) + s);
  const marker = (t) => ({ Added: '+ ', Deleted: '- ', Edited: '+/- ' })[t] || '';
  const q = JSON.stringify;
  const fields = (indent, fs, all) => {
    for (const f of fs || []) {
      const note = f.Annotations && f.Annotations.length ? ` (${f.Annotations.join(', ')})` : '';
      if (f.Type === 'Edited') line(indent, `+/- ${f.Name}: ${q(f.Old)} => ${q(f.New)}${note}`);
      else if (f.Type === 'Added') line(indent, `+ ${f.Name}: ${q(f.New)}${note}`);
      else if (f.Type === 'Deleted') line(indent, `- ${f.Name}: ${q(f.Old)}${note}`);
      else if (all) line(indent, `  ${f.Name}: ${q(f.New)}${note}`);
    }
  };
  const objects = (indent, os) => {
    for (const o of os || []) {
      line(indent, `${marker(o.Type)}${o.Name} {`);
      fields(indent + 2, o.Fields, true);
      objects(indent + 2, o.Objects);
      line(indent, '}');
    }
  };
  line(0, `${marker(d.Type)}Job: ${q(d.ID)}`);
  fields(2, d.Fields, false);
  objects(2, d.Objects);
  for (const g of d.TaskGroups || []) {
    const updates = formatUpdates(g.Updates);
    if (g.Type === 'None' && !updates) continue;
    line(0, `${marker(g.Type)}Task Group: ${q(g.Name)}${updates}`);
    fields(2, g.Fields, false);
    objects(2, g.Objects);
    for (const t of g.Tasks || []) {
      if (t.Type === 'None') continue;
      const note = t.Annotations && t.Annotations.length ? ` (${t.Annotations.join(', ')})` : '';
      line(2, `${marker(t.Type)}Task: ${q(t.Name)}${note}`);
      fields(4, t.Fields, false);
      objects(4, t.Objects);
    }
  }
  return lines.join('\n');
}

function formatUpdates(u) {
  if (!u) return '';
  const order = ['create', 'destroy', 'migrate', 'canary', 'in-place update', 'create/destroy update', 'ignore'];
  const keys = [...order, ...Object.keys(u).filter((k) => !order.includes(k)).sort()];
  const parts = keys.filter((k) => u[k] > 0).map((k) => `${u[k]} ${k}`);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

// dryRunText is the scheduler's dry run as nomad job plan words it.
function dryRunText(failed) {
  const groups = Object.keys(failed || {}).sort();
  if (!groups.length) return '- All tasks successfully allocated.';
  const out = ['- WARNING: Failed to place all allocations.'];
  const sorted = (o) => Object.keys(o || {}).sort();
  for (const g of groups) {
    const m = failed[g] || {};
    const n = 1 + (m.CoalescedFailures || 0);
    const line = (s) => out.push('    * ' + s);
    out.push(`  Task Group ${JSON.stringify(g)} (failed to place ${plural(n, 'allocation')}):`);
    if (!m.NodesEvaluated) line('No nodes were eligible for evaluation');
    for (const dc of sorted(m.NodesAvailable)) if (!m.NodesAvailable[dc]) line(`No nodes are available in datacenter ${JSON.stringify(dc)}`);
    for (const c of sorted(m.ClassFiltered)) line(`Class ${JSON.stringify(c)}: ${m.ClassFiltered[c]} nodes excluded by filter`);
    for (const c of sorted(m.ConstraintFiltered)) line(`Constraint ${JSON.stringify(c)}: ${m.ConstraintFiltered[c]} nodes excluded by filter`);
    if (m.NodesExhausted > 0) line(`Resources exhausted on ${m.NodesExhausted} nodes`);
    for (const c of sorted(m.ClassExhausted)) line(`Class ${JSON.stringify(c)} exhausted on ${m.ClassExhausted[c]} nodes`);
    for (const d of sorted(m.DimensionExhausted)) line(`Dimension ${JSON.stringify(d)} exhausted on ${m.DimensionExhausted[d]} nodes`);
  }
  return out.join('\n');
}
