package scheduler

import (
	"sort"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// systemDiff is what a group of a system job needs beyond the writes
// already in the plan: nodes to place on, and the unknown allocations
// whose disconnect window needs a follow-up evaluation.
type systemDiff struct {
	place []*structs.Node
	// previous maps a node to the allocation a new one there follows.
	previous map[string]*structs.Allocation
	timeouts []*delayedReschedule
	// updatesLeft is how many more destructive updates this evaluation
	// may make in the group (its update block's max_parallel), or -1 for
	// no limit; limited reports that one had to wait for the next batch.
	updatesLeft int
	limited     bool
}

// diffGroup decides the allocations of one group, node by node. The
// allocations are classified as the reconciler does (filterByTainted);
// what differs is that an allocation is never replaced on another node:
// a lost or expired one is stopped, and its node gets a new one only once
// it is ready again (see docs/concepts/disconnected-clients.md, "System
// and sysbatch jobs").
func (s *SystemScheduler) diffGroup(tg *structs.TaskGroup, set allocSet, tainted map[string]*structs.Node, nodes *readyNodes) systemDiff {
	d := systemDiff{previous: map[string]*structs.Allocation{}, updatesLeft: -1}
	if u := tg.Update; u.Rolling() {
		d.updatesLeft = u.MaxParallel
	}
	eligible := map[string]*structs.Node{}
	for _, n := range nodes.nodes {
		eligible[n.ID] = n
	}
	sets := set.filterByTainted(taintFilter{now: s.now, nodes: tainted, batch: s.sysbatch})
	for _, a := range sets.lost.union(sets.expiring).sorted() {
		s.plan.AppendStoppedAlloc(a, structs.AllocLost, structs.AllocClientStatusLost, "")
	}
	for _, a := range sets.migrate.sorted() {
		s.plan.AppendStoppedAlloc(a, structs.AllocMigrating, "", "")
	}
	live := sets.untainted.union(sets.standby).filterByTerminal()
	// done holds what ran to completion on a node: for sysbatch it is not
	// run again there until the job changes.
	done := sets.untainted.difference(live)
	for _, a := range sets.disconnecting.sorted() {
		upd := a.Copy()
		upd.ClientStatus = structs.AllocClientStatusUnknown
		upd.ClientDescription = structs.AllocUnknown
		upd.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, s.now)
		s.plan.AppendAlloc(upd)
		if expiry, ok := upd.DisconnectTimeout(); ok {
			d.timeouts = append(d.timeouts, &delayedReschedule{alloc: upd, at: expiry})
		}
		live[upd.ID] = upd
	}
	for _, a := range sets.reconnecting.sorted() {
		if kept := s.reconnect(a); kept != nil {
			if kept.TerminalStatus() {
				done[kept.ID] = kept
			} else {
				live[kept.ID] = kept
			}
		}
	}

	if !s.sysbatch {
		// A failed system allocation is run again on its node, as its
		// restart policy gave up there; the failed one is done with.
		for _, a := range done.sorted() {
			if _, ok := eligible[a.NodeID]; ok && a.ClientStatus == structs.AllocClientStatusFailed && !a.ServerTerminalStatus() {
				s.plan.AppendStoppedAlloc(a, structs.AllocRescheduled, "", "")
			}
		}
	}
	byNode := map[string][]*structs.Allocation{}
	for _, a := range live.sorted() {
		byNode[a.NodeID] = append(byNode[a.NodeID], a)
	}
	// In node order, so that a rolling update takes the same batch
	// whatever the map's order, and the next evaluation the next one.
	nodeIDs := make([]string, 0, len(byNode))
	for nodeID := range byNode {
		nodeIDs = append(nodeIDs, nodeID)
	}
	sort.Strings(nodeIDs)
	for _, nodeID := range nodeIDs {
		on := byNode[nodeID]
		// One per node: extra copies (a race between two plans) go.
		for _, extra := range on[1:] {
			s.plan.AppendStoppedAlloc(extra, structs.AllocNotNeeded, "", "")
		}
		s.updateOnNode(tg, on[0], eligible[nodeID], tainted, &d)
	}
	for _, n := range nodes.nodes {
		if len(byNode[n.ID]) > 0 || s.ranToCompletion(done, n.ID) {
			continue
		}
		if _, replaced := d.previous[n.ID]; !replaced {
			d.previous[n.ID] = latestOn(set, n.ID)
		}
		d.place = append(d.place, n)
	}
	return d
}

// reconnect resolves an allocation whose client reported again after it
// was unknown. It returns the allocation as kept, or nil when stopped.
// There is no replacement to compare with: the allocation is its node's.
func (s *SystemScheduler) reconnect(a *structs.Allocation) *structs.Allocation {
	stopped := func(rule string) {
		s.reconnects = append(s.reconnects, reconnectOutcome{alloc: a, msg: "reconnected allocation stopped", rule: rule, outcome: outcomeReconnectedStopped})
	}
	switch {
	case a.ClientStatus == structs.AllocClientStatusFailed:
		s.plan.AppendStoppedAlloc(a, structs.AllocRescheduled, structs.AllocClientStatusFailed, "")
		stopped("failed while disconnected")
		if !s.sysbatch {
			return nil
		}
		// A failed sysbatch run is not run again either.
		kept := a.Copy()
		kept.DesiredStatus = structs.AllocDesiredStatusStop
		return kept
	case a.ClientTerminalStatus() && !s.sysbatch:
		s.plan.AppendStoppedAlloc(a, structs.AllocNotNeeded, a.ClientStatus, "")
		stopped("finished while disconnected")
		return nil
	case a.DesiredTransition.ShouldMigrate():
		s.plan.AppendStoppedAlloc(a, structs.AllocMigrating, "", "")
		stopped(structs.AllocMigrating)
		return nil
	case a.DesiredTransition.ShouldReschedule():
		s.plan.AppendStoppedAlloc(a, structs.AllocNotNeeded, "", "")
		stopped("rescheduled while disconnected")
		return nil
	case a.Job == nil || a.Job.Version < s.job.Version:
		s.plan.AppendStoppedAlloc(a, structs.AllocNotNeeded, "", "")
		stopped("older job version")
		return nil
	}
	upd := a.Copy()
	upd.AppendState(structs.AllocStateFieldClientStatus, a.ClientStatus, s.now)
	s.plan.AppendAlloc(upd)
	s.reconnects = append(s.reconnects, reconnectOutcome{alloc: upd, msg: "allocation resumed after its node reconnected",
		rule: "one per node", outcome: outcomeResumed})
	return upd
}

// updateOnNode brings a live allocation to the current job version: in
// place when only non-task fields changed, else by stopping it and placing
// a new one on the same node. A node that can take no placement (not
// ready, or disconnected) keeps the old version until it can; an unknown
// allocation still takes in-place updates, which the plan applier allows.
func (s *SystemScheduler) updateOnNode(tg *structs.TaskGroup, a *structs.Allocation, node *structs.Node, tainted map[string]*structs.Node, d *systemDiff) {
	if node == nil && !s.targeted(a.NodeID, tainted) {
		s.plan.AppendStoppedAlloc(a, structs.AllocNotNeeded, "", "")
		return
	}
	if a.Job != nil && a.Job.Version == s.job.Version && a.Job.JobModifyIndex == s.job.JobModifyIndex {
		return
	}
	if !tasksUpdated(a.Job, s.job, tg.Name) {
		if node == nil && a.ClientStatus != structs.AllocClientStatusUnknown {
			return
		}
		upd := s.pending(a)
		upd.Job = s.job
		upd.EvalID = s.eval.ID
		upd.AllocatedResources = s.ctx.allocatedResources(tg)
		keepPorts(upd, a)
		return
	}
	if node == nil {
		return
	}
	// A rolling update (the group's update block, see
	// docs/job-specification.md) replaces at most max_parallel allocations
	// per evaluation; the others keep the old version until the next
	// batch, stagger later (computeJobAllocs).
	if d.updatesLeft == 0 {
		d.limited = true
		return
	}
	if d.updatesLeft > 0 {
		d.updatesLeft--
	}
	s.plan.AppendStoppedAlloc(a, structs.AllocUpdating, "", "")
	d.previous[node.ID] = a
	d.place = append(d.place, node)
}

// pending returns the plan's copy of a when the plan already writes it
// (marked unknown, or reconnected), else a new copy added to the plan.
func (s *SystemScheduler) pending(a *structs.Allocation) *structs.Allocation {
	for _, p := range s.plan.NodeAllocation[a.NodeID] {
		if p.ID == a.ID {
			return p
		}
	}
	upd := a.Copy()
	s.plan.AppendAlloc(upd)
	return upd
}

// ranToCompletion reports whether a sysbatch job already ran, at its
// current version, to the end on the node.
func (s *SystemScheduler) ranToCompletion(done allocSet, nodeID string) bool {
	if !s.sysbatch {
		return false
	}
	for _, a := range done {
		if a.NodeID != nodeID || a.Job == nil || a.Job.JobModifyIndex != s.job.JobModifyIndex {
			continue
		}
		if a.ClientStatus == structs.AllocClientStatusComplete || a.ClientStatus == structs.AllocClientStatusFailed {
			return true
		}
	}
	return false
}

// latestOn returns the newest allocation of the set on the node, or nil.
func latestOn(set allocSet, nodeID string) *structs.Allocation {
	var out *structs.Allocation
	for _, a := range set {
		if a.NodeID == nodeID && (out == nil || a.CreateIndex > out.CreateIndex) {
			out = a
		}
	}
	return out
}

// targeted reports whether the node of an allocation is still one the job
// runs on: in its datacenters and pool. A node that is only not ready
// (initializing, ineligible, disconnected) still is: its allocation waits.
func (s *SystemScheduler) targeted(nodeID string, tainted map[string]*structs.Node) bool {
	node, ok := tainted[nodeID]
	if !ok {
		n, err := s.state.NodeByID(nil, nodeID)
		if err != nil || n == nil {
			return err != nil // on a read error, keep rather than stop
		}
		node = n
	}
	if node == nil {
		return false
	}
	return datacenterMatches(s.job.Datacenters, node.Datacenter) && nodePoolMatches(s.job.NodePool, node)
}
