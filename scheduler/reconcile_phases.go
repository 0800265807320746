package scheduler

import (
	"slices"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// groupPhase is one step of reconciling a group: it reads what the
// earlier phases decided in the groupState and adds its own decisions.
type groupPhase struct {
	name string
	run  func(*reconciler, *groupState)
}

// groupPhases are the steps computeGroup runs on a group of a live job, in
// this order. Each phase's doc comment says what it needs the earlier
// phases to have decided (its precondition) and what it decides; the
// cheap preconditions are checked around every phase of every golden
// scenario by the tests (checkPhases), not here: this is the hot path. A fixed array of method expressions costs no allocation.
var groupPhases = [...]groupPhase{
	{"ignore-old-batch", (*reconciler).ignoreOldBatch},
	{"classify", (*reconciler).classify},
	{"stop-superseded", (*reconciler).stopSuperseded},
	{"set-aside-canaries", (*reconciler).setAsideDeployment},
	{"stop-lost", (*reconciler).stopUnreachable},
	{"reconnect", (*reconciler).resolveReconnecting},
	{"mark-disconnecting", (*reconciler).disconnect},
	{"operator-stops", (*reconciler).operatorStops},
	{"reschedule-now", (*reconciler).rescheduleFailed},
	{"revive-standby", (*reconciler).chooseStandIns},
	{"replace-unknown", (*reconciler).replaceUnknown},
	{"ignore-standby", (*reconciler).ignoreStandby},
	{"reschedule-later", (*reconciler).deferFailed},
	{"hold-canaries", (*reconciler).holdCanaries},
	{"scale-down", (*reconciler).scaleDown},
	{"updates", (*reconciler).computeUpdates},
	{"limit-updates", (*reconciler).limitToUpdateBlock},
	{"join-deployment", (*reconciler).enterDeployment},
	{"place-missing", (*reconciler).placeMissing},
}

// ignoreOldBatch sets aside, for a batch job, the finished allocations of
// an older version: they neither count nor need anything, the new version
// runs afresh. Precondition: none (the first phase); it narrows g.all for
// every later one.
func (r *reconciler) ignoreOldBatch(g *groupState) {
	if !r.isBatch() {
		return
	}
	old := g.all.filter(func(a *structs.Allocation) bool {
		return a.TerminalStatus() && !r.sameVersion(a)
	})
	g.ignore(old)
	g.all = g.all.difference(old)
}

// classify sorts the group's allocations once: their chains and who
// stands in for whom (g.chains, g.replaced, g.successors), one taint class
// each (g.c, filterByTainted; the ignored class is ignored), and among the
// untainted the failed ones to reschedule now or later (g.resched). What
// remains untainted is kept (g.keep). Precondition: g.all is final
// (ignoreOldBatch ran).
func (r *reconciler) classify(g *groupState) {
	g.chains = g.all.chains()
	g.replaced = g.chains.replaced(r.reachable)
	g.successors = g.all.successors()
	g.c = g.all.filterByTainted(taintFilter{now: r.in.Now, nodes: r.in.TaintedNodes, batch: r.isBatch(), replaced: g.replaced})
	g.ignore(g.c.ignore)
	g.resched = g.c.untainted.filterByRescheduleable(r.in.Now, r.in.EvalID, g.replaced)
	g.keep = g.resched.untainted
}

// setAsideDeployment stops the canaries of an older deployment and takes
// the current one's out of, or (promoted) its replaced allocations out of,
// the kept set (stopOldCanaries, setAsideCanaries). Precondition: classify
// decided g.keep.
func (r *reconciler) setAsideDeployment(g *groupState) {
	r.stopOldCanaries(g, r.ds)
	r.setAsideCanaries(g, g.gd, g.all)
}

// stopUnreachable stops the lost and the expired-unknown allocations as
// lost; the count replaces them if the group is short (see
// docs/concepts/disconnected-clients.md, "Disconnecting allocations"),
// once their client has stopped them where the group has it do so
// ("Client while disconnected"; awaitClientStop). Precondition: classify
// decided g.c.
func (r *reconciler) stopUnreachable(g *groupState) {
	r.stopLost(g, g.c.lost.union(g.c.expiring))
	r.awaitClientStop(g, g.c.ignore)
}

// resolveReconnecting resolves each returning chain to one survivor
// (reconcileReconnecting). Precondition: classify decided g.chains and
// g.c.reconnecting; the lost are stopped, so a chain's expired member is
// no candidate.
func (r *reconciler) resolveReconnecting(g *groupState) {
	r.reconcileReconnecting(g, g.c.reconnecting)
}

// disconnect marks the running allocations on disconnected nodes unknown
// (markDisconnecting); with the unknown ones already replaced they are the
// group's standby (g.standby). Precondition: classify decided
// g.c.disconnecting and g.c.standby.
func (r *reconciler) disconnect(g *groupState) {
	g.standby = g.c.standby.union(r.markDisconnecting(g, g.c.disconnecting))
}

// operatorStops stops what an operator stopped or a drain moves
// (stopByOperator), taking such allocations out of g.standby.
// Precondition: disconnect decided g.standby.
func (r *reconciler) operatorStops(g *groupState) {
	g.standby = r.stopByOperator(g, g.c.migrate, g.standby)
}

// rescheduleFailed replaces the failed allocations due now
// (rescheduleNow) and drops from the later ones those already stopped.
// Precondition: the reconnect phase ran: a failed replacement that gave
// way to its returning original is in g.stopped and is not rescheduled.
func (r *reconciler) rescheduleFailed(g *groupState) {
	for _, a := range g.resched.now.difference(g.stopped).sorted() {
		r.rescheduleNow(g, a)
	}
	g.resched.later = slices.DeleteFunc(g.resched.later, func(l *delayedReschedule) bool { return g.stopped[l.alloc.ID] != nil })
}

// chooseStandIns decides, chain by chain, who of g.standby stands for the
// instance (reviveStandby); they are g.standIns, never stopped as excess.
// Precondition: operatorStops decided g.standby.
func (r *reconciler) chooseStandIns(g *groupState) {
	g.standIns = r.reviveStandby(g, g.standby)
}

// ignoreStandby ignores the standby allocations that neither stand for
// their instance nor were marked disconnected. Precondition: chooseStandIns
// and replaceUnknown moved the ones that count into g.keep.
func (r *reconciler) ignoreStandby(g *groupState) {
	g.ignore(g.standby.difference(g.keep, g.disconnected))
}

// deferFailed gives the failed allocations to replace later their batched
// follow-up evaluations (rescheduleLater). Precondition: rescheduleFailed
// dropped the stopped ones from g.resched.later.
func (r *reconciler) deferFailed(g *groupState) {
	r.rescheduleLater(g, g.resched.later, true)
}

// limitToUpdateBlock holds back destructive updates beyond the update
// block (limitUpdates). Precondition: computeUpdates decided g.destructive.
func (r *reconciler) limitToUpdateBlock(g *groupState) {
	r.limitUpdates(g, g.gd)
}

// enterDeployment moves the group's in-place updates into the current
// deployment (joinDeployment). Precondition: computeUpdates decided
// g.inplace.
func (r *reconciler) enterDeployment(g *groupState) {
	r.joinDeployment(g, g.gd)
}
