package structs

import "fmt"

// Plan is the scheduler's proposed change to the cluster for one evaluation:
// allocations to stop or update per node (NodeUpdate) and allocations to
// place or update in place per node (NodeAllocation).
type Plan struct {
	EvalID    string
	EvalToken string
	Priority  int
	AllAtOnce bool
	Job       *Job

	// NodeUpdate holds stops, evictions and lost markings, keyed by node.
	NodeUpdate map[string][]*Allocation
	// NodeAllocation holds new placements and in-place updates (including
	// the unknown marking of disconnecting allocations), keyed by node.
	NodeAllocation map[string][]*Allocation
	// NodePreemptions holds the allocations of lower priority jobs to
	// evict so that this plan's placements fit, keyed by node. Each is
	// written with DesiredStatus evict and PreemptedByAllocation set.
	NodePreemptions map[string][]*Allocation

	Annotations *PlanAnnotations

	// FollowUpEvals are evaluations the scheduler created with this plan
	// (disconnect timeouts, delayed reschedules, blocked placements). They
	// commit in the plan's raft entry, so a leader crash can never leave
	// an allocation marked unknown without the evaluation that expires it.
	FollowUpEvals []*Evaluation

	// SnapshotIndex is the state index the scheduler worked from.
	SnapshotIndex uint64

	// Deployment is created or updated with the plan; DeploymentUpdates
	// change other deployments' status (a newer version cancels them).
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
}

// AppendStoppedAlloc adds a stop of alloc with the given descriptions. The
// stored copy drops the job (it is implied by the plan) to keep raft small.
func (p *Plan) AppendStoppedAlloc(alloc *Allocation, desiredDesc, clientStatus, followupEvalID string) {
	n := alloc.CopySkipJob()
	n.DesiredStatus = AllocDesiredStatusStop
	n.DesiredDescription = desiredDesc
	if clientStatus != "" {
		n.ClientStatus = clientStatus
		// The client cannot describe a status it did not report: the
		// description must say why the servers decided it, not repeat
		// the client's last words ("Tasks are running").
		n.ClientDescription = desiredDesc
	}
	if followupEvalID != "" {
		n.FollowupEvalID = followupEvalID
	}
	if p.NodeUpdate == nil {
		p.NodeUpdate = map[string][]*Allocation{}
	}
	p.NodeUpdate[alloc.NodeID] = append(p.NodeUpdate[alloc.NodeID], n)
}

// AppendAlloc adds a placement or an in-place update.
func (p *Plan) AppendAlloc(alloc *Allocation) {
	if p.NodeAllocation == nil {
		p.NodeAllocation = map[string][]*Allocation{}
	}
	p.NodeAllocation[alloc.NodeID] = append(p.NodeAllocation[alloc.NodeID], alloc)
}

// PreemptedDescription is the DesiredDescription of an allocation evicted
// to make room for allocation allocID (upstream's text).
func PreemptedDescription(allocID string) string {
	return fmt.Sprintf("Preempted by alloc ID %v", allocID)
}

// AppendPreemptedAlloc adds the eviction of alloc in favour of the
// allocation preemptingID. The copy keeps its resources (the plan applier
// subtracts them when it checks the node's fit) but not its job.
func (p *Plan) AppendPreemptedAlloc(alloc *Allocation, preemptingID string) {
	n := alloc.CopySkipJob()
	n.DesiredStatus = AllocDesiredStatusEvict
	n.DesiredDescription = PreemptedDescription(preemptingID)
	n.PreemptedByAllocation = preemptingID
	if p.NodePreemptions == nil {
		p.NodePreemptions = map[string][]*Allocation{}
	}
	p.NodePreemptions[alloc.NodeID] = append(p.NodePreemptions[alloc.NodeID], n)
}

// PopUpdate withdraws the most recent update of alloc, wherever it stands
// among its node's updates: a stop that was to make way for a replacement
// that found no node. The node's entry goes once empty, so the applier
// sees no work there.
func (p *Plan) PopUpdate(alloc *Allocation) {
	existing := p.NodeUpdate[alloc.NodeID]
	for i := len(existing) - 1; i >= 0; i-- {
		if existing[i].ID != alloc.ID {
			continue
		}
		existing = append(existing[:i:i], existing[i+1:]...)
		if len(existing) > 0 {
			p.NodeUpdate[alloc.NodeID] = existing
		} else {
			delete(p.NodeUpdate, alloc.NodeID)
		}
		return
	}
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 && len(p.NodePreemptions) == 0 &&
		p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// PlanAnnotations explain a plan to a dry-run user.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
	// PreemptedAllocs are the allocations the plan would evict.
	PreemptedAllocs []*AllocListStub
}

// DesiredUpdates counts what a plan does to one group.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
	Reconnect         uint64
	Disconnect        uint64
	RescheduleNow     uint64
	RescheduleLater   uint64
}

// PlanResult is the part of a plan the applier committed.
type PlanResult struct {
	NodeUpdate     map[string][]*Allocation
	NodeAllocation map[string][]*Allocation
	// NodePreemptions are the committed evictions: the plan's, less those
	// whose allocation had meanwhile stopped or gone.
	NodePreemptions map[string][]*Allocation

	// RefreshIndex is non-zero when part of the plan was rejected: the
	// scheduler must refresh its state to at least this index and retry.
	RefreshIndex uint64
	// AllocIndex is the raft index at which the plan was committed.
	AllocIndex uint64

	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
}

// IsNoOp reports whether nothing was committed.
func (r *PlanResult) IsNoOp() bool {
	return len(r.NodeUpdate) == 0 && len(r.NodeAllocation) == 0 && len(r.NodePreemptions) == 0 &&
		r.Deployment == nil && len(r.DeploymentUpdates) == 0
}

// FullCommit reports whether the whole plan was committed, with the
// expected and actual number of allocations touched.
func (r *PlanResult) FullCommit(plan *Plan) (bool, int, int) {
	expected, actual := 0, 0
	for node, allocs := range plan.NodeAllocation {
		expected += len(allocs)
		actual += len(r.NodeAllocation[node])
	}
	for node, allocs := range plan.NodeUpdate {
		expected += len(allocs)
		actual += len(r.NodeUpdate[node])
	}
	return expected == actual, expected, actual
}
