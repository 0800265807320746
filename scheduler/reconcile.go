package scheduler

import (
	"sort"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ReconcilerInput is everything the reconciler decides from. It reads no
// state and no clock: Now is the server time of this evaluation.
type ReconcilerInput struct {
	// Job is the newest version of the job; nil when it was purged.
	Job *structs.Job
	// Allocs are all of the job's allocations, any version, any status.
	Allocs []*structs.Allocation
	// TaintedNodes holds the nodes of Allocs that are down, disconnected,
	// draining or ineligible; a nil value is a node that no longer exists.
	TaintedNodes map[string]*structs.Node
	EvalID       string
	EvalPriority int
	Now          time.Time
	// Deployment is the job's latest deployment, any version; nil when it
	// has none.
	Deployment *structs.Deployment

	// SiteHeldNodes are the nodes whose unknown allocations a declared
	// site outage keeps from being replaced (see "Site outages"), each
	// with its site's name.
	SiteHeldNodes map[string]string

	// MemoryOversubscription is the operator's switch: without it, the
	// allocations the reconciler updates in place carry no memory_max.
	MemoryOversubscription bool
}

// ReconcileResults is what the reconciler wants done: one GroupResults
// per group, in name order. The generic scheduler turns it into a plan and
// follow-up evaluations.
type ReconcileResults struct {
	Groups []*GroupResults
	// Deployment is a deployment to create with the plan; ActiveDeployment
	// the one new and updated allocations of deploying groups join (the
	// same, or the stored one). DeploymentUpdates cancel older ones.
	Deployment        *structs.Deployment
	ActiveDeployment  *structs.Deployment
	DeploymentUpdates []*structs.DeploymentStatusUpdate
}

// DesiredTGUpdates counts the decisions per group, for plan annotations
// and `job plan`.
func (r ReconcileResults) DesiredTGUpdates() map[string]*structs.DesiredUpdates {
	out := make(map[string]*structs.DesiredUpdates, len(r.Groups))
	for _, g := range r.Groups {
		out[g.Name] = g.DesiredUpdates()
	}
	return out
}

// placementRequest asks for one new allocation of a group or, when
// missing is set, for that many new instances under the lowest free names
// of names. The names are taken only as allocations are placed, so that a
// group far larger than the cluster costs what fits, not its count.
type placementRequest struct {
	name      string
	taskGroup *structs.TaskGroup
	missing   int
	names     *nameIndex
	// previousAlloc is the allocation this one replaces, if any.
	previousAlloc *structs.Allocation
	// reschedule extends previousAlloc's reschedule tracker by an attempt
	// that waited rescheduleDelay.
	reschedule      bool
	rescheduleDelay time.Duration
	// stopPrevious stops previousAlloc with stopDesc, in the same plan and
	// only if the replacement is placed: a workload is never stopped for a
	// replacement that finds no node.
	stopPrevious bool
	stopDesc     string
	// withdrawStop: previousAlloc's stop is among the reconciler's stops
	// already (a failed allocation stopped on its return, reconnectFailed)
	// and is withdrawn if the replacement finds no node, as stopPrevious's
	// is never made: the failed allocation stays desired run, and the
	// evaluation that finds a node reschedules it, its history carried on.
	withdrawStop bool
	// keepPrevious leaves previousAlloc running (an unknown original; see "Disconnecting allocations" in docs/concepts/disconnected-clients.md):
	// the scheduler only records the replacement as its NextAllocation.
	keepPrevious bool
	// standsFor is the unknown allocation whose chain the request goes on
	// from an ended replacement (continueChain): like a kept previous one,
	// it stands for the instance again if the request is dropped.
	standsFor *structs.Allocation
	lost      bool
	// migrate moves previousAlloc off a draining node, or away from where
	// an operator stopped it.
	migrate bool
	// canary places a canary of the current deployment.
	canary bool
}

// stopRequest asks to stop one allocation.
type stopRequest struct {
	alloc             *structs.Allocation
	statusDescription string
	// clientStatus, when set, overrides the client status (lost, failed).
	clientStatus   string
	followupEvalID string
	// migrate stops an allocation a drain or an operator moves.
	migrate bool
}

// Reconcile compares the job with its allocations and returns what must
// change. It is a pure function of its input.
func Reconcile(in ReconcilerInput) ReconcileResults {
	r := &reconciler{in: in}
	r.ds = r.newDeployState()
	groups := byTaskGroup(in.Allocs)
	if in.Job != nil {
		for _, tg := range in.Job.TaskGroups {
			if _, ok := groups[tg.Name]; !ok {
				groups[tg.Name] = allocSet{}
			}
		}
	}
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	sort.Strings(names)
	var res ReconcileResults
	for _, name := range names {
		res.Groups = append(res.Groups, r.computeGroup(name, groups[name]))
	}
	if in.Job != nil {
		r.ds.finish(&res, in.Job)
	}
	return res
}

type reconciler struct {
	in ReconcilerInput
	ds *deployState
}

func (r *reconciler) isBatch() bool {
	return r.in.Job != nil && r.in.Job.Type == structs.JobTypeBatch
}

// groupState is the working state of one group while it is reconciled.
type groupState struct {
	decisions
	tg *structs.TaskGroup
	// all are the group's allocations; ignoreOldBatch narrows them.
	all allocSet
	// c is every allocation's taint class, resched the untainted failed
	// ones to replace now or later (classify).
	c       taintedSets
	resched rescheduleSets
	// standby are the unknown allocations another member of their chain
	// stands in for, and those marked unknown now (disconnect).
	standby allocSet
	// keep is counted toward the group: it holds what stays in place.
	keep allocSet
	// replacements are 1:1 replacements of allocations not in keep
	// (migrate, reschedule, destructive); each counts as one.
	replacements []placementRequest
	destructive  []placementRequest
	// gone are allocations stopped as lost, failed or unreachable whose names and
	// history the next placements take over.
	gone []*structs.Allocation
	// successors maps an allocation to those that replaced it.
	successors map[string][]*structs.Allocation
	// chains are the group's replacement chains, each one instance.
	chains chainSet
	// replaced holds the allocations another member of their chain stands
	// in for (chainSet.replaced).
	replaced map[string]bool
	// standIns stand for an unknown original: never stopped as excess.
	standIns allocSet
	// waiting are lost allocations that their client may still run until
	// it stops them itself (see "stop_on_client_after" in docs/concepts/disconnected-clients.md): they hold their
	// name and their place in the count until their replacement is due.
	waiting allocSet
	// gd is the group's part in the current deployment, nil when it does
	// not deploy; canaryPlace are its canaries to place.
	gd          *groupDeployment
	canaryPlace []placementRequest
}

func (g *groupState) results() *GroupResults {
	res := g.decisions.results(g.tg.Name, g.keep, append(g.replacements, g.canaryPlace...), g.destructive)
	if g.gd != nil && g.gd.ds.running() {
		res.DeploymentID = g.gd.ds.cur.ID
	}
	return res
}

// computeGroup reconciles one group: a stopped job or a removed group stops
// everything, else the group runs groupPhases in order.
func (r *reconciler) computeGroup(name string, all allocSet) *GroupResults {
	tg := r.in.Job.LookupTaskGroup(name)
	if r.in.Job.Stopped() || tg == nil {
		d := newDecisions()
		r.stopAll(&d, all)
		return d.results(name, nil, nil, nil)
	}
	g := r.newGroupState(tg, all)
	for _, p := range groupPhases {
		p.run(r, g)
	}
	return g.results()
}

// newGroupState is the state a group's phases start from: its
// allocations, no decisions, its part in the current deployment.
func (r *reconciler) newGroupState(tg *structs.TaskGroup, all allocSet) *groupState {
	return &groupState{decisions: newDecisions(), tg: tg, all: all, waiting: allocSet{}, gd: r.deploymentFor(r.ds, tg)}
}

// stopSuperseded stops the failed allocations, still desired run, that a
// newer member of their chain stands in for (chainSet.replaced): their
// successor was placed, and nothing else would ever stop them.
// Precondition: classify decided g.replaced and g.c.untainted.
func (r *reconciler) stopSuperseded(g *groupState) {
	for _, a := range g.c.untainted.sorted() {
		if waitsForReschedule(a) && g.replaced[a.ID] {
			r.stop(g, a, structs.AllocRescheduled, "")
		}
	}
}

// rescheduleNow replaces a failed or unknown allocation by a reschedule:
// the failed one is stopped when its replacement is placed; the unknown one
// keeps running until it reconnects or expires (see docs/concepts/disconnected-clients.md, "Disconnecting allocations").
func (r *reconciler) rescheduleNow(g *groupState, a *structs.Allocation) {
	req := placementRequest{
		name: a.Name, taskGroup: g.tg, previousAlloc: a, reschedule: true,
		rescheduleDelay: rescheduleDelay(a.LookupTaskGroup().ReschedulePolicy, a.RescheduleTracker),
	}
	if a.ClientStatus == structs.AllocClientStatusUnknown {
		req.keepPrevious = true
	} else {
		req.stopPrevious, req.stopDesc = true, structs.AllocRescheduled
	}
	g.replacements = append(g.replacements, req)
}

// rescheduleLater creates batched follow-up evaluations for allocations
// to replace later. tagAllocs records the evaluation on each allocation
// (FollowupEvalID) so that it is replaced when that evaluation runs and no
// second follow-up is created meanwhile.
func (r *reconciler) rescheduleLater(g *groupState, later []*delayedReschedule, tagAllocs bool) {
	if len(later) == 0 {
		return
	}
	evals, byAlloc := r.batchFollowups(later, structs.EvalTriggerRetryFailedAlloc)
	g.followups = append(g.followups, evals...)
	for _, l := range later {
		g.delayed[l.alloc.ID] = l.alloc
		if tagAllocs {
			upd := g.change(l.alloc)
			upd.FollowupEvalID = byAlloc[l.alloc.ID]
			g.tagged[upd.ID] = upd
		}
	}
}

// batchFollowups groups the delayed allocations into evaluations whose
// WaitUntil is the earliest time of each followupBatchWindow.
func (r *reconciler) batchFollowups(later []*delayedReschedule, trigger string) ([]*structs.Evaluation, map[string]string) {
	sorted := append([]*delayedReschedule(nil), later...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].at.Before(sorted[j].at) })
	var evals []*structs.Evaluation
	byAlloc := map[string]string{}
	var cur *structs.Evaluation
	for _, l := range sorted {
		if cur == nil || l.at.Sub(cur.WaitUntil) >= followupBatchWindow {
			cur = r.followupEval(trigger, l.at)
			evals = append(evals, cur)
		}
		byAlloc[l.alloc.ID] = cur.ID
	}
	return evals, byAlloc
}

func (r *reconciler) followupEval(trigger string, at time.Time) *structs.Evaluation {
	j := r.in.Job
	return &structs.Evaluation{
		ID:             structs.GenerateUUID(),
		Namespace:      j.Namespace,
		Priority:       r.in.EvalPriority,
		Type:           j.Type,
		TriggeredBy:    trigger,
		JobID:          j.ID,
		JobModifyIndex: j.JobModifyIndex,
		Status:         structs.EvalStatusPending,
		WaitUntil:      at,
		PreviousEval:   r.in.EvalID,
		CreateTime:     r.in.Now.UnixNano(),
		ModifyTime:     r.in.Now.UnixNano(),
	}
}

// computeUpdates moves kept allocations of an older job version to the
// current one: in place when only non-task fields changed, else by a
// destructive replacement with the same name. A failed one still counted
// (with its attempts used up, or waiting for an earlier follow-up) is
// replaced whatever changed: a new version is the operator's way out of a
// policy that allows no more attempts, as upstream, and the old copy runs
// nothing to update in place. One this evaluation tags for a follow-up is
// left to it: the follow-up places the current version.
// The update block limits them afterwards (limitUpdates).
// Precondition: scaleDown ran, so only what stays in g.keep is updated,
// and the follow-ups are tagged (g.delayed, deferFailed).
func (r *reconciler) computeUpdates(g *groupState) {
	outdated := g.keep.filter(func(a *structs.Allocation) bool {
		failed := waitsForReschedule(a) && g.delayed[a.ID] == nil
		return !r.sameVersion(a) && (!a.TerminalStatus() || failed)
	})
	for _, a := range outdated.sorted() {
		if tasksUpdated(a.Job, r.in.Job, g.tg.Name) || waitsForReschedule(a) {
			delete(g.keep, a.ID)
			g.destructive = append(g.destructive, placementRequest{
				name: a.Name, taskGroup: g.tg, previousAlloc: a,
				stopPrevious: true, stopDesc: structs.AllocUpdating,
			})
			continue
		}
		upd := g.change(a)
		upd.Job = r.in.Job
		upd.EvalID = r.in.EvalID
		upd.AllocatedResources = groupResources(g.tg, resourceOptions{memoryOversubscription: r.in.MemoryOversubscription})
		keepPorts(upd, a)
		g.keep[a.ID] = upd
		g.inplace[upd.ID] = upd
	}
}

// scaleDown stops the counted allocations beyond the group's count. A
// pending replacement is cancelled rather than placed and stopped; an
// unknown allocation is never chosen: it may be running and is resolved
// when it reconnects. Precondition: every phase that adds to g.keep or
// g.replacements ran before it (through holdCanaries), and no destructive
// update is decided yet (computeUpdates runs after).
func (r *reconciler) scaleDown(g *groupState) {
	excess := len(g.keep) + len(g.replacements) - g.tg.Count
	if excess <= 0 {
		return
	}
	// An unknown original being replaced goes back to standing for its
	// instance: placing its replacement only to stop a running allocation
	// would be churn.
	var kept []placementRequest
	for _, p := range g.replacements {
		if p.keepPrevious {
			g.keep[p.previousAlloc.ID] = p.previousAlloc
			continue
		}
		if p.standsFor != nil {
			g.keep[p.standsFor.ID] = p.standsFor
			continue
		}
		kept = append(kept, p)
	}
	g.replacements = kept
	names := newNameIndex(r.in.Job.ID, g.tg.Name, g.tg.Count, g.keep, requestsSet(g.replacements))
	behind := map[string]int{}
	candidates := g.keep.difference(g.standIns)
	for i, p := range g.replacements {
		behind[p.previousAlloc.ID] = i
		candidates[p.previousAlloc.ID] = p.previousAlloc
	}
	drop := map[int]bool{}
	for _, a := range names.stopOrder(candidates) {
		if excess == 0 {
			break
		}
		excess--
		names.release(a)
		if i, ok := behind[a.ID]; ok {
			drop[i] = true
		} else {
			delete(g.keep, a.ID)
		}
		r.stop(g, a, structs.AllocNotNeeded, "")
	}
	g.replacements = dropIndexes(g.replacements, drop)
}

// placeMissing places what the group lacks: first under the names (and
// as successors) of the allocations stopped as lost or failed, then under
// the lowest free names. Precondition: the last phase: g.keep,
// g.replacements, g.destructive and g.waiting are final.
func (r *reconciler) placeMissing(g *groupState) {
	missing := g.tg.Count - len(g.keep) - len(g.replacements) - len(g.destructive) - len(g.waiting)
	if missing <= 0 {
		return
	}
	names := newNameIndex(r.in.Job.ID, g.tg.Name, g.tg.Count, g.keep, requestsSet(g.replacements), requestsSet(g.destructive), g.waiting)
	for _, a := range g.gone {
		if missing == 0 {
			return
		}
		if !names.take(a) {
			continue
		}
		p := placementRequest{name: a.Name, taskGroup: g.tg, previousAlloc: a, lost: a.ClientStatus != structs.AllocClientStatusFailed}
		if a.ClientStatus == structs.AllocClientStatusFailed {
			// A failed original stopped on its return, its policy's
			// delay passed (reconnectFailed): a reschedule.
			p.reschedule, p.withdrawStop = true, true
			p.rescheduleDelay = rescheduleDelay(a.LookupTaskGroup().ReschedulePolicy, a.RescheduleTracker)
		}
		g.replacements = append(g.replacements, p)
		missing--
	}
	if missing > 0 {
		g.replacements = append(g.replacements, placementRequest{taskGroup: g.tg, missing: missing, names: names})
	}
}

// instances is the number of allocations the request asks for.
func (p placementRequest) instances() int {
	if p.names != nil {
		return p.missing
	}
	return 1
}

func dropIndexes(in []placementRequest, drop map[int]bool) []placementRequest {
	out := in[:0]
	for i, p := range in {
		if !drop[i] {
			out = append(out, p)
		}
	}
	return out
}

func requestsSet(reqs []placementRequest) allocSet {
	s := allocSet{}
	for _, p := range reqs {
		if p.previousAlloc != nil {
			s[p.previousAlloc.ID] = p.previousAlloc
		}
	}
	return s
}

// stopAll stops every live allocation of a stopped job or removed group.
// Unknown ones are stopped too: the client stops them when it returns (see docs/concepts/disconnected-clients.md, "Operator actions").
func (r *reconciler) stopAll(d *decisions, all allocSet) {
	desc := structs.AllocNotNeeded
	if r.in.Job.Stopped() {
		desc = structs.AllocJobStopped
	}
	for _, a := range all.sorted() {
		if a.TerminalStatus() {
			d.ignored[a.ID] = a
			continue
		}
		node, tainted := r.in.TaintedNodes[a.NodeID]
		gone := tainted && (node == nil || node.TerminalStatus())
		disconnected := tainted && node != nil && node.Status == structs.NodeStatusDisconnected
		if gone || (disconnected && !a.SupportsDisconnect()) {
			d.stop(stopRequest{alloc: a, statusDescription: structs.AllocLost, clientStatus: structs.AllocClientStatusLost})
			continue
		}
		d.stop(stopRequest{alloc: a, statusDescription: desc})
	}
}

// stop stops a with the description and, when set, the client status.
func (r *reconciler) stop(g *groupState, a *structs.Allocation, desc, clientStatus string) {
	g.decisions.stop(stopRequest{alloc: a, statusDescription: desc, clientStatus: clientStatus})
}

// heard reports whether the servers hear from a live allocation's client:
// it is not unknown, and its node is neither disconnected, down nor gone.
func (r *reconciler) heard(a *structs.Allocation) bool {
	return isLive(a) && r.reachable(a)
}

// reachable reports whether the servers hear from a's client, live or not:
// a is not unknown, and its node is neither disconnected, down nor gone.
func (r *reconciler) reachable(a *structs.Allocation) bool {
	if a.ClientStatus == structs.AllocClientStatusUnknown {
		return false
	}
	node, tainted := r.in.TaintedNodes[a.NodeID]
	return !tainted || (node != nil && !node.TerminalStatus() && node.Status != structs.NodeStatusDisconnected)
}

// sameVersion reports whether a runs the current job version.
func (r *reconciler) sameVersion(a *structs.Allocation) bool {
	return a.Job != nil && a.Job.Version == r.in.Job.Version && a.Job.JobModifyIndex == r.in.Job.JobModifyIndex
}
