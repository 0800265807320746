package nomad

import (
	"fmt"
	"maps"
	"slices"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// planApply is the leader's single plan applier. Plans are evaluated one at
// a time against the newest state, because schedulers work from snapshots
// that may be stale: a node may have gone away or filled up since. Only the
// parts of a plan that still hold are committed.
func (s *Server) planApply(stopCh <-chan struct{}) {
	for {
		pending, err := s.planQueue.Dequeue(stopCh, 0)
		if err != nil {
			return
		}
		select {
		case <-stopCh:
			pending.respond(nil, structs.ErrNotLeader)
			return
		default:
		}
		result, err := s.applyPlan(pending.plan)
		pending.respond(result, err)
	}
}

func (s *Server) applyPlan(plan *structs.Plan) (*structs.PlanResult, error) {
	snap, err := s.State().Snapshot()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	result, rejected, err := evaluatePlan(snap, plan)
	metrics.MeasureSince(keyPlanEvaluate, start)
	if err != nil {
		return nil, err
	}
	// The deployment rides with whatever part of the plan commits: its
	// counts are the state store's, so a partial commit cannot skew them.
	result.Deployment, result.DeploymentUpdates = plan.Deployment, plan.DeploymentUpdates
	for nodeID, reason := range rejected {
		s.logger.Debug("plan for node rejected", "eval_id", plan.EvalID, "node_id", nodeID, "reason", reason)
	}
	if result.IsNoOp() {
		if result.RefreshIndex != 0 {
			result.RefreshIndex, _ = snap.LatestIndex()
		}
		return result, nil
	}
	req := &structs.ApplyPlanResultsRequest{
		Job:       plan.Job,
		EvalID:    plan.EvalID,
		Evals:     plan.FollowUpEvals,
		UpdatedAt: s.clock.Now().UnixNano(),

		Deployment:        plan.Deployment,
		DeploymentUpdates: plan.DeploymentUpdates,
	}
	for _, allocs := range result.NodeUpdate {
		req.AllocsStopped = append(req.AllocsStopped, allocs...)
	}
	// Evictions are stops with DesiredStatus evict; each job that loses
	// allocations gets an evaluation, committed with them, to place them
	// elsewhere.
	for _, allocs := range result.NodePreemptions {
		req.AllocsStopped = append(req.AllocsStopped, allocs...)
	}
	evals, err := preemptionEvals(snap, result, s.clock.Now())
	if err != nil {
		return nil, err
	}
	req.Evals = append(req.Evals, evals...)
	for _, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			// The plan's job travels once in the entry; allocations of
			// that same job version do not each carry a copy.
			if a.Job != nil && plan.Job != nil && a.Job.Version == plan.Job.Version &&
				a.Job.JobModifyIndex == plan.Job.JobModifyIndex {
				a = a.CopySkipJob()
			}
			req.AllocsUpdated = append(req.AllocsUpdated, a)
		}
	}
	start = time.Now()
	_, index, err := s.raftApply(structs.ApplyPlanResultsRequestType, req)
	metrics.MeasureSince(keyPlanApply, start)
	if err != nil {
		return nil, err
	}
	result.AllocIndex = index
	if result.RefreshIndex != 0 {
		result.RefreshIndex = index
	}
	return result, nil
}

// evaluatePlan decides, node by node, which parts of the plan still hold.
// A rejected node drops only its own part; RefreshIndex tells the scheduler
// to refresh and retry. With AllAtOnce any rejection rejects everything.
func evaluatePlan(snap *state.StateSnapshot, plan *structs.Plan) (*structs.PlanResult, map[string]string, error) {
	result := &structs.PlanResult{
		NodeUpdate:      map[string][]*structs.Allocation{},
		NodeAllocation:  map[string][]*structs.Allocation{},
		NodePreemptions: map[string][]*structs.Allocation{},
	}
	nodes := map[string]bool{}
	for id := range plan.NodeUpdate {
		nodes[id] = true
	}
	for id := range plan.NodeAllocation {
		nodes[id] = true
	}
	rejected := map[string]string{}
	for nodeID := range nodes {
		ok, reason, err := evaluateNodePlan(snap, plan, nodeID)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			rejected[nodeID] = reason
			if plan.AllAtOnce {
				result.NodeUpdate = map[string][]*structs.Allocation{}
				result.NodeAllocation = map[string][]*structs.Allocation{}
				result.NodePreemptions = map[string][]*structs.Allocation{}
				break
			}
			continue
		}
		if u := plan.NodeUpdate[nodeID]; len(u) > 0 {
			result.NodeUpdate[nodeID] = u
		}
		if a := plan.NodeAllocation[nodeID]; len(a) > 0 {
			result.NodeAllocation[nodeID] = a
		}
		if err := commitPreemptions(snap, plan, result, nodeID); err != nil {
			return nil, nil, err
		}
	}
	if len(rejected) > 0 {
		result.RefreshIndex = 1 // replaced by the real index by the caller
	}
	return result, rejected, nil
}

// evaluateNodePlan reports whether the plan's part for one node still
// holds: the node may receive these writes and has room for them.
func evaluateNodePlan(snap *state.StateSnapshot, plan *structs.Plan, nodeID string) (bool, string, error) {
	placing := plan.NodeAllocation[nodeID]
	// Stopping allocations always fits, whatever became of the node.
	if len(placing) == 0 {
		return true, "", nil
	}
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	if node == nil {
		return false, "node does not exist", nil
	}
	onlyUpdates := func() (bool, error) { return onlyUpdatesAs(snap, nodeID, placing, "") }
	switch node.Status {
	case structs.NodeStatusReady:
		if node.Drain || node.SchedulingEligibility == structs.NodeSchedulingIneligible {
			if ok, err := onlyUpdates(); err != nil || !ok {
				return false, "node is not eligible", err
			}
		}
	case structs.NodeStatusInit:
		// A node coming back from a disconnect: its reconnected
		// allocations are updated in place, nothing new is placed.
		if ok, err := onlyUpdates(); err != nil || !ok {
			return false, "node is initializing", err
		}
	case structs.NodeStatusDisconnected:
		// Only the unknown marking (or in-place updates of unknown
		// allocations) may be written to a disconnected node, and only to
		// allocations already there: a new one written as unknown would
		// be a placement nobody can run (spec section 6).
		if ok, err := onlyUpdatesAs(snap, nodeID, placing, structs.AllocClientStatusUnknown); err != nil || !ok {
			return false, "node is disconnected and contains invalid updates", err
		}
		return true, "", nil
	case structs.NodeStatusDown:
		if ok, err := onlyUpdatesAs(snap, nodeID, placing, structs.AllocClientStatusLost); err != nil || !ok {
			return false, "node is down and contains invalid updates", err
		}
		return true, "", nil
	default:
		return false, fmt.Sprintf("node is %s", node.Status), nil
	}

	existing, err := snap.AllocsByNodeTerminal(nil, nodeID, false)
	if err != nil {
		return false, "", err
	}
	remove := map[string]bool{}
	for _, a := range plan.NodeUpdate[nodeID] {
		remove[a.ID] = true
	}
	// Evicted allocations free their resources; one that has stopped or
	// gone meanwhile holds none anyway.
	for _, a := range plan.NodePreemptions[nodeID] {
		remove[a.ID] = true
	}
	for _, a := range placing {
		remove[a.ID] = true
	}
	used := &structs.ComparableResources{}
	live := make([]*structs.Allocation, 0, len(existing)+len(placing))
	for _, a := range existing {
		if !remove[a.ID] {
			used.Add(a.ComparableResources())
			live = append(live, a)
		}
	}
	for _, a := range placing {
		if !a.TerminalStatus() {
			used.Add(a.ComparableResources())
			live = append(live, a)
		}
	}
	if fits, dim := node.Comparable().Superset(used); !fits {
		return false, "resources exhausted: " + dim, nil
	}
	if node.NodeMaxAllocs > 0 && len(live) > node.NodeMaxAllocs && placesNew(existing, placing) {
		// Only new placements are refused: a node over a cap lowered
		// since still takes in-place updates of what it runs.
		return false, structs.DimensionMaxAllocs, nil
	}
	// Two evaluations scheduled at once may pick the same host port.
	if port, collide := structs.PortCollision(live); collide {
		return false, fmt.Sprintf("network: port %d collision", port), nil
	}
	return true, "", nil
}

// placesNew reports whether placing holds an allocation not yet on the
// node.
func placesNew(existing, placing []*structs.Allocation) bool {
	ids := make(map[string]bool, len(existing))
	for _, a := range existing {
		ids[a.ID] = true
	}
	for _, a := range placing {
		if !ids[a.ID] && !a.TerminalStatus() {
			return true
		}
	}
	return false
}

// onlyUpdatesAs reports whether every write is an update of an allocation
// already on the node (allowed where new placements are not) and, when
// clientStatus is set, writes that client status.
func onlyUpdatesAs(snap *state.StateSnapshot, nodeID string, placing []*structs.Allocation, clientStatus string) (bool, error) {
	for _, a := range placing {
		if clientStatus != "" && a.ClientStatus != clientStatus {
			return false, nil
		}
		existing, err := snap.AllocByID(nil, a.ID)
		if err != nil {
			return false, err
		}
		if existing == nil || existing.NodeID != nodeID {
			return false, nil
		}
	}
	return true, nil
}

// commitPreemptions puts into result the node's evictions that still
// apply: those of allocations that exist and have not stopped meanwhile.
// An allocation that has stopped or gone frees what the placement needs
// anyway (the fit check counts only live allocations), so the placement
// stands; only the eviction of what is no longer there is dropped, and
// the placed allocations list only the evictions made for them.
func commitPreemptions(snap *state.StateSnapshot, plan *structs.Plan, result *structs.PlanResult, nodeID string) error {
	evictions := plan.NodePreemptions[nodeID]
	if len(evictions) == 0 {
		return nil
	}
	var kept []*structs.Allocation
	dropped := map[string]bool{}
	for _, e := range evictions {
		stored, err := snap.AllocByID(nil, e.ID)
		if err != nil {
			return err
		}
		if stored == nil || stored.TerminalStatus() {
			dropped[e.ID] = true
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) > 0 {
		result.NodePreemptions[nodeID] = kept
	}
	if len(dropped) == 0 {
		return nil
	}
	placed := make([]*structs.Allocation, len(result.NodeAllocation[nodeID]))
	for i, a := range result.NodeAllocation[nodeID] {
		placed[i] = a
		if !slices.ContainsFunc(a.PreemptedAllocations, func(id string) bool { return dropped[id] }) {
			continue
		}
		c := a.Copy()
		c.PreemptedAllocations = slices.DeleteFunc(slices.Clone(a.PreemptedAllocations), func(id string) bool { return dropped[id] })
		if len(c.PreemptedAllocations) == 0 {
			c.PreemptedAllocations = nil
		}
		placed[i] = c
	}
	result.NodeAllocation[nodeID] = placed
	return nil
}

// preemptionEvals returns one evaluation per job that result evicts
// allocations of, so that its scheduler replaces them where they fit.
func preemptionEvals(snap *state.StateSnapshot, result *structs.PlanResult, now time.Time) ([]*structs.Evaluation, error) {
	seen := map[structs.NamespacedID]bool{}
	var evals []*structs.Evaluation
	for _, nodeID := range slices.Sorted(maps.Keys(result.NodePreemptions)) {
		for _, e := range result.NodePreemptions[nodeID] {
			id := e.JobNamespacedID()
			if seen[id] {
				continue
			}
			seen[id] = true
			// The eviction is a copy without the job: the stored
			// allocation has it (commitPreemptions read it just now).
			stored, err := snap.AllocByID(nil, e.ID)
			if err != nil {
				return nil, fmt.Errorf("reading preempted allocation %s: %w", e.ID, err)
			}
			if stored == nil || stored.Job == nil {
				continue
			}
			evals = append(evals, stored.Job.NewEval(structs.EvalTriggerPreemption, now))
		}
	}
	return evals, nil
}
